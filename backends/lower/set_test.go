package lower_test

import (
	"encoding/binary"
	"testing"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
)

// A checksum's window around a field, as lower classifies it, is there
// exactly when the interpreter patches that checksum for a change of the
// field, and covers the field's bytes in 16-bit words aligned to the
// summed region: the checksummed header's start, or the IP header's for
// a pseudo-header field. app lies behind udp at an even distance, or at
// an odd one behind a byte of pad: the parity picks the variant.
func TestFieldWindowAgainstInterpreter(t *testing.T) {
	m := testutil.ModelSource(t, `include "lib/inet.nsc"
header pad { x: 8 }
header app { tag: 8  val: 16  id: 24  word: 32 }
next udp.dport { 4000 -> app, 4001 -> pad }
next pad.x { 1 -> app }
lpg L {
  node RxQueue { op input parse ethernet  port out -> S }
  node S { op set { app.val = 1 } update ipv4, udp  port out -> TxQueue }
  node TxQueue { op emit }
}`)
	g, _ := m.Graph("L")
	s := g.Schema
	n := g.Node("S")
	v := flow.AnalyzeValid(g, g.Node("RxQueue"), 1)
	ref := func(h, f string) packet.FieldRef {
		hs, _ := s.Header(h)
		i, _ := hs.Field(f)
		return packet.FieldRef{Header: hs.ID, Field: i}
	}
	hdr := func(name string) int { h, _ := s.Header(name); return h.ID }
	eth, ipv4, udp, app := hdr("ethernet"), hdr("ipv4"), hdr("udp"), hdr("app")
	fields := []packet.FieldRef{ref("ethernet", "type"), ref("ipv4", "ttl"), ref("ipv4", "src"), ref("ipv4", "dst"),
		ref("udp", "dport"), ref("udp", "length"), ref("app", "tag"), ref("app", "val"), ref("app", "id"), ref("app", "word")}
	for _, dport := range []uint16{4000, 4001} {
		p := packet.NewPacket(s)
		p.Reset(frame(dport))
		if !p.ParseFrame(eth) || !p.Valid(app) {
			t.Fatalf("dport %d: frame does not parse to app", dport)
		}
		p.ComputeChecksum(ipv4)
		p.ComputeChecksum(udp)
		for _, u := range []int{ipv4, udp} {
			csum := packet.FieldRef{Header: u, Field: s.Headers[u].Checksum}
			for _, f := range fields {
				w, ok := lower.FieldWindow(s, v, n, u, f)
				q := packet.NewPacket(s)
				q.Clone(p)
				old, _ := q.Get(csum)
				x, _ := q.Get(f)
				if !q.SetUpdating(f, packet.Value{Lo: x.Lo ^ 1}, []int{u}) {
					t.Fatalf("set %s", s.FieldName(f))
				}
				now, _ := q.Get(csum)
				name := s.Headers[u].Name + " for " + s.FieldName(f)
				if patched := old != now; ok != patched {
					t.Errorf("dport %d: %s: window %v, the interpreter patches %v", dport, name, ok, patched)
					continue
				}
				if !ok {
					continue
				}
				// The region's start: the pseudo-header's fields lie at
				// the IP header's word positions.
				start := p.Hdr[u].Off
				if w.Kind == lower.WindowStatic {
					start = p.Hdr[f.Header].Off
				}
				lo, hi, fits := w.Lo, w.Hi, w.Fits
				if (p.Hdr[f.Header].Off-start)%2 != 0 {
					lo, hi, fits = w.OddLo, w.OddHi, w.OddFits
				}
				fs := s.FieldSpec(f)
				at := p.Hdr[f.Header].Off
				switch {
				case !fits:
					t.Errorf("dport %d: %s: the window that applies is too wide", dport, name)
				case (at+lo-start)%2 != 0, (hi-lo)%2 != 0:
					t.Errorf("dport %d: %s: window [%d, %d) is not in words of the region from %d", dport, name, at+lo, at+hi, start)
				case lo > fs.Offset/8, hi < (fs.Offset+fs.Width+7)/8, hi-lo > (fs.Width+7)/8+2:
					t.Errorf("dport %d: %s: window [%d, %d) of the header does not fit the field's bytes", dport, name, lo, hi)
				}
			}
		}
	}
}

// frame is an Ethernet/IPv4/UDP frame to port dport carrying app, behind
// a byte of pad for port 4001.
func frame(dport uint16) []byte {
	b := make([]byte, 14, 64)
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := []byte{0x45, 0, 0, 0, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	u := []byte{0x30, 0x39, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(u[2:], dport)
	body := []byte{}
	if dport == 4001 {
		body = append(body, 1)
	}
	body = append(body, 0xa5, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xde, 0xad, 0xbe, 0xef, 7)
	binary.BigEndian.PutUint16(u[4:], uint16(8+len(body)))
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+len(body)))
	return append(append(append(b, ip...), u...), body...)
}
