package lower_test

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
)

// regionChecksum computes checksum x of p from its lowered region alone,
// as a printer reads it: false where the region does not hold.
func regionChecksum(x *lower.Checksum, p *packet.Packet) (uint16, bool) {
	if !p.Valid(x.H) {
		return 0, false
	}
	start, n := p.Hdr[x.H].Off, p.Hdr[x.H].Len
	end, pseudo := start+n, uint32(0)
	if !x.Own {
		var in *lower.IPHeader
		end = len(p.Data)
		for i, ip := range x.IPs {
			if p.Valid(ip.H) && p.Hdr[ip.H].Off < start {
				l, _ := p.Get(packet.FieldRef{Header: ip.H, Field: ip.Length})
				end = p.Hdr[ip.H].Off + int(l.Lo)
				if ip.V6 {
					end += p.Hdr[ip.H].Len
				}
				in = &x.IPs[i]
				break
			}
		}
		if end > len(p.Data) || end < start+n {
			return 0, false
		}
		if x.Pseudo && in != nil {
			b := p.Data[p.Hdr[in.H].Off:]
			for i, k := range in.Words {
				pseudo += uint32(b[k]) << 8
				if !in.Lone[i] {
					pseudo += uint32(b[k+1])
				}
			}
			proto, _ := p.Get(packet.FieldRef{Header: in.H, Field: in.Proto})
			cov := uint32(end - start)
			pseudo += uint32(proto.Lo) + cov&0xffff
			if in.V6 {
				pseudo += cov >> 16
			}
		}
	}
	if end > len(p.Data) {
		return 0, false
	}
	b := slices.Clone(p.Data[start:end])
	at := x.Field.Offset / 8
	b[at], b[at+1] = 0, 0
	c := packet.Fold(packet.Sum(b, pseudo))
	if c == 0 && x.Spec.ChecksumOptional {
		c = 0xffff
	}
	return c, true
}

// A lowered checksum's region — its own header, or to the end of the IP
// payload in front with that IP header's pseudo-header — gives the
// checksum the interpreter computes, where the interpreter computes one,
// over IPv4 and IPv6 frames whose lengths are flipped at random.
func TestChecksumAgainstInterpreter(t *testing.T) {
	m := testutil.ModelSource(t, `include "lib/inet.nsc"
lpg L {
  node RxQueue { op input parse ethernet  port out -> U }
  node U { op checksum compute udp  port out -> I }
  node I { op checksum compute ipv4  port out -> TxQueue }
  node TxQueue { op emit }
}`)
	g, _ := m.Graph("L")
	s := g.Schema
	p, err := lower.Lower(g, "test")
	if err != nil {
		t.Fatal(err)
	}
	w := lower.NewWalker(p, nil, "test")
	eth, _ := s.Header("ethernet")
	udp, ipv4 := w.LowerChecksum(g.Node("U")), w.LowerChecksum(g.Node("I"))
	if len(udp.IPs) != 2 || !udp.Pseudo || udp.Own || !ipv4.Own {
		t.Fatalf("udp %+v, ipv4 %+v", udp, ipv4)
	}
	v4 := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00,
		0x45, 0, 0, 33, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
		0x30, 0x39, 0x13, 0x88, 0, 13, 0, 0, 1, 2, 3, 4, 5}
	v6 := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x86, 0xdd,
		0x60, 0, 0, 0, 0, 13, 17, 64}
	for i := range 32 {
		v6 = append(v6, byte(i*7))
	}
	v6 = append(v6, 0x30, 0x39, 0x13, 0x88, 0, 13, 0, 0, 1, 2, 3, 4, 5)
	rng := rand.New(rand.NewPCG(3, 4))
	q := packet.NewPacket(s)
	for i := range 4000 {
		f := slices.Clone(v4)
		lens := []int{16, 38}
		if i%2 == 1 {
			f, lens = slices.Clone(v6), []int{18, 58}
		}
		for _, at := range lens {
			if rng.IntN(3) == 0 {
				binary.BigEndian.PutUint16(f[at:], binary.BigEndian.Uint16(f[at:])+uint16(rng.IntN(9))-4)
			}
		}
		f = append(f, make([]byte, rng.IntN(3))...)
		for _, x := range []*lower.Checksum{udp, ipv4} {
			q.Reset(f)
			if !q.ParseFrame(eth.ID) {
				continue
			}
			want, ok := regionChecksum(x, q)
			if q.ComputeChecksum(x.H) != ok {
				t.Fatalf("frame %x: %s: region holds %v, the interpreter's %v", f, x.Spec.Name, ok, !ok)
			}
			if got, _ := q.Get(packet.FieldRef{Header: x.H, Field: x.Spec.Checksum}); ok && uint16(got.Lo) != want {
				t.Fatalf("frame %x: %s: checksum %#x, the interpreter's %#x", f, x.Spec.Name, want, got.Lo)
			}
		}
	}
}
