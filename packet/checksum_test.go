package packet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// refSum is the textbook RFC 1071 loop: 16-bit words into a 32-bit
// accumulator, carries folded at the end.
func refSum(b []byte, initial uint32) uint32 {
	s := uint64(initial)
	for i := 0; i < len(b); i += 2 {
		w := uint64(b[i]) << 8
		if i+1 < len(b) {
			w |= uint64(b[i+1])
		}
		s += w
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint32(s)
}

func TestSumMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 1500; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		// All-ones data drives the end-around carry hardest.
		if n%7 == 0 {
			for i := range b {
				b[i] = 0xff
			}
		}
		initial := r.Uint32()
		if got, want := Sum(b, initial), refSum(b, initial); got != want {
			t.Fatalf("Sum(len %d, %#x) = %#x; want %#x", n, initial, got, want)
		}
	}
}

func TestFold(t *testing.T) {
	tests := []struct {
		sum  uint32
		want uint16
	}{
		{0, 0xffff},
		{0xffff, 0},
		{0x1_0000, 0xfffe},
		{0x1234_5678, ^uint16(0x1234 + 0x5678)},
		{0xffff_ffff, 0},
	}
	for _, tc := range tests {
		if got := Fold(tc.sum); got != tc.want {
			t.Errorf("Fold(%#x) = %#x; want %#x", tc.sum, got, tc.want)
		}
	}
}

// genPacket is a packet gopacket built, with its checksums, for checking ours.
type genPacket struct {
	name  string
	b     []byte // from the IP header on
	v6    bool
	proto uint8
	l3    int // IP header length
	csum  int // checksum offset within L4
}

func (p *genPacket) l4() []byte { return p.b[p.l3:] }

func (p *genPacket) pseudo() uint32 {
	l4 := p.l4()
	if p.v6 {
		return PseudoHeaderSumIPv6(p.b[8:24], p.b[24:40], p.proto, uint32(len(l4)))
	}
	return PseudoHeaderSumIPv4(p.b[12:16], p.b[16:20], p.proto, uint16(len(l4)))
}

// genPackets serializes IPv4 and IPv6 with UDP and TCP around random
// addresses, ports and payloads of odd and even lengths.
func genPackets(t testing.TB, r *rand.Rand, n int) []genPacket {
	t.Helper()
	var out []genPacket
	randBytes := func(k int) []byte {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	for i := 0; i < n; i++ {
		v6, tcp := i&1 == 1, i&2 == 2
		payload := gopacket.Payload(randBytes(r.IntN(200)))
		var ip gopacket.SerializableLayer
		var netLayer gopacket.NetworkLayer
		proto := layers.IPProtocolUDP
		if tcp {
			proto = layers.IPProtocolTCP
		}
		if v6 {
			l := &layers.IPv6{Version: 6, NextHeader: proto, HopLimit: 64,
				SrcIP: net.IP(randBytes(16)), DstIP: net.IP(randBytes(16))}
			ip, netLayer = l, l
		} else {
			l := &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, Id: uint16(r.Uint32()),
				SrcIP: net.IP(randBytes(4)), DstIP: net.IP(randBytes(4))}
			// Options make ihl > 5 now and then.
			if r.IntN(3) == 0 {
				l.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
			}
			ip, netLayer = l, l
		}
		var l4 gopacket.SerializableLayer
		sport, dport := layers.UDPPort(r.Uint32()), layers.UDPPort(r.Uint32())
		if tcp {
			l := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport),
				Seq: r.Uint32(), Ack: r.Uint32(), ACK: true, Window: uint16(r.Uint32())}
			if err := l.SetNetworkLayerForChecksum(netLayer); err != nil {
				t.Fatal(err)
			}
			l4 = l
		} else {
			l := &layers.UDP{SrcPort: sport, DstPort: dport}
			if err := l.SetNetworkLayerForChecksum(netLayer); err != nil {
				t.Fatal(err)
			}
			l4 = l
		}
		buf := gopacket.NewSerializeBuffer()
		opts := gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true}
		if err := gopacket.SerializeLayers(buf, opts, ip, l4, payload); err != nil {
			t.Fatal(err)
		}
		p := genPacket{b: bytes.Clone(buf.Bytes()), v6: v6, proto: uint8(proto), csum: 6}
		if tcp {
			p.csum = 16
		}
		if v6 {
			p.l3 = 40
		} else {
			p.l3 = int(p.b[0]&0xf) * 4
		}
		p.name = fmt.Sprintf("v6=%v tcp=%v l3=%d l4=%d", v6, tcp, p.l3, len(p.l4()))
		out = append(out, p)
	}
	return out
}

func TestChecksumsMatchGopacket(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, p := range genPackets(t, r, 400) {
		if !p.v6 {
			hdr := p.b[:p.l3]
			want := binary.BigEndian.Uint16(hdr[10:])
			if got := IPv4HeaderChecksum(hdr); got != want {
				t.Errorf("%s: IPv4HeaderChecksum = %#x; gopacket %#x", p.name, got, want)
			}
			if !VerifyIPv4Header(hdr) {
				t.Errorf("%s: VerifyIPv4Header = false", p.name)
			}
		}
		l4 := p.l4()
		want := binary.BigEndian.Uint16(l4[p.csum:])
		got := TransportChecksum(p.pseudo(), l4, p.csum)
		// TCP may send a computed zero as 0 (gopacket does) or as 0xffff (we
		// do); they are the same one's-complement number.
		if got != want && !(p.proto == 6 && want == 0 && got == 0xffff) {
			t.Errorf("%s: TransportChecksum = %#x; gopacket %#x", p.name, got, want)
		}
		if !VerifyTransport(p.pseudo(), l4) {
			t.Errorf("%s: VerifyTransport = false", p.name)
		}
		// A flipped bit anywhere must fail the check.
		bit := r.IntN(len(l4) * 8)
		l4[bit/8] ^= 0x80 >> (bit % 8)
		if VerifyTransport(p.pseudo(), l4) {
			t.Errorf("%s: VerifyTransport passes with bit %d flipped", p.name, bit)
		}
	}
}

func TestVerifyIPv4HeaderMalformed(t *testing.T) {
	good := genPackets(t, rand.New(rand.NewPCG(7, 8)), 1)[0].b[:20]
	tests := []struct {
		name string
		hdr  []byte
	}{
		{"nil", nil},
		{"short", good[:19]},
		{"ihl 4", append([]byte{0x44}, good[1:]...)},
		{"ihl past end", append([]byte{0x46}, good[1:]...)},
		{"bad checksum", append(bytes.Clone(good[:10]), good[10]^1, good[11])},
	}
	for _, tc := range tests {
		if VerifyIPv4Header(tc.hdr) {
			t.Errorf("%s: VerifyIPv4Header = true", tc.name)
		}
		IPv4HeaderChecksum(tc.hdr) // must not panic
	}
}

func TestTransportChecksumOddOffset(t *testing.T) {
	// The checksum field need not be 16-bit aligned; compare with zeroing
	// the field in a copy.
	r := rand.New(rand.NewPCG(9, 10))
	for n := 0; n < 64; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		for off := -1; off <= n; off++ {
			z := bytes.Clone(b)
			if off >= 0 && off+2 <= n {
				z[off], z[off+1] = 0, 0
			}
			want := Fold(refSum(z, 0x1234))
			if want == 0 {
				want = 0xffff
			}
			if got := TransportChecksum(0x1234, b, off); got != want {
				t.Fatalf("len %d off %d: TransportChecksum = %#x; want %#x", n, off, got, want)
			}
		}
	}
}

// TestUDPZeroChecksum builds a datagram whose checksum computes to zero: it
// must go out as 0xffff (RFC 768), as gopacket does, and verify.
func TestUDPZeroChecksum(t *testing.T) {
	src, dst := net.IP{10, 0, 0, 1}, net.IP{10, 0, 0, 2}
	payload := []byte{1, 2, 3, 4, 0, 0}
	build := func() []byte {
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src, DstIP: dst}
		udp := &layers.UDP{SrcPort: 1000, DstPort: 2000}
		if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		buf := gopacket.NewSerializeBuffer()
		opts := gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true}
		if err := gopacket.SerializeLayers(buf, opts, ip, udp, gopacket.Payload(payload)); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()[20:]
	}
	// Choose the last payload word so the whole sum is 0xffff.
	l4 := build()
	pseudo := PseudoHeaderSumIPv4(src, dst, 17, uint16(len(l4)))
	s := refSum(l4[:6], refSum(l4[8:], pseudo))
	binary.BigEndian.PutUint16(payload[4:], uint16(0xffff-s))
	l4 = build()
	if got := Fold(refSum(l4[:6], refSum(l4[8:], pseudo))); got != 0 {
		t.Fatalf("setup: computed checksum %#x, want 0", got)
	}
	if got := TransportChecksum(pseudo, l4, 6); got != 0xffff {
		t.Errorf("TransportChecksum = %#x; want 0xffff", got)
	}
	if gp := binary.BigEndian.Uint16(l4[6:]); gp != 0xffff {
		t.Errorf("gopacket wrote %#x; want 0xffff", gp)
	}
	if !VerifyTransport(pseudo, l4) {
		t.Error("VerifyTransport = false for 0xffff")
	}
	// UpdateUDPChecksum keeps "no checksum" and never yields 0.
	if got := UpdateUDPChecksum(0, []byte{0, 1}, []byte{0, 2}); got != 0 {
		t.Errorf("UpdateUDPChecksum(0, ...) = %#x; want 0", got)
	}
	// From 0xffff, replacing word 0xffff by 0 leaves the sum's class alone:
	// the result is a computed zero, sent as 0xffff.
	if got := UpdateUDPChecksum(0xffff, []byte{0xff, 0xff}, []byte{0, 0}); got != 0xffff {
		t.Errorf("UpdateUDPChecksum to a zero = %#x; want 0xffff", got)
	}
}

// wordWindow returns the 16-bit-aligned byte range around [off, off+n).
func wordWindow(off, n int) (lo, hi int) { return off &^ 1, (off + n + 1) &^ 1 }

// TestUpdateChecksumMatchesFull rewrites fields of random packets and checks
// the RFC 1624 update against a full recomputation.
func TestUpdateChecksumMatchesFull(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, p := range genPackets(t, r, 800) {
		l4 := p.l4()
		// full is what a sender computing from scratch writes.
		full := func() uint16 {
			c := Fold(sumSkip(l4, p.csum, p.pseudo()))
			if p.proto == 17 && c == 0 {
				c = 0xffff
			}
			return c
		}
		update := func(old uint16, ob, nb []byte) uint16 {
			if p.proto == 17 {
				return UpdateUDPChecksum(old, ob, nb)
			}
			return UpdateChecksum(old, ob, nb)
		}
		rewrite := func(what string, off, n int) { // off within p.b
			lo, hi := wordWindow(off, n)
			old := bytes.Clone(p.b[lo:hi])
			for i := off; i < off+n; i++ {
				p.b[i] = byte(r.Uint32())
			}
			if lo >= p.l3 {
				// Inside L4: the window must be aligned to L4, and l3 is even.
				c := binary.BigEndian.Uint16(l4[p.csum:])
				if off-p.l3 <= p.csum+1 && off-p.l3+n > p.csum {
					t.Fatalf("%s: test rewrote the checksum field", p.name)
				}
				binary.BigEndian.PutUint16(l4[p.csum:], update(c, old, p.b[lo:hi]))
			} else {
				// An address: the IPv4 header checksum and the L4 checksum
				// (through the pseudo-header) both cover it.
				if !p.v6 {
					c := binary.BigEndian.Uint16(p.b[10:])
					binary.BigEndian.PutUint16(p.b[10:], UpdateChecksum(c, old, p.b[lo:hi]))
					if want := IPv4HeaderChecksum(p.b[:p.l3]); binary.BigEndian.Uint16(p.b[10:]) != want {
						t.Errorf("%s: %s: IPv4 checksum %#x; full %#x", p.name, what, binary.BigEndian.Uint16(p.b[10:]), want)
					}
				}
				c := binary.BigEndian.Uint16(l4[p.csum:])
				binary.BigEndian.PutUint16(l4[p.csum:], update(c, old, p.b[lo:hi]))
			}
			if got, want := binary.BigEndian.Uint16(l4[p.csum:]), full(); got != want {
				t.Errorf("%s: %s: updated L4 checksum %#x; full %#x", p.name, what, got, want)
			}
			if !VerifyTransport(p.pseudo(), l4) {
				t.Errorf("%s: %s: VerifyTransport = false after update", p.name, what)
			}
		}
		if p.v6 {
			rewrite("ip dst", 24, 16)
		} else {
			rewrite("ip dst", 16, 4)
		}
		rewrite("dst port", p.l3+2, 2)
		// A 64-bit field at an odd byte offset in the payload, so its window
		// straddles words on both sides.
		hdrLen := 8
		if p.proto == 6 {
			hdrLen = int(l4[12]>>4) * 4
		}
		if len(l4)-hdrLen >= 11 {
			off := hdrLen + 1 + 2*r.IntN((len(l4)-hdrLen-9)/2)
			rewrite("odd 64-bit field", p.l3+off, 8)
		}
	}
}

func TestChecksumNoAlloc(t *testing.T) {
	p := genPackets(t, rand.New(rand.NewPCG(13, 14)), 4)
	var sink uint16
	allocs := testing.AllocsPerRun(100, func() {
		for i := range p {
			l4 := p[i].l4()
			sink ^= TransportChecksum(p[i].pseudo(), l4, p[i].csum)
			if VerifyTransport(p[i].pseudo(), l4) {
				sink++
			}
			sink ^= UpdateChecksum(sink, l4[:4], l4[4:8])
			sink ^= UpdateUDPChecksum(sink, l4[:4], l4[4:8])
		}
		sink ^= IPv4HeaderChecksum(p[0].b[:20])
		if VerifyIPv4Header(p[0].b) {
			sink++
		}
	})
	if allocs != 0 {
		t.Errorf("checksums allocate %v per run", allocs)
	}
}

func BenchmarkSum(b *testing.B) {
	for _, n := range []int{20, 64, 576, 1500, 9000} {
		buf := make([]byte, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			var sink uint32
			for b.Loop() {
				sink += Sum(buf, sink)
			}
		})
	}
}

func BenchmarkUpdateChecksum(b *testing.B) {
	b.Run("ipv4dst", func(b *testing.B) {
		b.ReportAllocs()
		old, nw := []byte{10, 0, 0, 1}, []byte{10, 0, 0, 2}
		c := uint16(0x1234)
		for b.Loop() {
			c = UpdateChecksum(c, old, nw)
		}
	})
	b.Run("ipv6dst", func(b *testing.B) {
		b.ReportAllocs()
		old, nw := make([]byte, 16), make([]byte, 16)
		nw[15] = 1
		c := uint16(0x1234)
		for b.Loop() {
			c = UpdateChecksum(c, old, nw)
		}
	})
}

// specPatch is the EJFAT lb-2025 spec's checksum arithmetic word by word
// (ejfat-lb-pipeline-2025.md, "Ones'-complement helpers"): x ⊕ y folds
// the carry of a 16-bit sum back in; the delta takes ⊕ ~w for every old
// word and ⊕ w for every new one; apply(h, d) = ~(~h ⊕ d).
func specPatch(h uint16, windows ...[2][]byte) uint16 {
	add := func(x, y uint16) uint16 {
		s := uint32(x) + uint32(y)
		return uint16(s&0xffff + s>>16)
	}
	var d uint16
	for _, w := range windows {
		for i := 0; i < len(w[0]); i += 2 {
			d = add(d, ^binary.BigEndian.Uint16(w[0][i:]))
		}
		for i := 0; i < len(w[1]); i += 2 {
			d = add(d, binary.BigEndian.Uint16(w[1][i:]))
		}
	}
	return ^add(^h, d)
}

// ChecksumDelta, PopDelta and ApplyChecksumDelta give the spec's result for
// one window and for the deltas of several windows summed before one patch
// (as generated code sums a node's fields), including the corners where
// the old words sum to 0xffff without all being 0xffff and nothing else
// contributes: the spec then writes 0x0000 where a folded old sum kept
// 0xffff.
func TestChecksumDeltaSpecArithmetic(t *testing.T) {
	corner := [][2][]byte{
		{{0x00, 0x00, 0xff, 0xff}, {0, 0, 0, 0}},
		{{0x12, 0x34, 0xed, 0xcb}, {0, 0, 0, 0}},
		{{0xff, 0xff, 0xff, 0xff}, {0, 0, 0, 0}},
		{{0xff, 0xff}, {0, 0}},
		{{0, 0}, {0, 0}},
	}
	for _, w := range corner {
		for _, h := range []uint16{0xffff, 0, 0x1234} {
			if got, want := ApplyChecksumDelta(h, ChecksumDelta(w[0], w[1]), false), specPatch(h, w); got != want {
				t.Errorf("patch %#04x, %x -> %x: %#04x, spec %#04x", h, w[0], w[1], got, want)
			}
		}
	}
	// A pop takes the words out as if they became zeros.
	for _, b := range [][]byte{{0, 0, 0xff, 0xff}, {0x12, 0x34, 0xed, 0xcb, 0xff, 0xff}, {0xff, 0xff}, {0x4c, 0x42, 2, 1}} {
		if got, want := ApplyChecksumDelta(0xffff, PopDelta(b), false), specPatch(0xffff, [2][]byte{b, make([]byte, len(b))}); got != want {
			t.Errorf("pop %x under 0xffff: %#04x, spec %#04x", b, got, want)
		}
	}
	if got := ApplyChecksumDelta(0xffff, ChecksumDelta([]byte{0, 0, 0xff, 0xff}, []byte{0, 0, 0, 0}), false); got != 0 {
		t.Errorf("0.0.255.255 -> 0.0.0.0 under 0xffff: %#04x, want 0x0000", got)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	word := func() []byte {
		b := make([]byte, 2*(1+rnd.IntN(10)))
		for i := range b {
			switch rnd.IntN(4) { // the corners' bytes often
			case 0:
				b[i] = 0
			case 1:
				b[i] = 0xff
			default:
				b[i] = byte(rnd.Uint32())
			}
		}
		return b
	}
	for range 200000 {
		var ws [][2][]byte
		var d uint64
		for range 1 + rnd.IntN(3) {
			old := word()
			w := [2][]byte{old, make([]byte, len(old))}
			if rnd.IntN(3) > 0 {
				w[1] = word()[:0]
				for len(w[1]) < len(old) {
					w[1] = append(w[1], byte(rnd.IntN(2))*0xff)
				}
			}
			ws = append(ws, w)
			if rnd.IntN(4) == 0 { // popped: the new words are zeros
				clear(w[1])
				d += PopDelta(w[0])
				continue
			}
			d += ChecksumDelta(w[0], w[1])
		}
		h := uint16(rnd.Uint32())
		if rnd.IntN(4) == 0 {
			h = 0xffff
		}
		if got, want := ApplyChecksumDelta(h, d, false), specPatch(h, ws...); got != want {
			t.Fatalf("patch %#04x with %x: %#04x, spec %#04x", h, ws, got, want)
		}
	}
}
