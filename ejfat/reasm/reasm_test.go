package reasm

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestAnyOrder is §4.1: placement by offset in any order, one delivery,
// byte-equal, for segment sizes that do not divide the length.
func TestAnyOrder(t *testing.T) {
	orders := map[string]func([]seg) []seg{
		"in order": func(s []seg) []seg { return s },
		"reversed": func(s []seg) []seg { slices.Reverse(s); return s },
		"shuffled": func(s []seg) []seg {
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
			return s
		},
		"odd first": func(s []seg) []seg {
			var odd, even []seg
			for i, x := range s {
				if i%2 == 1 {
					odd = append(odd, x)
				} else {
					even = append(even, x)
				}
			}
			return append(odd, even...)
		},
	}
	for _, kind := range kinds {
		for name, order := range orders {
			for _, n := range []int{1, 63, 64, 65, 1000, 100000} {
				for _, size := range []int{1, 7, 64, 8936} {
					if n/size > 2000 || kind == Intervals && size < 128 && (name == "shuffled" || name == "odd first") {
						continue // TestFragmented
					}
					r, _ := newTest(t, Config{Record: kind})
					k := Key{src1, 3, uint64(n)}
					data := content(k, n)
					segs := order(cut(data, size))
					why := send(r, k, uint32(n), segs)
					if got := drain(t, r, map[Key][]byte{k: data}); got != 1 {
						t.Fatalf("%s %s n=%d size=%d: %d events delivered, want 1 (reasons %v)", kind, name, n, size, got, why)
					}
					if why[len(why)-1] != Completed {
						t.Errorf("%s %s n=%d size=%d: last segment %s", kind, name, n, size, why[len(why)-1])
					}
					st := r.Stats()
					if st.Received != 1 || st.Reassembled != 1 || st.Dequeued != 1 || st.Packets != uint64(len(segs)) ||
						st.Bytes != uint64(n) || st.Segments[Placed] != uint64(len(segs)-1) {
						t.Errorf("%s %s n=%d size=%d: stats %+v", kind, name, n, size, st)
					}
				}
			}
		}
	}
}

// TestInterleaved: segments of events of several keys (differing only in
// source, data id or number) interleaved; each is delivered whole.
func TestInterleaved(t *testing.T) {
	for _, kind := range kinds {
		r, _ := newTest(t, Config{Record: kind})
		keys := []Key{{src1, 1, 7}, {src2, 1, 7}, {src1, 2, 7}, {src1, 1, 8}}
		want := map[Key][]byte{}
		var segs [][]seg
		for i, k := range keys {
			want[k] = content(k, 5000+i)
			segs = append(segs, cut(want[k], 1000))
		}
		for i := range segs[len(segs)-1] {
			for j, k := range keys {
				if i < len(segs[j]) {
					r.Segment(k, segs[j][i].off, uint32(len(want[k])), segs[j][i].payload)
				}
			}
		}
		if n := drain(t, r, want); n != len(keys) {
			t.Errorf("%s: %d events, want %d", kind, n, len(keys))
		}
	}
}

// TestBounds is §4.2: each bad segment is dropped under its own reason,
// begins no event and writes nothing.
func TestBounds(t *testing.T) {
	for _, kind := range kinds {
		r, _ := newTest(t, Config{Record: kind, MaxEventSize: 1 << 16})
		k := Key{src1, 1, 1}
		p := make([]byte, 100)
		checks := []struct {
			off, length uint32
			payload     []byte
			want        Reason
		}{
			{0, 0, p, ZeroLength},
			{0, 1<<16 + 1, p, TooLarge},
			{0, 99, p, OutOfBounds},
			{1, 100, p, OutOfBounds},
			{0xffffffff, 0xffffffff, p, TooLarge},
			{0, 100, nil, Empty},
		}
		for _, c := range checks {
			if got := r.Segment(k, c.off, c.length, c.payload); got != c.want {
				t.Errorf("%s: offset %d length %d payload %d: %s, want %s", kind, c.off, c.length, len(c.payload), got, c.want)
			}
		}
		// Big offsets do not wrap around.
		r2, _ := newTest(t, Config{Record: kind, MaxEventSize: 0xffffffff, MaxBytes: 1 << 33})
		if got := r2.Segment(k, 0xffffff9c+1, 0xffffffff, p); got != OutOfBounds {
			t.Errorf("%s: offset near 2^32: %s", kind, got)
		}
		if got := r.Datagram(src1, make([]byte, 19)); got != Short {
			t.Errorf("%s: 19-byte datagram: %s", kind, got)
		}
		if got := r.Datagram(src1, append([]byte{0x20}, make([]byte, 30)...)); got != BadHeader {
			t.Errorf("%s: version 2: %s", kind, got)
		}
		st := r.Stats()
		if st.Received != 0 || r.n != 0 {
			t.Errorf("%s: bad segments began events: %+v", kind, st)
		}
		wantSegments(t, r, map[Reason]uint64{ZeroLength: 1, TooLarge: 2, OutOfBounds: 2, Empty: 1, Short: 1, BadHeader: 1})
	}
}

// TestLengthMismatch is §4.2's last rule: a segment whose length differs
// from the first segment's is dropped; the event completes as the first
// segment said.
func TestLengthMismatch(t *testing.T) {
	for _, kind := range kinds {
		r, k, data, segs := threeSegments(t, kind)
		send(r, k, 3000, segs[:1])
		if got := r.Segment(k, 1000, 2000, make([]byte, 1000)); got != LengthMismatch {
			t.Errorf("%s: shorter length: %s", kind, got)
		}
		if got := r.Segment(k, 1000, 4000, make([]byte, 1000)); got != LengthMismatch {
			t.Errorf("%s: longer length: %s", kind, got)
		}
		send(r, k, 3000, segs[1:])
		deliveredOnce(t, r, k, data)
		wantSegments(t, r, map[Reason]uint64{Placed: 2, Completed: 1, LengthMismatch: 2})
	}
}

// TestSecondOffsetZero is E2SAR's first defect (§4.3): a second offset-0
// segment replaces the event in progress. Here it is a duplicate, with the
// same length or another one, and the event completes with the bytes of
// the first.
func TestSecondOffsetZero(t *testing.T) {
	for _, kind := range kinds {
		r, k, data, segs := threeSegments(t, kind)
		send(r, k, 3000, segs[:2])
		other := make([]byte, 1000)
		if got := r.Segment(k, 0, 3000, other); got != Duplicate {
			t.Errorf("%s: second offset-0 segment: %s", kind, got)
		}
		if got := r.Segment(k, 0, 1000, other); got != LengthMismatch {
			t.Errorf("%s: second offset-0 segment of another length: %s", kind, got)
		}
		send(r, k, 3000, segs[2:])
		deliveredOnce(t, r, k, data)
		if st := r.Stats(); st.Received != 1 {
			t.Errorf("%s: the offset-0 segment began %d events", kind, st.Received)
		}
	}
}

// TestInOrderDuplicate is E2SAR's second defect: an in-order duplicate
// (here of every segment, and of the last one before the gap fills) is
// counted, not copied, and never completes the event early or twice.
func TestInOrderDuplicate(t *testing.T) {
	for _, kind := range kinds {
		r, k, data, segs := threeSegments(t, kind)
		want := []Reason{Placed, Duplicate, Placed, Duplicate, Duplicate, Completed, Duplicate}
		got := send(r, k, 3000, []seg{segs[0], segs[0], segs[1], segs[1], segs[1], segs[2], segs[2]})
		if !slices.Equal(got, want) {
			t.Errorf("%s: reasons %v, want %v", kind, got, want)
		}
		deliveredOnce(t, r, k, data)
		// A duplicate of a one-segment event after it was delivered begins
		// nothing.
		k1 := Key{src1, 1, 2}
		one := content(k1, 500)
		got = send(r, k1, 500, []seg{{0, one}, {0, one}})
		if !slices.Equal(got, []Reason{Completed, Duplicate}) {
			t.Errorf("%s: one-segment event sent twice: %v", kind, got)
		}
		if n := drain(t, r, map[Key][]byte{k1: one}); n != 1 {
			t.Errorf("%s: one-segment event delivered %d times", kind, n)
		}
		if st := r.Stats(); st.Received != 2 || st.Reassembled != 2 {
			t.Errorf("%s: stats %+v", kind, st)
		}
	}
}

// TestOutOfOrderLengths is E2SAR's third defect: its reorder loop copied
// a queued segment with another segment's length. Segments of unequal
// lengths arriving out of order land with their own.
func TestOutOfOrderLengths(t *testing.T) {
	for _, kind := range kinds {
		r, k, data, _ := threeSegments(t, kind)
		data = data[:1000]
		segs := []seg{{0, data[:100]}, {100, data[100:137]}, {137, data[137:600]}, {600, data[600:601]}, {601, data[601:]}}
		send(r, k, 1000, []seg{segs[4], segs[2], segs[0], segs[3], segs[1]})
		deliveredOnce(t, r, k, data)
	}
}

// TestOverlap: a segment partly over arrived bytes is dropped, copies
// nothing, and the event completes from the non-overlapping segments.
func TestOverlap(t *testing.T) {
	for _, kind := range kinds {
		r, k, data, _ := threeSegments(t, kind)
		bad := make([]byte, 1500)
		got := send(r, k, 3000, []seg{{1000, data[1000:2000]}, {500, bad[:1000]}, {1500, bad[:1000]}, {999, bad[:2]}, {500, bad[:1500]},
			{0, data[:1000]}, {2000, data[2000:]}})
		want := []Reason{Placed, Overlap, Overlap, Overlap, Overlap, Placed, Completed}
		if !slices.Equal(got, want) {
			t.Errorf("%s: reasons %v, want %v", kind, got, want)
		}
		deliveredOnce(t, r, k, data)
	}
}

// TestTimeout is §4.4: an event incomplete 500 ms after its first segment
// is dropped as lost, its memory returned; its late segments are counted
// and begin nothing.
func TestTimeout(t *testing.T) {
	for _, kind := range kinds {
		r, c := newTest(t, Config{Record: kind})
		k := Key{src1, 1, 1}
		data := content(k, 3000)
		segs := cut(data, 1000)
		send(r, k, 3000, segs[:1])
		c.advance(DefaultTimeout - time.Nanosecond)
		r.Expire()
		if st := r.Stats(); st.TimedOut != 0 || r.n != 1 {
			t.Fatalf("%s: dropped before its timeout: %+v", kind, st)
		}
		c.advance(time.Nanosecond)
		r.Expire()
		if st := r.Stats(); st.TimedOut != 1 || st.Errors() != 1 || r.n != 0 || r.pool.idle != r.pool.bytes || r.pool.idle == 0 {
			t.Fatalf("%s: not dropped at its timeout: %+v, %d bytes, %d free", kind, st, r.pool.bytes, r.pool.idle)
		}
		got := send(r, k, 3000, segs)
		if !slices.Equal(got, []Reason{Late, Late, Late}) {
			t.Errorf("%s: late segments: %v", kind, got)
		}
		if n := drain(t, r, nil); n != 0 || r.Stats().Received != 1 {
			t.Errorf("%s: late segments resurrected the event", kind)
		}
	}
}

// TestTimeoutAtNextEvent: without Expire, a new event's first segment
// reads the clock and drops what timed out.
func TestTimeoutAtNextEvent(t *testing.T) {
	r, c := newTest(t, Config{Timeout: time.Second})
	a, b := Key{src1, 1, 1}, Key{src1, 1, 2}
	r.Segment(a, 0, 2000, make([]byte, 1000))
	c.advance(time.Second)
	r.Segment(b, 0, 2000, make([]byte, 1000))
	if got := r.Segment(a, 1000, 2000, make([]byte, 1000)); got != Late {
		t.Errorf("segment of the timed-out event: %s", got)
	}
	if st := r.Stats(); st.TimedOut != 1 || st.Received != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestCapEvents is §4.5's count cap: past MaxEvents the oldest incomplete
// event is evicted, counted, and its segments refused as late.
func TestCapEvents(t *testing.T) {
	r, _ := newTest(t, Config{MaxEvents: 2})
	keys := []Key{{src1, 1, 1}, {src1, 1, 2}, {src1, 1, 3}}
	want := map[Key][]byte{}
	for _, k := range keys {
		want[k] = content(k, 2000)
		r.Segment(k, 0, 2000, want[k][:1000])
	}
	if got := r.Segment(keys[0], 1000, 2000, want[keys[0]][1000:]); got != Late {
		t.Errorf("segment of the evicted event: %s", got)
	}
	for _, k := range keys[1:] {
		r.Segment(k, 1000, 2000, want[k][1000:])
	}
	if n := drain(t, r, want); n != 2 {
		t.Errorf("%d events delivered, want 2", n)
	}
	if st := r.Stats(); st.Evicted != 1 || st.Errors() != 1 {
		t.Errorf("stats %+v", st)
	}
	// An event with one segment goes before an older one with two.
	k1, k2, k3 := Key{src1, 2, 1}, Key{src1, 2, 2}, Key{src1, 2, 3}
	p := make([]byte, 1000)
	r.Segment(k1, 0, 3000, p)
	r.Segment(k1, 1000, 3000, p)
	r.Segment(k2, 0, 3000, p)
	r.Segment(k3, 0, 3000, p)
	if a, b := r.Segment(k1, 2000, 3000, p), r.Segment(k2, 1000, 3000, p); a != Completed || b != Late {
		t.Errorf("the older event of two segments: %s, the fresh one: %s", a, b)
	}
}

// TestFloodOfHugeFirstSegments is §4.5's byte cap: first segments each
// claiming the largest event hold only the bytes they carry (a buffer of
// their own size class), and a flood of them neither passes MaxBytes nor
// evicts an event that has more than one segment.
func TestFloodOfHugeFirstSegments(t *testing.T) {
	const maxBytes = 64 << 20
	for _, kind := range kinds {
		r, _ := newTest(t, Config{Record: kind, MaxEventSize: 16 << 20, MaxBytes: maxBytes, MaxEvents: 100})
		k := Key{src1, 2, 1 << 40}
		data := content(k, 200000)
		segs := cut(data, 8000)
		send(r, k, uint32(len(data)), segs[:2])
		p := make([]byte, 1000)
		for i := range 1000 {
			r.Segment(Key{src1, 1, uint64(i)}, uint32(i)*4096, 16<<20, p)
			if r.pool.bytes > maxBytes || r.pool.bytes > (100+1)*minClass+256<<10 {
				t.Fatalf("%s: after %d first segments: %d bytes of buffers", kind, i+1, r.pool.bytes)
			}
		}
		send(r, k, uint32(len(data)), segs[2:])
		if n := drain(t, r, map[Key][]byte{k: data}); n != 1 {
			t.Errorf("%s: the event of two segments and more was not delivered", kind)
		}
		if st := r.Stats(); st.Evicted != 1000-99 || st.Received != 1001 {
			t.Errorf("%s: stats %+v", kind, st)
		}
	}
}

// TestMaxBytes: buffers of events in progress, complete ones the
// application holds and free ones stay within MaxBytes together. A second
// segment that needs a buffer past it evicts (single-segment events
// first); with nothing left to evict, the segment is NoMemory and its
// event dropped.
func TestMaxBytes(t *testing.T) {
	const size = 1 << 20 // a class of its own: 1 MiB
	r, _ := newTest(t, Config{MaxEventSize: size, MaxBytes: 3*size + stageMax})
	data := content(Key{}, size)
	var held []*Event
	for i := range 3 {
		k := Key{src1, 1, uint64(i)}
		send(r, k, size, cut(data, 8000))
		ev, ok := r.TryDequeue()
		if !ok {
			t.Fatalf("event %d not complete", i)
		}
		held = append(held, ev)
	}
	k := Key{src1, 1, 3}
	if got := send(r, k, size, cut(data, 8000)[:2]); got[0] != Placed || got[1] != NoMemory {
		t.Errorf("an event past MaxBytes, all held by the application: %v", got)
	}
	if r.pool.bytes > 3*size+stageMax {
		t.Errorf("%d bytes of buffers", r.pool.bytes)
	}
	r.Release(held[0])
	// The freed buffer goes to the next event; the one after needs it back
	// and evicts the fresh event (one segment), then the oldest.
	a := send(r, Key{src1, 1, 4}, size, cut(data, 8000)[:2])
	b := send(r, Key{src1, 1, 5}, size, cut(data, 8000)[:1])
	c := send(r, Key{src1, 1, 6}, size, cut(data, 8000))
	if !slices.Equal(a, []Reason{Placed, Placed}) || b[0] != Placed || c[len(c)-1] != Completed {
		t.Errorf("events after a release: %v %v %v", a, b, c)
	}
	if st := r.Stats(); st.Evicted != 3 || st.Segments[NoMemory] != 1 || r.pool.bytes > 3*size+stageMax {
		t.Errorf("stats %+v, %d bytes of buffers", st, r.pool.bytes)
	}
}

// TestTombstonesBounded: only the Tombstones latest finished keys are
// remembered; an older key begins a new event.
func TestTombstonesBounded(t *testing.T) {
	r, _ := newTest(t, Config{Tombstones: 2})
	p := make([]byte, 10)
	for i := range 3 {
		r.Segment(Key{src1, 1, uint64(i)}, 0, 10, p)
	}
	if got := r.Segment(Key{src1, 1, 2}, 0, 10, p); got != Duplicate {
		t.Errorf("a remembered key: %s", got)
	}
	if got := r.Segment(Key{src1, 1, 0}, 0, 10, p); got != Completed {
		t.Errorf("a forgotten key: %s", got)
	}
	if _, ok := r.tombs.lookup(Key{src1, 1, 1}); ok || len(r.tombs.ring) != 2 {
		t.Errorf("%d tombstones, the second key's kept: %v", len(r.tombs.ring), ok)
	}
}

// TestQueue: a full queue drops complete events as enqueue errors; Fill
// and Dequeued follow the queue.
func TestQueue(t *testing.T) {
	r, _ := newTest(t, Config{Queue: 2})
	p := make([]byte, 10)
	for i := range 3 {
		r.Segment(Key{src1, 1, uint64(i)}, 0, 10, p)
	}
	if f := r.Fill(); f != 1 {
		t.Errorf("fill %v", f)
	}
	ev, err := r.Dequeue(t.Context())
	if err != nil || ev.Number != 0 {
		t.Fatalf("Dequeue: %v, %v", ev, err)
	}
	r.Release(ev)
	r.Release(ev) // twice: still one buffer in the pool
	if a, b := r.pool.get(10), r.pool.get(10); &a[0] == &b[0] {
		t.Error("a released event came out of the pool twice")
	}
	if st := r.Stats(); st.EnqueueErrors != 1 || st.Dequeued != 1 || st.Reassembled != 3 || r.Fill() != 0.5 {
		t.Errorf("stats %+v, fill %v", st, r.Fill())
	}
}

// TestFragmented: an interval record holds one range per 64 bytes of the
// event (and 64 more); a segment that would need another is refused.
func TestFragmented(t *testing.T) {
	r, _ := newTest(t, Config{Record: Intervals})
	k := Key{src1, 1, 1}
	const n = 64 * 100
	p := []byte{1}
	for i := range n/64 + 64 {
		if got := r.Segment(k, uint32(2*i), n, p); got != Placed {
			t.Fatalf("range %d: %s", i, got)
		}
	}
	if got := r.Segment(k, n-1, n, p); got != Fragmented {
		t.Errorf("one range too many: %s", got)
	}
	if got := r.Segment(k, 1, n, p); got != Placed {
		t.Errorf("a byte merging two ranges: %s", got)
	}
	// The merge freed a range.
	if got := r.Segment(k, n-1, n, p); got != Placed {
		t.Errorf("a range after a merge: %s", got)
	}
}

// TestPooledRecordTrimmed: an event's record of many ranges is let go when
// the event goes back to the pool, so pooled events keep little memory
// whatever lengths and orders came before.
func TestPooledRecordTrimmed(t *testing.T) {
	r, c := newTest(t, Config{Record: Intervals})
	p := []byte{1}
	for i := range 2000 {
		r.Segment(Key{src1, 1, 1}, uint32(2*i), 200000, p)
	}
	if s := r.age.newer.rec.(*intervals).s; len(s) != 2000 {
		t.Fatalf("%d ranges", len(s))
	}
	c.advance(DefaultTimeout)
	r.Expire()
	if n := len(r.pool.events); n != 1 || cap(r.pool.events[0].rec.(*intervals).s)*8 > keepRecord {
		t.Errorf("%d pooled events, the record keeps %d ranges", n, cap(r.pool.events[0].rec.(*intervals).s))
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{MaxEventSize: 1 << 20, MaxBytes: 1 << 19},
		{Timeout: -1},
		{MaxEvents: -1},
		{Record: 7},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestNoAllocs: once the pool and maps are warm, segments allocate
// nothing, whatever their order.
func TestNoAllocs(t *testing.T) {
	for _, kind := range kinds {
		r, _ := newTest(t, Config{Record: kind})
		k := Key{src1, 1, 0}
		data := content(k, 100000)
		segs := cut(data, 1000)
		rand.New(rand.NewPCG(3, 4)).Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
		run := func() {
			k.Number++
			for _, s := range segs {
				r.Segment(k, s.off, uint32(len(data)), s.payload)
			}
			ev, _ := r.TryDequeue()
			r.Release(ev)
		}
		for range 10 {
			run()
		}
		if a := testing.AllocsPerRun(100, run); a != 0 {
			t.Errorf("%s: %v allocations per event of %d segments", kind, a, len(segs))
		}
	}
}

func TestBufClass(t *testing.T) {
	prev := -1
	for _, n := range []uint32{1, 4096, 4097, 5120, 5121, 8192, 8193, 1 << 20, 1<<20 + 1, 0xffffffff} {
		c, size := bufClass(n)
		if size < int(n) || (n > minClass && float64(size) > 1.25*float64(n)) || c < prev || c >= len(pool{}.free) {
			t.Errorf("bufClass(%d) = %d, %d", n, c, size)
		}
		prev = c
	}
}

// TestConcurrentApplication: the application dequeues, checks and
// releases events on its own goroutine while segments arrive (run with
// -race); every event arrives whole, and the counters add up.
func TestConcurrentApplication(t *testing.T) {
	r, _ := newTest(t, Config{Queue: 4})
	const events = 200
	want := map[Key][]byte{}
	for i := range events {
		k := Key{src1, 1, uint64(i)}
		want[k] = content(k, 3000+i)
	}
	check := func(ev *Event) {
		if !slices.Equal(ev.Data, want[ev.Key]) {
			t.Errorf("event %d: wrong bytes", ev.Number)
		}
		r.Release(ev)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int)
	go func() {
		n := 0
		for {
			ev, err := r.Dequeue(ctx)
			if err != nil {
				for ev, ok := r.TryDequeue(); ok; ev, ok = r.TryDequeue() {
					check(ev)
					n++
				}
				done <- n
				return
			}
			check(ev)
			n++
		}
	}()
	for i := range events {
		k := Key{src1, 1, uint64(i)}
		send(r, k, uint32(len(want[k])), cut(want[k], 1000))
	}
	cancel()
	n := <-done
	if st := r.Stats(); st.Reassembled != events || st.Dequeued != uint64(n) || uint64(n)+st.EnqueueErrors != events {
		t.Errorf("%d dequeued, stats %+v", n, st)
	}
}
