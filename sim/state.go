package sim

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/dragonet-go/nsc/packet"
)

// Reasons the keyed state counts under its own name.
const (
	// ReasonTimeout: an event not complete within the state's timeout.
	ReasonTimeout = "timeout"
	// ReasonEvicted: the oldest event in progress, dropped to make room
	// under the state's caps.
	ReasonEvicted = "evicted"
)

// keyed is the reference implementation of the model's keyed state
// (docs/language.md, "State"): plain maps, a list of the byte ranges that
// arrived, and the machine's clock. It is written for clarity, as the
// oracle generated reassembly code is tested against.
type keyed struct {
	m      *Machine
	tables []*stateTable
}

type stateTable struct {
	def   *packet.StateDef
	live  map[string]*event
	done  map[string]finished // recently finished keys, to tell late segments
	bytes uint64              // the sum of the live events' lengths
	seq   uint64              // entries made so far, to order them
}

// event is one entry: an event in progress.
type event struct {
	length  uint64
	first   time.Time // when its first segment came
	seq     uint64
	pieces  []piece // disjoint
	arrived uint64  // bytes in pieces
}

type piece struct {
	off  uint64
	data []byte
}

// finished remembers, for one timeout, how an event ended.
type finished struct {
	at       time.Time
	seq      uint64
	complete bool // else it timed out or was evicted
}

func newKeyed(m *Machine, defs []*packet.StateDef) *keyed {
	k := &keyed{m: m}
	for _, d := range defs {
		k.tables = append(k.tables, &stateTable{def: d, live: map[string]*event{}, done: map[string]finished{}})
	}
	return k
}

// Expire drops, in every state, the events whose timeout has passed by the
// machine's clock (place does it too, before it places a segment).
func (m *Machine) Expire() {
	for _, t := range m.keyed.tables {
		m.keyed.expire(t, m.now())
	}
}

// InProgress is, per state, the number of events in progress: begun,
// not yet complete, timed out or evicted.
func (m *Machine) InProgress() map[string]int {
	out := map[string]int{}
	for _, t := range m.keyed.tables {
		out[t.def.Name] = len(t.live)
	}
	return out
}

// SetClock gives the machine its time source, which the keyed state's
// timeouts run on (nsc sim: the capture's timestamps; tests: a logical
// clock). Without one the machine uses time.Now.
func (m *Machine) SetClock(now func() time.Time) { m.clock = now }

func (m *Machine) now() time.Time {
	if m.clock == nil {
		return time.Now()
	}
	return m.clock()
}

// segment is what a place reads from the packet.
type segment struct {
	key                  string
	offset, length, size uint64
	payload              []byte
}

// Place runs `place` (packet.States).
func (k *keyed) Place(o *packet.Op, p *packet.Packet) int {
	t := k.tables[o.State]
	sg, ok := t.segment(o, p)
	if !ok {
		return packet.Malformed
	}
	now := k.m.now()
	k.expire(t, now)
	if port := t.refuse(sg); port >= 0 {
		return port
	}
	ev := t.live[sg.key]
	if ev == nil {
		ev = k.start(t, sg.key, sg.length, now)
	}
	ev.pieces = append(ev.pieces, piece{sg.offset, bytes.Clone(sg.payload)})
	ev.arrived += sg.size
	if ev.arrived < ev.length {
		return packet.PlacePlaced
	}
	t.finish(sg.key, now, true)
	p.Replace(ev.bytes())
	return packet.PlaceComplete
}

// segment evaluates the key, the event length, the offset and the payload.
func (t *stateTable) segment(o *packet.Op, p *packet.Packet) (segment, bool) {
	key, ok := t.key(p)
	offset, ok1 := evalU64(o.Offset.Eval(p, nil))
	length, ok2 := evalU64(t.def.Length.Eval(p, nil))
	rest := uint64(max(len(p.Data)-p.Cursor, 0))
	size, ok3 := rest, true
	if o.Size != nil {
		size, ok3 = evalU64(o.Size.Eval(p, nil))
	}
	if !ok || !ok1 || !ok2 || !ok3 || size > rest {
		return segment{}, false
	}
	return segment{key, offset, length, size, p.Data[p.Cursor : p.Cursor+int(size)]}, true
}

// refuse returns the port of a segment that is not placed, in the order
// docs/language.md §10.17 gives, or -1 for one to place.
func (t *stateTable) refuse(sg segment) int {
	switch {
	case sg.length == 0:
		return packet.PlaceZeroLength
	case sg.length > t.def.Max:
		return packet.PlaceTooLarge
	case sg.size > sg.length || sg.offset > sg.length-sg.size:
		return packet.PlaceOutOfBounds
	}
	ev := t.live[sg.key]
	if ev == nil {
		f, ok := t.done[sg.key]
		switch {
		case ok && f.complete:
			return packet.PlaceDuplicate
		case ok:
			return packet.PlaceLate
		case sg.size == 0:
			return packet.PlaceDuplicate // brings no byte
		}
		return -1
	}
	if ev.length != sg.length {
		return packet.PlaceLengthMismatch
	}
	switch have := ev.covered(sg.offset, sg.size); {
	case have == sg.size:
		return packet.PlaceDuplicate
	case have > 0:
		return packet.PlaceOverlap
	}
	return -1
}

// evalU64 is an expression's value, saturated to 64 bits.
func evalU64(v packet.Value, ok bool) (uint64, bool) {
	if v.Hi != 0 {
		return math.MaxUint64, ok
	}
	return v.Lo, ok
}

// key encodes the key expressions' values.
func (t *stateTable) key(p *packet.Packet) (string, bool) {
	var b []byte
	for _, e := range t.def.Keys {
		v, ok := e.Eval(p, nil)
		if !ok {
			return "", false
		}
		b = binary.BigEndian.AppendUint64(b, v.Hi)
		b = binary.BigEndian.AppendUint64(b, v.Lo)
	}
	return string(b), true
}

// start makes an entry for a new event, evicting the oldest ones first
// until it fits under the caps.
func (k *keyed) start(t *stateTable, key string, length uint64, now time.Time) *event {
	for len(t.live) > 0 && (len(t.live) >= t.def.Events || t.bytes+length > t.def.Bytes) {
		oldest := ""
		for key, ev := range t.live {
			if oldest == "" || ev.seq < t.live[oldest].seq {
				oldest = key
			}
		}
		t.finish(oldest, now, false)
		k.m.drops[DropKey{t.def.Name, ReasonEvicted}]++ // another event's loss, not this frame's
	}
	t.seq++
	ev := &event{length: length, first: now, seq: t.seq}
	t.live[key] = ev
	t.bytes += length
	return ev
}

// finish ends a live event and remembers how it ended.
func (t *stateTable) finish(key string, now time.Time, complete bool) {
	t.bytes -= t.live[key].length
	delete(t.live, key)
	t.seq++
	t.done[key] = finished{at: now, seq: t.seq, complete: complete}
	for len(t.done) > t.def.Events { // forget the oldest past the cap
		oldest := ""
		for key, f := range t.done {
			if oldest == "" || f.seq < t.done[oldest].seq {
				oldest = key
			}
		}
		delete(t.done, oldest)
	}
}

// expire drops the events whose timeout has passed, and forgets events
// finished longer than a timeout ago.
func (k *keyed) expire(t *stateTable, now time.Time) {
	var gone []string
	for key, ev := range t.live {
		if now.Sub(ev.first) >= t.def.Timeout {
			gone = append(gone, key)
		}
	}
	slices.SortFunc(gone, func(a, b string) int { return cmp.Compare(t.live[a].seq, t.live[b].seq) })
	for _, key := range gone { // oldest first, so what is remembered does not depend on map order
		t.finish(key, now, false)
		k.m.drops[DropKey{t.def.Name, ReasonTimeout}]++ // not this frame's fate
	}
	for key, f := range t.done {
		if now.Sub(f.at) >= t.def.Timeout {
			delete(t.done, key)
		}
	}
}

// covered counts the bytes of [off, off+n) that have arrived.
func (ev *event) covered(off, n uint64) uint64 {
	var c uint64
	for _, pc := range ev.pieces {
		lo, hi := max(off, pc.off), min(off+n, pc.off+uint64(len(pc.data)))
		if lo < hi {
			c += hi - lo
		}
	}
	return c
}

// bytes assembles a complete event.
func (ev *event) bytes() []byte {
	b := make([]byte, ev.length)
	for _, pc := range ev.pieces {
		copy(b[pc.off:], pc.data)
	}
	return b
}
