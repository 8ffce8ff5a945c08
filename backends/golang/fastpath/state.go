package fastpath

import (
	"math"
	"time"

	"github.com/dragonet-go/nsc/packet"
)

// MaxStateKeys is the most key expressions a state of generated code has:
// each takes two words of a StateKey.
const MaxStateKeys = 4

// StateKey is an entry's key: each key expression's value, high word
// first, in the state's order.
type StateKey [2 * MaxStateKeys]uint64

// State is keyed state (docs/language.md, "State") for generated code: the
// rules of the interpreter's reference (sim), which it is tested against,
// with entries and buffers reused rather than made per segment. Timeouts
// and evictions are counted in TimedOut and Evicted; the generated
// pipeline reports them as drops under the state's name.
type State struct {
	def *packet.StateDef
	// Clock is the time source of the timeouts (nil: time.Now), until
	// Tick fixes the time.
	Clock func() time.Time
	// ticked says Tick fixed the time at tick (State.now's).
	ticked bool
	tick   int64

	live  map[StateKey]*entry
	age   entryList // live entries, oldest (smallest seq) first
	done  map[StateKey]doneMark
	ended []ended // finished keys in the order they finished, from ended[gone]
	gone  int     // entries at the front of ended that left it
	bytes uint64  // the live entries' lengths
	seq   uint64
	// next is at most the earliest expiry of a live entry or a finished
	// key: before it, expire has nothing to do. A new entry lowers it; a
	// finished key expires later than its entry would have, which next
	// covered already.
	next int64

	free    []*entry
	held    *entry           // the entry whose event the last complete handed out
	last    *entry           // the live entry the last segment went to: the next one's, mostly
	buffers map[int][][]byte // by capacity class

	TimedOut, Evicted uint64
}

type entry struct {
	key             StateKey
	length, arrived uint64
	expires         int64 // its first segment's time + the timeout (State.now)
	seq             uint64
	spans           []span // arrived byte ranges, sorted, disjoint, not touching
	buf             []byte
	older, newer    *entry
}

type span struct{ lo, hi uint64 }

type entryList struct{ head, tail *entry }

type doneMark struct {
	seq      uint64
	complete bool
}

type ended struct {
	key     StateKey
	seq     uint64
	expires int64 // when it finished + the timeout (State.now)
}

// NewState makes def's state, empty.
func NewState(def *packet.StateDef) *State {
	return &State{def: def, next: math.MaxInt64, live: map[StateKey]*entry{}, done: map[StateKey]doneMark{}, buffers: map[int][][]byte{}}
}

// epoch is where the default clock's readings count from.
var epoch = time.Now()

// now is the time in nanoseconds: Clock's Unix time, or the monotonic time
// since epoch, so that the expiry checks of every segment compare integers
// (time.Time's comparisons are calls).
func (s *State) now() int64 {
	if s.ticked { // inlined
		return s.tick
	}
	return s.read()
}

// read reads the clock, for now.
func (s *State) read() int64 {
	if s.Clock == nil {
		return int64(time.Since(epoch))
	}
	return s.Clock().UnixNano()
}

// Tick fixes the state's time at now until the next Tick, for a caller
// that reads the clock once a batch of frames rather than at every
// segment (a receiver after each recvmmsg); Clock is not read after it.
func (s *State) Tick(now time.Time) {
	s.ticked = true
	if s.Clock == nil {
		s.tick = int64(now.Sub(epoch))
		return
	}
	s.tick = now.UnixNano()
}

// Place places payload, the segment at offset of the event of length
// under key, and returns the place operation's port (packet.PlacePlaced …)
// and, for packet.PlaceComplete, the event's bytes: valid until the next
// Place on this state.
func (s *State) Place(key *StateKey, length, offset uint64, payload []byte) (int, []byte) {
	// Most segments come right after the last one of the last event and
	// do not complete it: those take this path, whose few live values
	// stay in registers. The last entry's key is compared word by word
	// in line (the array comparison is a call of memequal).
	now, size := s.now(), uint64(len(payload))
	if e := s.last; e != nil && s.held == nil && now < s.next && e.length == length &&
		(e.key[0]^key[0])|(e.key[1]^key[1])|(e.key[2]^key[2])|(e.key[3]^key[3])|
			(e.key[4]^key[4])|(e.key[5]^key[5])|(e.key[6]^key[6])|(e.key[7]^key[7]) == 0 {
		if k := len(e.spans) - 1; size != 0 && k >= 0 && e.spans[k].hi == offset && e.arrived+size < length && size <= length-offset {
			copy(e.buf[offset:], payload)
			e.spans[k].hi += size
			e.arrived += size
			return packet.PlacePlaced, nil
		}
	}
	return s.place(key, length, offset, payload, now)
}

// place is Place for any segment, at the time now.
func (s *State) place(key *StateKey, length, offset uint64, payload []byte, now int64) (int, []byte) {
	if s.held != nil {
		s.release(s.held)
		s.held = nil
	}
	s.expire(now)
	size := uint64(len(payload))
	switch {
	case length == 0:
		return packet.PlaceZeroLength, nil
	case length > s.def.Max:
		return packet.PlaceTooLarge, nil
	case size > length || offset > length-size:
		return packet.PlaceOutOfBounds, nil
	}
	e := s.last
	if e == nil || e.key != *key {
		e = s.live[*key]
	}
	next := -1 // the range the segment extends, when it comes right after the last one
	if e == nil {
		if f, ok := s.done[*key]; ok {
			if f.complete {
				return packet.PlaceDuplicate, nil
			}
			return packet.PlaceLate, nil
		}
		if size == 0 {
			return packet.PlaceDuplicate, nil // brings no byte
		}
		e = s.start(key, length, now)
	} else if e.length != length {
		return packet.PlaceLengthMismatch, nil
	} else if k := len(e.spans) - 1; size != 0 && k >= 0 && e.spans[k].hi == offset {
		// Bytes right after the last ones that arrived overlap none (the
		// ranges are sorted): in-order segments skip the count.
		next = k
	} else {
		switch have := e.covered(offset, offset+size); {
		case have == size:
			return packet.PlaceDuplicate, nil
		case have > 0:
			return packet.PlaceOverlap, nil
		}
	}
	s.last = e
	copy(e.buf[offset:], payload)
	if next >= 0 {
		e.spans[next].hi = offset + size
	} else {
		e.add(offset, offset+size)
	}
	e.arrived += size
	if e.arrived < e.length {
		return packet.PlacePlaced, nil
	}
	s.finish(e, now, true)
	s.held = e
	return packet.PlaceComplete, e.buf[:e.length]
}

// Keep takes the event the last Place completed out of the state, so it
// stays valid past the next Place, until Reuse gives its buffer back: an
// application that hands events to another goroutine then needs no copy.
// It returns nil when the last Place completed nothing.
func (s *State) Keep() []byte {
	e := s.held
	if e == nil {
		return nil
	}
	b := e.buf[:e.length]
	e.buf = nil
	s.free = append(s.free, e)
	s.held = nil
	return b
}

// Reuse gives back, for events to come, a buffer Keep took.
func (s *State) Reuse(b []byte) {
	b = b[:cap(b)]
	s.buffers[len(b)] = append(s.buffers[len(b)], b)
}

// start makes the entry of a new event, evicting the oldest ones first
// until it fits under the caps.
func (s *State) start(key *StateKey, length uint64, now int64) *entry {
	for s.age.head != nil && (len(s.live) >= s.def.Events || s.bytes+length > s.def.Bytes) {
		old := s.age.head
		s.finish(old, now, false)
		s.release(old)
		s.Evicted++
	}
	s.seq++
	e := s.entry(length)
	e.key, e.length, e.arrived, e.expires, e.seq = *key, length, 0, now+int64(s.def.Timeout), s.seq
	s.next = min(s.next, e.expires)
	s.live[*key] = e
	s.bytes += length
	s.age.push(e)
	return e
}

// finish ends a live entry and remembers, for one timeout and at most
// Events keys, how it ended.
func (s *State) finish(e *entry, now int64, complete bool) {
	if s.last == e {
		s.last = nil
	}
	s.bytes -= e.length
	delete(s.live, e.key)
	s.age.remove(e)
	s.seq++
	s.done[e.key] = doneMark{seq: s.seq, complete: complete}
	// Full with half of it gone: move the rest to the front, not to a
	// new array (amortized, one move per entry gone).
	if len(s.ended) == cap(s.ended) && s.gone >= len(s.ended)/2 {
		s.ended = s.ended[:copy(s.ended, s.ended[s.gone:])]
		s.gone = 0
	}
	s.ended = append(s.ended, ended{e.key, s.seq, now + int64(s.def.Timeout)})
	for len(s.done) > s.def.Events {
		s.forgetOldest()
	}
}

// forgetOldest forgets the finished key that finished first.
func (s *State) forgetOldest() {
	for s.gone < len(s.ended) {
		x := s.ended[s.gone]
		s.gone++
		if f, ok := s.done[x.key]; ok && f.seq == x.seq {
			delete(s.done, x.key)
			return
		}
	}
}

// expire drops the entries whose timeout has passed, oldest first, and
// forgets the keys that finished longer than a timeout ago.
//
// It runs at every segment, so it compares now with times the timeout
// was added to once, and reads a finished key's from ended, not done:
// each key in done has its one entry in ended, which leaves with it.
func (s *State) expire(now int64) {
	if now >= s.next { // one comparison a segment, inlined
		s.expireDue(now)
	}
}

// expireDue is expire once something may be due.
func (s *State) expireDue(now int64) {
	defer s.schedule()
	for e := s.age.head; e != nil && now >= e.expires; e = s.age.head {
		s.finish(e, now, false)
		s.release(e)
		s.TimedOut++
	}
	for s.gone < len(s.ended) && now >= s.ended[s.gone].expires {
		x := s.ended[s.gone]
		if f, ok := s.done[x.key]; ok && f.seq == x.seq {
			delete(s.done, x.key)
		}
		s.gone++
	}
}

// schedule sets next to the earliest expiry, that of the head of age or
// of ended.
func (s *State) schedule() {
	s.next = math.MaxInt64
	if e := s.age.head; e != nil {
		s.next = e.expires
	}
	if s.gone < len(s.ended) {
		s.next = min(s.next, s.ended[s.gone].expires)
	}
}

// covered counts the bytes of [lo, hi) that have arrived.
func (e *entry) covered(lo, hi uint64) uint64 {
	var c uint64
	for _, sp := range e.spans {
		if a, b := max(lo, sp.lo), min(hi, sp.hi); a < b {
			c += b - a
		}
	}
	return c
}

// add records [lo, hi), which overlaps no arrived range and does not
// follow the last one (Place extends that one itself), merging it with
// the ranges it touches.
func (e *entry) add(lo, hi uint64) {
	i := 0
	for i < len(e.spans) && e.spans[i].hi < lo {
		i++
	}
	switch {
	case i < len(e.spans) && e.spans[i].hi == lo:
		e.spans[i].hi = hi
		if i+1 < len(e.spans) && e.spans[i+1].lo == hi {
			e.spans[i].hi = e.spans[i+1].hi
			e.spans = append(e.spans[:i+1], e.spans[i+2:]...)
		}
	case i < len(e.spans) && e.spans[i].lo == hi:
		e.spans[i].lo = lo
	default:
		e.spans = append(e.spans, span{})
		copy(e.spans[i+1:], e.spans[i:])
		e.spans[i] = span{lo, hi}
	}
}

// entry takes an entry with a buffer of at least n bytes from the free
// lists.
func (s *State) entry(n uint64) *entry {
	var e *entry
	if k := len(s.free); k > 0 {
		e, s.free = s.free[k-1], s.free[:k-1]
	} else {
		e = &entry{}
	}
	c := class(n)
	if l := s.buffers[c]; len(l) > 0 {
		e.buf, s.buffers[c] = l[len(l)-1], l[:len(l)-1]
	} else {
		e.buf = make([]byte, c)
	}
	e.spans = e.spans[:0]
	return e
}

// release gives an ended entry's buffer and the entry back.
func (s *State) release(e *entry) {
	s.buffers[cap(e.buf)] = append(s.buffers[cap(e.buf)], e.buf)
	e.buf = nil
	s.free = append(s.free, e)
}

// class rounds a buffer size up to a power of two (at least 64 bytes), so
// that buffers of events of similar lengths are reused.
func class(n uint64) int {
	c := 64
	for uint64(c) < n {
		c <<= 1
	}
	return c
}

func (l *entryList) push(e *entry) {
	e.older, e.newer = l.tail, nil
	if l.tail != nil {
		l.tail.newer = e
	} else {
		l.head = e
	}
	l.tail = e
}

func (l *entryList) remove(e *entry) {
	if e.older != nil {
		e.older.newer = e.newer
	} else {
		l.head = e.newer
	}
	if e.newer != nil {
		e.newer.older = e.older
	} else {
		l.tail = e.older
	}
	e.older, e.newer = nil, nil
}

// InProgress is the number of events begun and not yet complete, timed
// out or evicted.
func (s *State) InProgress() int { return len(s.live) }

// Within reports whether data lies in buf's array up to its end, as the
// frame Process got and what pushes and pops made of it do; an event a
// place completed does not.
func Within(buf, data []byte) bool {
	buf = buf[:cap(buf)]
	return cap(data) > 0 && cap(data) <= len(buf) && &buf[len(buf)-cap(data)] == &data[:cap(data)][0]
}

// Rebase copies data into *store (grown as needed) with packet.Headroom
// bytes before and after it, as the interpreter holds a completed event,
// and returns the store and data's offset and length in it: a push in
// front of the event then has room.
func Rebase(store *[]byte, data []byte) (buf []byte, off, n int) {
	need := 2*packet.Headroom + len(data)
	if cap(*store) < need {
		*store = make([]byte, need)
	}
	buf = (*store)[:cap(*store)]
	copy(buf[packet.Headroom:], data)
	return buf, packet.Headroom, len(data)
}

// Saturated is v as a uint64, a value above 64 bits as the largest one.
func Saturated(v packet.Value) uint64 {
	if v.Hi != 0 {
		return ^uint64(0)
	}
	return v.Lo
}

// EachState calls f for the states' timeouts and evictions, which the
// interpreter counts as drops under the state's name.
func EachState(states []*State, f func(kind, name, reason string, n uint64)) {
	for _, s := range states {
		if s.TimedOut > 0 {
			f(CountDrop, s.def.Name, "timeout", s.TimedOut)
		}
		if s.Evicted > 0 {
			f(CountDrop, s.def.Name, "evicted", s.Evicted)
		}
	}
}
