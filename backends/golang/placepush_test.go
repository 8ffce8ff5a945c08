package golang_test

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/backends/golang/internal/placepushfast"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// TestPlacePushAgainstInterpreter: a push and a parse on the event a
// place completed (PlacePush, backends/flow/testdata/placepush.nsc), in
// the generated Go against the interpreter, state carried across frames:
// events of 1 to 3,000 bytes in segments of up to 700, in order, shuffled
// and with duplicates. The generated code once ran the push on the
// caller's buffer while the packet was the event, and panicked.
func TestPlacePushAgainstInterpreter(t *testing.T) {
	src, err := os.ReadFile("../flow/testdata/placepush.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.ModelSource(t, string(src))
	g, _ := m.Graph("PlacePush")
	mach, _ := testutil.Interpreter(t, m, g, "")
	pl, err := placepushfast.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(26, 3))
	var frames [][]byte
	for id := range 40 {
		total := 1 + rnd.IntN(3000)
		var segs [][]byte
		for off := 0; off < total; {
			n := min(1+rnd.IntN(700), total-off)
			seg := make([]byte, 6+n)
			binary.BigEndian.PutUint16(seg, uint16(id))
			binary.BigEndian.PutUint16(seg[2:], uint16(total))
			binary.BigEndian.PutUint16(seg[4:], uint16(off))
			for i := range n {
				seg[6+i] = byte(id + off + i)
			}
			ip := testutil.IPv4(layers.IPProtocolUDP)
			u := &layers.UDP{SrcPort: 9, DstPort: 9}
			u.SetNetworkLayerForChecksum(ip)
			segs = append(segs, testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload(seg)))
			off += n
		}
		if id%2 == 1 {
			rnd.Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
		}
		if id%3 == 0 {
			segs = append(segs, segs[rnd.IntN(len(segs))])
		}
		frames = append(frames, segs...)
	}
	where := difftest.Compare(t, pl, mach, frames)
	t.Logf("%d segments: %v", len(frames), where)
	if where["sink Out"] != 40 {
		t.Errorf("%d events out, want 40", where["sink Out"])
	}
}
