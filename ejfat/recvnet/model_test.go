package recvnet

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/packet"
)

// TestModelAgainstRuntime: the model's engine and the hand-written one on
// the same datagrams — events of random lengths cut at random sizes,
// shuffled (but every third, in order), some segments twice, some overlapping others, from two IPv4
// sources and an IPv6 one, every other datagram framed in place
// (FrameAt), the rest copied (Datagram), and bad ones among them: an RE
// header cut short, a version other than 1, a length over the largest
// event (the runtime's set to the model's 1 GiB) — give every datagram
// the same reason and deliver the same events, byte for byte (each
// released as it comes: later events reuse its buffer).
func TestModelAgainstRuntime(t *testing.T) {
	clock := func() time.Time { return time.Unix(1000, 0) }
	m, err := NewModel(clock, 64)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reasm.New(reasm.Config{Now: clock, MaxEventSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	srcs := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("fe80::9")}
	delivered := 0
	for number := range uint64(60) {
		event := make([]byte, 1+rnd.IntN(30000))
		for i := range event {
			event[i] = byte(rnd.Uint32())
		}
		size := 100 + rnd.IntN(1500)
		// Each segment (some twice), shuffled; each followed by what is
		// made of it: a copy one byte on, over a byte of what arrived
		// (the segment arrived first), or a bad datagram.
		var segs [][][]byte
		for off := 0; off < len(event); off += size {
			d := make([]byte, ejfat.RELen+min(size, len(event)-off))
			ejfat.RE(d).Encode(uint16(number%3), uint32(off), uint32(len(event)), number)
			copy(d[ejfat.RELen:], event[off:])
			seg := [][]byte{d}
			if rnd.IntN(8) == 0 {
				seg = append(seg, d)
			}
			if k := len(d) - ejfat.RELen; off+1+k <= len(event) && k > 1 && rnd.IntN(8) == 0 {
				o := slices.Clone(d)
				ejfat.RE(o).SetOffset(uint32(off + 1))
				copy(o[ejfat.RELen:], event[off+1:])
				seg = append(seg, o)
			}
			switch rnd.IntN(16) {
			case 0:
				seg = append(seg, d[:rnd.IntN(ejfat.RELen)])
			case 1:
				v := slices.Clone(d)
				v[0] = 0x20
				seg = append(seg, v)
			case 2:
				big := slices.Clone(d)
				ejfat.RE(big).Encode(uint16(number%3), 0, 1<<30+1, number+1000)
				seg = append(seg, big)
			}
			segs = append(segs, seg)
		}
		if number%3 != 0 { // every third event in order
			rnd.Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
		}
		var dgrams [][]byte
		for _, seg := range segs {
			dgrams = append(dgrams, seg...)
		}
		src := srcs[number%3]
		for i, d := range dgrams {
			want := r.Datagram(src, d)
			var got reasm.Reason
			if i%2 == 0 {
				buf := make([]byte, Room+len(d)+packet.Headroom)
				copy(buf[Room:], d)
				got = m.FrameAt(src, buf, Room, len(d))
			} else {
				got = m.Datagram(src, d)
			}
			if got != want {
				t.Fatalf("event %d from %s, datagram %d: model %v, runtime %v", number, src, i, got, want)
			}
			if got != reasm.Completed {
				continue
			}
			we, _ := r.TryDequeue()
			ge, ok := m.TryDequeue()
			if !ok || ge.Key != we.Key || !bytes.Equal(ge.Data, we.Data) || !bytes.Equal(ge.Data, event) {
				t.Fatalf("event %d: model delivered %v (%v), runtime %v", number, ge, ok, we.Key)
			}
			r.Release(we)
			m.Release(ge)
			delivered++
		}
	}
	if delivered != 60 {
		t.Errorf("%d events delivered, want 60", delivered)
	}
	m.Flush() // a reader's after its batch: FrameAt's counts published
	ms, rs := m.Stats(), r.Stats()
	if ms.Segments != rs.Segments || ms.Reassembled != rs.Reassembled {
		t.Errorf("counters: model %+v, runtime %+v", ms, rs)
	}
	for _, why := range []reasm.Reason{reasm.Short, reasm.BadHeader, reasm.TooLarge, reasm.Overlap, reasm.Duplicate} {
		if rs.Segments[why] == 0 {
			t.Errorf("no datagram was %v: %v", why, rs.Segments)
		}
	}
}
