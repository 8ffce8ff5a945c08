package wireshark_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/backends/wireshark"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// A header the model parses after UDP without testing a port is taken by
// a heuristic dissector exactly when the model's parser keeps it: it fits
// and its magic is right.
func TestHeuristic(t *testing.T) {
	src, err := os.ReadFile("testdata/heur.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.ModelSource(t, string(src))
	r := rand.New(rand.NewPCG(5, 6))
	var frames [][]byte
	for i := range 120 {
		payload := []byte{0xbe, 0xef, byte(r.Uint32()), byte(r.Uint32()), 'n', 's', 'c'}
		if i%3 == 1 {
			payload[1] = 0xee
		}
		if i%4 == 3 {
			payload = payload[:r.IntN(4)]
		}
		frames = append(frames, udpFrame(t, 61000, layers.UDPPort(61001+r.IntN(8)), payload))
	}
	fields := []string{"tag.magic", "tag.kind", "tag.len", "tag.nsc.malformed"}
	rows := dissect(t, m, wireshark.Options{}, frames, fields)
	tags := 0
	for i, row := range rows {
		want := map[string]string{}
		if _, p, ok := udpPayload(frames[i]); ok && len(p) >= 4 && binary.BigEndian.Uint16(p) == 0xbeef {
			want["tag.magic"], want["tag.kind"], want["tag.len"] = "48879", fmt.Sprint(p[2]>>4), fmt.Sprint(int(p[2]&0xf)<<8|int(p[3]))
			tags++
		}
		for _, f := range fields {
			if row[f] != want[f] {
				t.Errorf("frame %d: %s = %q, want %q", i+1, f, row[f], want[f])
			}
		}
	}
	if tags < 40 || tags == len(rows) {
		t.Errorf("%d of %d frames carry a tag: the frames no longer tell the heuristic anything", tags, len(rows))
	}
}
