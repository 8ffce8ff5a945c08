package wireshark_test

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/backends/wireshark"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
)

// udpFrame is an Ethernet/IPv4/UDP frame carrying payload.
func udpFrame(t *testing.T, sport, dport layers.UDPPort, payload []byte) []byte {
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP,
		SrcIP: net.IPv4(10, 0, 0, 1).To4(), DstIP: net.IPv4(10, 0, 0, 2).To4()}
	u := &layers.UDP{SrcPort: sport, DstPort: dport}
	u.SetNetworkLayerForChecksum(ip)
	return testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload(payload))
}

// shapesFrames are UDP datagrams to port 5000 carrying random seg and odd
// headers, some of another seg version, with a random count of option
// bytes that may or may not be there, and frames cut at random lengths.
func shapesFrames(t *testing.T) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	var frames [][]byte
	for i := range 300 {
		payload := make([]byte, 8+28+r.IntN(48))
		for j := range payload {
			payload[j] = byte(r.Uint32())
		}
		payload[8+27] = byte(r.IntN(24)) // odd.count: 0..46 option bytes, there or not
		if i%5 != 0 {
			payload[0] = 0x10 | payload[0]&0x0f // version 1: odd follows
		}
		f := udpFrame(t, 40000, 5000, payload)
		if i%3 == 0 { // cut in the UDP payload: the lengths say more (no Ethernet padding to take for headers)
			f = f[:42+r.IntN(len(payload)+1)]
		}
		frames = append(frames, f)
	}
	return frames
}

// The dissector of shapes.nsc shows every field as the model's own
// decoding (the packet package's parse, which the interpreter runs)
// reads it: bit fields, flags, a 60-bit field, a 128-bit one, options of a
// computed length; and marks malformed the headers that parse finds
// truncated.
func TestShapes(t *testing.T) {
	src, err := os.ReadFile("testdata/shapes.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.ModelSource(t, string(src))
	s := m.Schema
	var gen []*packet.HeaderSpec
	var fields []string
	for _, name := range []string{"seg", "odd"} {
		h, _ := s.Header(name)
		gen = append(gen, h)
		for _, f := range h.Fields {
			fields = append(fields, name+"."+f.Name)
		}
		fields = append(fields, name+".nsc.malformed")
	}
	frames := shapesFrames(t)
	rows := dissect(t, m, wireshark.Options{}, frames, fields)
	eth, _ := s.Header("ethernet")
	p := packet.NewPacket(s)
	compared, malformed := 0, 0
	for i, row := range rows {
		p.Reset(frames[i])
		p.ParseFrame(eth.ID)
		want := shapesWant(p, gen)
		for _, f := range fields {
			if row[f] != want[f] {
				t.Errorf("frame %d: %s = %q, want %q", i+1, f, row[f], want[f])
			}
			if want[f] != "" {
				compared++
			}
		}
		if want["seg.nsc.malformed"]+want["odd.nsc.malformed"] != "" {
			malformed++
		}
	}
	t.Logf("%d frames, %d values compared, %d malformed", len(rows), compared, malformed)
	if compared < 2000 || malformed < 30 {
		t.Errorf("compared %d values, %d malformed: the frames no longer exercise the dissector", compared, malformed)
	}
}

// shapesWant is what the dissector must show of a parsed packet: the
// fields of the valid headers, and a malformed mark on the header the
// parse graph leads to but that does not fit.
func shapesWant(p *packet.Packet, hs []*packet.HeaderSpec) map[string]string {
	udp, _ := p.Schema.Header("udp")
	want := map[string]string{}
	if b, ok := p.Bytes(udp.ID); !ok || len(b) < 4 || b[2] != 0x13 || b[3] != 0x88 || p.Cursor >= len(p.Data) && !p.Valid(hs[0].ID) {
		return want // not to port 5000, or an empty datagram (UDP calls no dissector)
	}
	for i, h := range hs {
		if !p.Valid(h.ID) {
			if i == 0 || p.Valid(hs[0].ID) && want["seg.version"] == "1" {
				want[h.Name+".nsc.malformed"] = "1"
			}
			return want
		}
		for j, f := range h.Fields {
			ref := packet.FieldRef{Header: h.ID, Field: j}
			switch {
			case f.Variable() || f.Width > 64:
				b, _ := p.Bytes(h.ID)
				lo, hi := f.Offset/8, len(b)
				if !f.Variable() {
					hi = lo + f.Width/8
				}
				if lo < hi {
					want[h.Name+"."+f.Name] = hex.EncodeToString(b[lo:hi])
				}
			default:
				v, _ := p.Get(ref)
				want[h.Name+"."+f.Name] = fmt.Sprint(v.Lo)
			}
		}
	}
	return want
}

// A model of 100 headers loads in tshark (Lua allows 200 locals in a chunk)
// and dissects a chain of them.
func TestManyHeaders(t *testing.T) {
	var src strings.Builder
	src.WriteString("include \"lib/inet.nsc\"\nnext udp.dport { 5000 -> zq0 }\n")
	for i := range 100 {
		fmt.Fprintf(&src, "header zq%d { a: 4  b: 4  c: 8 }\nnext zq%d.a { 1 -> zq%d }\n", i, i, (i+1)%100)
	}
	m := testutil.ModelSource(t, src.String())
	frame := udpFrame(t, 40000, 5000, []byte{0x10, 7, 0x10, 8, 0x20, 9})
	rows := dissect(t, m, wireshark.Options{}, [][]byte{frame}, []string{"zq0.c", "zq1.c", "zq2.c", "zq3.c"})
	if got := rows[0]; got["zq0.c"] != "7" || got["zq1.c"] != "8" || got["zq2.c"] != "9" || got["zq3.c"] != "" {
		t.Errorf("the chain zq0 zq1 zq2 shows %v", got)
	}
}
