package reasm

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"time"
)

// The fuzzed reassembler's bounds: small, so that the fuzzer reaches them.
const (
	fuzzTimeout   = 100 * time.Millisecond
	fuzzMaxSize   = 2000
	fuzzMaxEvents = 8
)

// model is the reassembly rules of spec §4 written the plain way: a map of
// events, each a byte slice and a flag per byte, an age-ordered key list,
// an unbounded tombstone map; past the event cap it evicts the oldest
// event with a single segment placed, else the oldest. It is the oracle of
// FuzzReassembly.
type model struct {
	kind    RecordKind
	now     time.Duration
	events  map[Key]*modelEvent
	age     []Key
	tomb    map[Key]Reason
	counts  map[Reason]uint64
	stats   Stats
	deliver []modelDelivery
}

type modelEvent struct {
	data     []byte
	got      []bool
	n        int
	placed   int // segments
	deadline time.Duration
}

type modelDelivery struct {
	key  Key
	data []byte
}

func newModel(kind RecordKind) *model {
	return &model{kind: kind, events: map[Key]*modelEvent{}, tomb: map[Key]Reason{}, counts: map[Reason]uint64{}}
}

func (m *model) segment(k Key, off, length uint32, p []byte) Reason {
	end := int(off) + len(p)
	switch {
	case len(p) == 0:
		return m.count(Empty)
	case length == 0:
		return m.count(ZeroLength)
	case length > fuzzMaxSize:
		return m.count(TooLarge)
	case end > int(length):
		return m.count(OutOfBounds)
	}
	if why, ok := m.tomb[k]; ok {
		return m.count(why)
	}
	ev := m.events[k]
	if ev == nil {
		m.expire()
		for len(m.age) >= fuzzMaxEvents {
			m.stats.Evicted++
			victim := m.age[0]
			if i := slices.IndexFunc(m.age, func(k Key) bool { return m.events[k].placed == 1 }); i >= 0 {
				victim = m.age[i]
			}
			m.finish(victim, Late)
		}
		ev = &modelEvent{data: make([]byte, length), got: make([]bool, length), deadline: m.now + fuzzTimeout}
		m.events[k] = ev
		m.age = append(m.age, k)
		m.stats.Received++
	}
	if int(length) != len(ev.data) {
		return m.count(LengthMismatch)
	}
	arrived := 0
	for _, g := range ev.got[off:end] {
		if g {
			arrived++
		}
	}
	switch {
	case arrived == len(p):
		return m.count(Duplicate)
	case arrived > 0:
		return m.count(Overlap)
	case m.kind == Intervals && m.rangesAfter(ev, int(off), end) > int(length)/64+64:
		return m.count(Fragmented)
	}
	copy(ev.data[off:], p)
	for i := int(off); i < end; i++ {
		ev.got[i] = true
	}
	ev.n += len(p)
	ev.placed++
	if ev.n < len(ev.data) {
		return m.count(Placed)
	}
	m.stats.Reassembled++
	m.finish(k, Duplicate)
	m.deliver = append(m.deliver, modelDelivery{k, ev.data})
	return m.count(Completed)
}

// rangesAfter is the number of maximal arrived runs once [off, end) has.
func (m *model) rangesAfter(ev *modelEvent, off, end int) int {
	runs := 0
	for i, g := range ev.got {
		in := g || i >= off && i < end
		prev := i > 0 && (ev.got[i-1] || i-1 >= off && i-1 < end)
		if in && !prev {
			runs++
		}
	}
	return runs
}

func (m *model) expire() {
	for len(m.age) > 0 && m.events[m.age[0]].deadline <= m.now {
		m.stats.TimedOut++
		m.finish(m.age[0], Late)
	}
}

func (m *model) finish(k Key, why Reason) {
	delete(m.events, k)
	m.age = slices.DeleteFunc(m.age, func(x Key) bool { return x == k })
	m.tomb[k] = why
}

func (m *model) count(why Reason) Reason {
	m.counts[why]++
	return why
}

// fuzzOpLen is the length of one operation in a fuzz input:
//
//	b0 bits 0-2: 0-5 a segment, 6 the clock moves b1*4 ms, 7 Expire;
//	   bit 3 the source, bit 4 the data id
//	b1 the event number (modulo 64: 256 keys, as many as tombstones)
//	b2 the length: <240 the key's own, 240-247 another, 248-251 0, else too large
//	b3-4 the offset, modulo length+16
//	b5 the payload length (255: to the event's end)
const fuzzOpLen = 6

// FuzzReassembly feeds arbitrary segment sequences, clock moves and Expire
// calls to a reassembler of each record kind and to the model: the same
// reason for every segment, the same events delivered at the same step,
// byte-equal, none twice, and the same counters. (A write outside an
// event's buffer panics: Data's capacity is the event's length.)
func FuzzReassembly(f *testing.F) {
	f.Add([]byte{0, 1, 10, 0, 0, 255})
	f.Add([]byte{0, 1, 10, 0, 40, 255, 0, 1, 10, 0, 0, 40, 0, 1, 10, 0, 0, 40})
	f.Add([]byte{0, 2, 100, 0, 0, 100, 6, 30, 0, 0, 0, 0, 0, 2, 100, 0, 100, 255, 7, 0, 0, 0, 0, 0})
	f.Add([]byte{8, 3, 250, 0, 0, 255, 16, 3, 252, 0, 0, 10, 0, 3, 249, 0, 0, 1, 0, 3, 241, 0, 0, 9})
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, kind := range kinds {
			fuzzOne(t, kind, in)
		}
	})
}

func fuzzOne(t *testing.T, kind RecordKind, in []byte) {
	r, clk := newTest(t, Config{Record: kind, Timeout: fuzzTimeout, MaxEventSize: fuzzMaxSize,
		MaxEvents: fuzzMaxEvents, Tombstones: 256, Queue: 256})
	r.stageMax = fuzzMaxSize / 4 // longer events' first segments are held alone
	m := newModel(kind)
	scratch := make([]byte, fuzzMaxSize+16)
	delivered := map[Key]bool{}
	for step := 0; len(in) >= fuzzOpLen; step, in = step+1, in[fuzzOpLen:] {
		op := in[:fuzzOpLen]
		switch op[0] & 7 {
		case 6:
			clk.advance(time.Duration(op[1]) * 4 * time.Millisecond)
			m.now += time.Duration(op[1]) * 4 * time.Millisecond
			continue
		case 7:
			r.Expire()
			m.expire()
		default:
			k, off, length, p := fuzzSegment(op, scratch)
			if got, want := r.Segment(k, off, length, p), m.segment(k, off, length, p); got != want {
				t.Fatalf("%s step %d: segment %+v offset %d length %d payload %d: %s, model %s", kind, step, k, off, length, len(p), got, want)
			}
		}
		for _, want := range m.deliver {
			ev, ok := r.TryDequeue()
			if !ok || ev.Key != want.key || !bytes.Equal(ev.Data, want.data) || delivered[ev.Key] {
				t.Fatalf("%s step %d: delivered %v (%v), model %+v, before %v", kind, step, ev, ok, want.key, delivered[want.key])
			}
			delivered[ev.Key] = true
			r.Release(ev)
		}
		m.deliver = m.deliver[:0]
		if ev, ok := r.TryDequeue(); ok {
			t.Fatalf("%s step %d: delivered %+v, the model nothing", kind, step, ev.Key)
		}
	}
	st := r.Stats()
	for why := range numReasons {
		if st.Segments[why] != m.counts[why] {
			t.Errorf("%s: %s %d, model %d", kind, why, st.Segments[why], m.counts[why])
		}
	}
	if st.Received != m.stats.Received || st.Reassembled != m.stats.Reassembled || st.TimedOut != m.stats.TimedOut || st.Evicted != m.stats.Evicted {
		t.Errorf("%s: stats %+v, model %+v", kind, st, m.stats)
	}
}

// fuzzSegment decodes a segment operation; its payload's bytes depend on
// the event number and the offset.
func fuzzSegment(op, scratch []byte) (Key, uint32, uint32, []byte) {
	k := Key{src1, uint16(op[0] >> 4 & 1), uint64(op[1] % 64)}
	if op[0]&8 != 0 {
		k.Src = src2
	}
	length := uint32(k.Number)*31 + 1
	switch b := op[2]; {
	case b >= 252:
		length = fuzzMaxSize + 1
	case b >= 248:
		length = 0
	case b >= 240:
		length = uint32(b) * 7
	}
	off := uint32(binary.BigEndian.Uint16(op[3:])) % (length + 16)
	n := uint32(op[5])
	if n == 255 && off < length {
		n = length - off
	}
	p := scratch[:n]
	for i := range p {
		p[i] = byte(uint32(op[1])*131 + off + uint32(i))
	}
	return k, off, length, p
}
