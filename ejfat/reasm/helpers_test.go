package reasm

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// clock is an injected clock that moves only when told.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

var (
	src1 = netip.MustParseAddr("10.0.0.1")
	src2 = netip.MustParseAddr("fd00::2")
)

var kinds = []RecordKind{Intervals, Bitmap}

// newTest makes a reassembler on an injected clock.
func newTest(t testing.TB, cfg Config) (*Reassembler, *clock) {
	t.Helper()
	c := &clock{t: time.Unix(1000, 0)}
	cfg.Now = c.now
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, c
}

// content is an event's bytes, different for every key and offset.
func content(k Key, n int) []byte {
	rng := rand.New(rand.NewPCG(k.Number, uint64(k.DataID)<<32|uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// seg is one segment: offset and payload.
type seg struct {
	off     uint32
	payload []byte
}

// cut cuts data into segments of size bytes (the last shorter), in order.
func cut(data []byte, size int) []seg {
	var s []seg
	for off := 0; off < len(data); off += size {
		s = append(s, seg{uint32(off), data[off:min(off+size, len(data))]})
	}
	return s
}

// send hands the segments of key k (length n) to r and returns the reasons.
func send(r *Reassembler, k Key, n uint32, segs []seg) []Reason {
	var why []Reason
	for _, s := range segs {
		why = append(why, r.Segment(k, s.off, n, s.payload))
	}
	return why
}

// drain takes every waiting event, checks it against want (key → bytes)
// and releases it; it returns how many there were.
func drain(t *testing.T, r *Reassembler, want map[Key][]byte) int {
	t.Helper()
	n := 0
	for {
		ev, ok := r.TryDequeue()
		if !ok {
			return n
		}
		n++
		if w, ok := want[ev.Key]; !ok || !bytes.Equal(ev.Data, w) {
			t.Errorf("delivered %+v: %d bytes, not the event sent", ev.Key, len(ev.Data))
		}
		r.Release(ev)
	}
}

// wantSegments checks the per-reason counters that are not zero.
func wantSegments(t *testing.T, r *Reassembler, want map[Reason]uint64) {
	t.Helper()
	s := r.Stats()
	for why := range numReasons {
		if s.Segments[why] != want[why] {
			t.Errorf("segments %s: %d, want %d", why, s.Segments[why], want[why])
		}
	}
}
