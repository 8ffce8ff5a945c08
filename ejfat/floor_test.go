package ejfat

import (
	"bytes"
	"math/bits"
	"os"
	"testing"

	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/packet"
)

func be16(b []byte) uint64 { _ = b[1]; return uint64(b[0])<<8 | uint64(b[1]) }
func be32(b []byte) uint64 { _ = b[3]; return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3]) }

type floorLB struct {
	t     []*packet.Table
	keys  [3]packet.Value
	edges [8]uint64
}

func csumDelta(old, new uint64) uint64 {
	f := uint32(old)
	f += bits.RotateLeft32(f, 16)
	return uint64(^uint16(f>>16)) + new
}
func apply(cv uint16, d uint64) uint16 {
	x := uint64(^cv) + d
	x += bits.RotateLeft64(x, 32)
	y := uint32(x >> 32)
	y += bits.RotateLeft32(y, 16)
	return ^uint16(y >> 16)
}

//go:noinline
func (l *floorLB) process(buf []byte, off, n int) ([]byte, bool) {
	data := buf[off : off+n]
	if len(data) < 58 {
		return nil, false
	}
	b := data[:58:58]
	if be16(b[12:]) != 0x0800 || b[14] != 0x45 || b[23] != 17 || be16(b[36:])&0xc000 != 0x4000 || be16(b[42:]) != 0x4c42 || b[44] != 2 {
		return nil, false
	}
	l.edges[0]++
	dst := be16(b[0:])<<32 | be32(b[2:])
	e, hit := l.t[0].LookupWord(dst)
	if !hit || e.Action != 0 {
		return nil, false
	}
	macSA := e.Params[0].Lo
	l.keys[0] = packet.Value{}
	l.keys[1] = packet.Value{Lo: 0x0800}
	l.keys[2] = packet.Value{Lo: be32(b[30:])}
	e, hit = l.t[1].Lookup(l.keys[:3])
	if !hit || e.Action != 0 {
		return nil, false
	}
	ipSA, lb := e.Params[0].Lo, e.Params[1].Lo&7
	e, hit = l.t[2].LookupWord(be32(b[26:]) | lb<<32)
	if !hit || e.Action != 0 {
		return nil, false
	}
	tick := be32(b[50:])<<32 | be32(b[54:])
	l.keys[0] = packet.Value{Lo: lb}
	l.keys[1] = packet.Value{Lo: tick}
	e, hit = l.t[4].Lookup(l.keys[:2])
	if !hit {
		return nil, false
	}
	epoch, sbits, sxor := e.Params[0].Lo, uint64(9), uint64(0)
	if e.Action == 1 {
		sbits, sxor = e.Params[1].Lo, e.Params[2].Lo
	}
	slot := ((tick & 0xffff) ^ sxor) & (1<<sbits - 1) & 0xffff
	e, hit = l.t[5].LookupWord(slot | epoch<<16 | lb<<48)
	if !hit || e.Action != 0 {
		return nil, false
	}
	member := e.Params[0].Lo
	e, hit = l.t[6].LookupWord(member | 0x0800<<16 | lb<<32)
	if !hit || e.Action != 0 {
		return nil, false
	}
	p := e.Params
	_ = p[4]
	macDA, ipDA, port, pbits, keep := p[0].Lo, p[1].Lo, p[2].Lo, p[3].Lo, p[4].Lo
	_ = keep
	psel := be16(b[48:])
	newPort := (port + psel&(1<<pbits-1)) & 0xffff
	// rewrite
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(macDA>>40), byte(macDA>>32), byte(macDA>>24), byte(macDA>>16), byte(macDA>>8), byte(macDA)
	b[6], b[7], b[8], b[9], b[10], b[11] = byte(macSA>>40), byte(macSA>>32), byte(macSA>>24), byte(macSA>>16), byte(macSA>>8), byte(macSA)
	var dip, dudp uint64
	od, os := be32(b[30:]), be32(b[26:])
	d := csumDelta(od>>16+od&0xffff, ipDA>>16+ipDA&0xffff) + csumDelta(os>>16+os&0xffff, ipSA>>16+ipSA&0xffff)
	dip += d
	dudp += d
	b[30], b[31], b[32], b[33] = byte(ipDA>>24), byte(ipDA>>16), byte(ipDA>>8), byte(ipDA)
	b[26], b[27], b[28], b[29] = byte(ipSA>>24), byte(ipSA>>16), byte(ipSA>>8), byte(ipSA)
	dudp += csumDelta(be16(b[36:]), newPort)
	b[36], b[37] = byte(newPort>>8), byte(newPort)
	tl := be16(b[16:])
	dip += csumDelta(tl, tl-16)
	dudp += csumDelta(tl, tl-16)
	b[16], b[17] = byte((tl-16)>>8), byte(tl-16)
	c := apply(uint16(be16(b[24:])), dip)
	b[24], b[25] = byte(c>>8), byte(c)
	// pop 16 bytes of LB header from UDP checksum
	var s uint32
	for k := 42; k < 58; k += 2 {
		s += uint32(be16(b[k:]))
	}
	s += bits.RotateLeft32(s, 16)
	dudp += uint64(^uint16(s >> 16))
	ul := be16(b[38:])
	dudp += csumDelta(ul, ul-16)
	b[38], b[39] = byte((ul-16)>>8), byte(ul-16)
	c = apply(uint16(be16(b[40:])), dudp)
	b[40], b[41] = byte(c>>8), byte(c)
	copy(data[16:58], data[:42])
	l.edges[1]++
	return data[16:], true
}

func BenchmarkFloor(b *testing.B) {
	frame := gplFrame(b, false, gplA7LB(), gplA7Payload())
	want, _ := newGopacketLB(b).Forward(frame)
	want = bytes.Clone(want)
	script, _ := os.ReadFile("testdata/lb-2025.tables")
	ts, _ := lbfast.Tables("lb-2025", "lb-2025.tables", bytes.NewReader(script))
	l := &floorLB{t: ts}
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 2*packet.Headroom+len(frame))
		copy(bufs[i][packet.Headroom:], frame)
	}
	got, ok := l.process(bufs[0], packet.Headroom, len(frame))
	if !ok || !bytes.Equal(got, want) {
		b.Fatalf("floor %v %x\nwant %x", ok, got, want)
	}
	i := 0
	for b.Loop() {
		if i == 0 {
			for j := range bufs {
				copy(bufs[j][packet.Headroom:], frame)
			}
		}
		l.process(bufs[i], packet.Headroom, len(frame))
		i = (i + 1) % len(bufs)
	}
}

func BenchmarkIPDst(b *testing.B) {
	script, _ := os.ReadFile("testdata/lb-2025.tables")
	ts, _ := lbfast.Tables("lb-2025", "lb-2025.tables", bytes.NewReader(script))
	keys := []packet.Value{{}, {Lo: 0x0800}, {Lo: 0x0a010203}}
	if _, hit := ts[1].Lookup(keys); !hit {
		b.Fatal("miss")
	}
	b.Run("ipdst", func(b *testing.B) {
		for b.Loop() {
			ts[1].Lookup(keys)
		}
	})
	b.Run("ipdst-words", func(b *testing.B) {
		for b.Loop() {
			ts[1].LookupWords(0, 0x800, 0, 0x0a010203)
		}
	})
	b.Run("epoch-words", func(b *testing.B) {
		for b.Loop() {
			ts[4].LookupWords(0, 10, 0, 0)
		}
	})
	b.Run("member", func(b *testing.B) {
		k := uint64(0) | 0x0800<<16
		e, _ := ts[6].LookupWord(k)
		b.Log(e)
		for b.Loop() {
			ts[6].LookupWord(k)
		}
	})
}
