package recvnet

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/packet"
)

// TestModelAgainstRuntime: the model's engine and the hand-written one on
// the same datagrams — events of random lengths cut at random sizes,
// shuffled, some segments twice, from two IPv4 sources and an IPv6 one,
// every other datagram framed in place (FrameAt), the rest copied
// (Datagram) — give every datagram the same reason and deliver the same
// events, byte for byte (each released as it comes: later events reuse
// its buffer).
func TestModelAgainstRuntime(t *testing.T) {
	clock := func() time.Time { return time.Unix(1000, 0) }
	m, err := NewModel(clock, 64)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reasm.New(reasm.Config{Now: clock})
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
		var dgrams [][]byte
		for off := 0; off < len(event); off += size {
			d := make([]byte, ejfat.RELen+min(size, len(event)-off))
			ejfat.RE(d).Encode(uint16(number%3), uint32(off), uint32(len(event)), number)
			copy(d[ejfat.RELen:], event[off:])
			dgrams = append(dgrams, d)
			if rnd.IntN(8) == 0 {
				dgrams = append(dgrams, d)
			}
		}
		rnd.Shuffle(len(dgrams), func(i, j int) { dgrams[i], dgrams[j] = dgrams[j], dgrams[i] })
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
	if ms, rs := m.Stats(), r.Stats(); ms.Segments != rs.Segments || ms.Reassembled != rs.Reassembled {
		t.Errorf("counters: model %+v, runtime %+v", ms, rs)
	}
}
