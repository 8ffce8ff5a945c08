package reasm

import (
	"context"
	"fmt"
	"net/netip"
	"time"
	"unsafe"

	"github.com/dragonet-go/nsc/ejfat"
)

// Defaults of the zero Config fields.
const (
	DefaultTimeout      = 500 * time.Millisecond
	DefaultMaxEventSize = 64 << 20
	DefaultMaxEvents    = 1024
	DefaultMaxBytes     = 1 << 30
	DefaultTombstones   = 16384
	DefaultQueue        = 1024
)

// Config sets a Reassembler's bounds; a zero field takes its default.
type Config struct {
	// Timeout is how long after its first segment an event may take to
	// complete before it is dropped as timed out.
	Timeout time.Duration
	// MaxEventSize is the largest event length accepted.
	MaxEventSize uint32
	// MaxEvents caps the incomplete events held; a new event past it
	// evicts an incomplete one (the oldest of those with a single segment,
	// else the oldest).
	MaxEvents int
	// MaxBytes caps the bytes of every buffer the reassembler holds: of
	// events in progress, of complete events until the application
	// releases them, and free ones kept for reuse. A buffer that would
	// pass it first lets free buffers go, then evicts incomplete events as
	// MaxEvents does.
	MaxBytes int64
	// Tombstones is how many finished keys (delivered or dropped) are
	// remembered, so that their late or duplicate segments are refused
	// instead of beginning the event again.
	Tombstones int
	// Queue is how many complete events wait for the application; a
	// complete event finding the queue full is dropped as an enqueue error.
	Queue int
	// Record is how arrived ranges are kept (Intervals by default).
	Record RecordKind
	// Now is the clock (time.Now by default); tests inject their own.
	Now func() time.Time
}

func (c *Config) fill() error {
	set := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	set(&c.MaxEvents, DefaultMaxEvents)
	set(&c.Tombstones, DefaultTombstones)
	set(&c.Queue, DefaultQueue)
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxEventSize == 0 {
		c.MaxEventSize = DefaultMaxEventSize
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if _, size := bufClass(c.MaxEventSize); int64(size) > c.MaxBytes {
		return fmt.Errorf("reasm: the buffer of a %d-byte event (%d bytes) exceeds MaxBytes %d", c.MaxEventSize, size, c.MaxBytes)
	}
	if c.Timeout < 0 || c.MaxEvents < 0 || c.Tombstones < 0 || c.Queue < 0 || c.Record > Bitmap {
		return fmt.Errorf("reasm: negative bound or unknown record kind in %+v", *c)
	}
	return nil
}

// Memory is the most memory a Reassembler of c holds, whatever segments
// it gets: MaxBytes of buffers (complete events the application holds
// until Release included), the records of the events in progress (at most
// 1/8 of their buffers), what the pooled events keep of theirs, and the
// hash tables. (Event structs the application never releases add theirs.)
func (c Config) Memory() (int64, error) {
	if err := c.fill(); err != nil {
		return 0, err
	}
	events := int64(c.MaxEvents + c.Queue)
	tables := 2 * (int64(c.MaxEvents)*int64(unsafe.Sizeof(slot[*Event]{})) +
		int64(c.Tombstones)*int64(unsafe.Sizeof(slot[Reason]{})+unsafe.Sizeof(Key{})))
	return c.MaxBytes + c.MaxBytes/8 + events*(keepRecord+int64(unsafe.Sizeof(Event{}))) + tables, nil
}

// Key names an event: the sender's address, the data id and the event
// number.
type Key struct {
	Src    netip.Addr
	DataID uint16
	Number uint64
}

// stageMax is the longest event whose buffer its first segment takes. A
// longer event's first segment is held alone, in a buffer of its own size,
// until a second one arrives: a datagram claiming a long event costs the
// bytes it carries, not the bytes it claims.
const stageMax = 64 << 10

// Event is an event being reassembled, and once complete, handed to the
// application by Dequeue: Data holds its bytes until Release.
type Event struct {
	Key
	Data []byte

	buf      []byte // the event's, or while staged the first segment's
	staged   bool   // buf holds only the first segment, at stageOff
	stageOff uint32
	rec      record // reset once buf is the event's
	length   uint32
	arrived  uint32
	deadline int64 // ns on the reassembler's clock
	pooled   bool
	// Every event in progress is on the age list, oldest first; one with a
	// single segment so far is on the fresh list too, the first evicted.
	older, newer               *Event
	fresh                      bool
	fresherOlder, fresherNewer *Event
}

// Reassembler reassembles the segments of one receive thread. Segment,
// Datagram and Expire are called from one goroutine; Dequeue, TryDequeue,
// Release, Stats and Fill from any.
type Reassembler struct {
	cfg    Config
	start  time.Time
	now    int64
	events table[*Event]
	n      int    // events in progress
	last   *Event // the event of the previous segment
	age    Event  // sentinel of the incomplete events, oldest first
	fresh  Event  // sentinel of those with a single segment, oldest first
	// stageMax is the longest event whose first segment takes its buffer
	// (the constant; the fuzz test lowers it to reach staging).
	stageMax uint32
	tombs    tombstones
	pool     pool
	queue    chan *Event
	c        counters
}

// New makes a Reassembler of cfg.
func New(cfg Config) (*Reassembler, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	r := &Reassembler{
		cfg:      cfg,
		start:    cfg.Now(),
		events:   newTable[*Event](cfg.MaxEvents),
		tombs:    newTombstones(cfg.Tombstones),
		pool:     pool{limit: cfg.MaxBytes, kind: cfg.Record},
		queue:    make(chan *Event, cfg.Queue),
		stageMax: stageMax,
	}
	r.age.older, r.age.newer = &r.age, &r.age
	r.fresh.fresherOlder, r.fresh.fresherNewer = &r.fresh, &r.fresh
	return r, nil
}

// Datagram takes one UDP payload as a receiver gets it, RE header and
// segment, from the sender at src. (A member registered with keepLbHeader
// gets the LB header in front: pass the bytes after it.)
func (r *Reassembler) Datagram(src netip.Addr, b []byte) Reason {
	inc(&r.c.packets, 1)
	inc(&r.c.bytes, uint64(len(b)))
	switch {
	case len(b) < ejfat.RELen:
		return r.drop(Short)
	case !ejfat.RE(b).Valid():
		return r.drop(BadHeader)
	}
	h := ejfat.RE(b)
	return r.segment(Key{src, h.DataID(), h.EventNumber()}, h.Offset(), h.Length(), b[ejfat.RELen:])
}

// Segment takes one segment whose RE header the caller decoded: the event's
// key, the payload's offset in the event, the event's length.
func (r *Reassembler) Segment(k Key, offset, length uint32, payload []byte) Reason {
	inc(&r.c.packets, 1)
	inc(&r.c.bytes, uint64(len(payload)))
	return r.segment(k, offset, length, payload)
}

func (r *Reassembler) segment(k Key, offset, length uint32, payload []byte) Reason {
	switch end := uint64(offset) + uint64(len(payload)); {
	case len(payload) == 0:
		return r.drop(Empty)
	case length == 0:
		return r.drop(ZeroLength)
	case length > r.cfg.MaxEventSize:
		return r.drop(TooLarge)
	case end > uint64(length):
		return r.drop(OutOfBounds)
	}
	ev := r.last
	if ev == nil || ev.Key != k {
		if ev, _ = r.events.get(k); ev == nil {
			return r.first(k, offset, length, payload)
		}
		r.last = ev
	}
	if length != ev.length {
		return r.drop(LengthMismatch)
	}
	return r.place(ev, offset, payload)
}

// first begins the event k with its first segment, unless k finished
// lately.
func (r *Reassembler) first(k Key, offset, length uint32, payload []byte) Reason {
	if why, ok := r.tombs.lookup(k); ok {
		return r.drop(why)
	}
	r.Expire()
	for r.n >= r.cfg.MaxEvents {
		r.evict(r.victim(nil))
	}
	staged := length > r.stageMax && uint32(len(payload)) < length
	n := length
	if staged {
		n = uint32(len(payload))
	}
	buf := r.buffer(n, nil)
	if buf == nil {
		return r.drop(NoMemory)
	}
	ev := r.pool.event()
	ev.Key, ev.length, ev.buf, ev.staged, ev.arrived = k, length, buf, staged, 0
	ev.deadline = r.now + int64(r.cfg.Timeout)
	ev.older, ev.newer = r.age.older, &r.age
	r.age.older.newer, r.age.older = ev, ev
	ev.fresh, ev.fresherOlder, ev.fresherNewer = true, r.fresh.fresherOlder, &r.fresh
	r.fresh.fresherOlder.fresherNewer, r.fresh.fresherOlder = ev, ev
	r.events.put(k, ev)
	r.n++
	r.last = ev
	inc(&r.c.received, 1)
	if staged {
		ev.stageOff = offset
		ev.arrived = uint32(copy(buf, payload))
		inc(&r.c.segments[Placed], 1)
		return Placed
	}
	ev.Data = buf[:length:length]
	ev.rec.reset(length)
	return r.place(ev, offset, payload)
}

// buffer returns a buffer of at least n bytes from the pool, evicting
// incomplete events other than keep while the pool is at MaxBytes; nil
// when there are none left to evict.
func (r *Reassembler) buffer(n uint32, keep *Event) []byte {
	for {
		if b := r.pool.get(n); b != nil {
			return b
		}
		v := r.victim(keep)
		if v == nil {
			return nil
		}
		r.evict(v)
	}
}

// victim is the incomplete event evicted first, other than keep: the
// oldest with a single segment (what a flood of first segments leaves),
// else the oldest.
func (r *Reassembler) victim(keep *Event) *Event {
	for ev := r.fresh.fresherNewer; ev != &r.fresh; ev = ev.fresherNewer {
		if ev != keep {
			return ev
		}
	}
	for ev := r.age.newer; ev != &r.age; ev = ev.newer {
		if ev != keep {
			return ev
		}
	}
	return nil
}

func (r *Reassembler) evict(ev *Event) {
	inc(&r.c.evicted, 1)
	r.finish(ev, Late)
}

// place copies a checked segment into ev if its bytes are new, and hands
// the event over once every byte arrived.
func (r *Reassembler) place(ev *Event, offset uint32, payload []byte) Reason {
	end := offset + uint32(len(payload))
	if ev.staged {
		if why := r.promote(ev, offset, end); why != Placed {
			return r.drop(why)
		}
	}
	if why := ev.rec.add(offset, end); why != Placed {
		return r.drop(why)
	}
	if ev.fresh && ev.arrived > 0 {
		r.unfresh(ev)
	}
	copy(ev.Data[offset:end], payload)
	ev.arrived += uint32(len(payload))
	if ev.arrived < ev.length {
		inc(&r.c.segments[Placed], 1)
		return Placed
	}
	inc(&r.c.reassembled, 1)
	inc(&r.c.segments[Completed], 1)
	r.finish(ev, Duplicate)
	select {
	case r.queue <- ev:
	default:
		inc(&r.c.enqueueErrors, 1)
		r.pool.put(ev)
	}
	return Completed
}

// promote gives a staged event the buffer of its length, once a segment
// with new bytes [lo, hi) arrives, and moves the first segment into it;
// NoMemory (and the event evicted) when there is no buffer to be had.
func (r *Reassembler) promote(ev *Event, lo, hi uint32) Reason {
	slo, shi := ev.stageOff, ev.stageOff+ev.arrived
	switch {
	case slo <= lo && hi <= shi:
		return Duplicate
	case lo < shi && slo < hi:
		return Overlap
	}
	buf := r.buffer(ev.length, ev)
	if buf == nil {
		r.evict(ev)
		return NoMemory
	}
	copy(buf[slo:shi], ev.buf[:ev.arrived])
	r.pool.putBuffer(ev.buf)
	ev.buf, ev.staged, ev.Data = buf, false, buf[:ev.length:ev.length]
	ev.rec.reset(ev.length)
	ev.rec.add(slo, shi)
	return Placed
}

// unfresh takes ev off the fresh list.
func (r *Reassembler) unfresh(ev *Event) {
	ev.fresherOlder.fresherNewer, ev.fresherNewer.fresherOlder = ev.fresherNewer, ev.fresherOlder
	ev.fresh, ev.fresherOlder, ev.fresherNewer = false, nil, nil
}

// finish forgets the event in progress ev, remembering its key as a
// tombstone whose segments are dropped for why: Duplicate once delivered,
// Late once dropped (whose buffer goes back to the pool).
func (r *Reassembler) finish(ev *Event, why Reason) {
	ev.older.newer, ev.newer.older = ev.newer, ev.older
	ev.older, ev.newer = nil, nil
	if ev.fresh {
		r.unfresh(ev)
	}
	r.events.del(ev.Key)
	r.n--
	if r.last == ev {
		r.last = nil
	}
	r.tombs.add(ev.Key, why)
	if why == Late {
		r.pool.put(ev)
	}
}

func (r *Reassembler) drop(why Reason) Reason {
	inc(&r.c.segments[why], 1)
	return why
}

// Expire reads the clock and drops the events whose timeout passed. The
// clock is read only here, and Segment calls it only for an event's first
// segment: a receive loop calls Expire after each batch of datagrams (or
// read timeout), which bounds how late past its timeout an event is
// dropped.
func (r *Reassembler) Expire() {
	r.now = int64(r.cfg.Now().Sub(r.start))
	for ev := r.age.newer; ev != &r.age && ev.deadline <= r.now; ev = r.age.newer {
		inc(&r.c.timedOut, 1)
		r.finish(ev, Late)
	}
}

// Dequeue waits for the next complete event, or for ctx to end. The
// application owns the event until it passes it to Release.
func (r *Reassembler) Dequeue(ctx context.Context) (*Event, error) {
	select {
	case ev := <-r.queue:
		r.c.dequeued.Add(1)
		return ev, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TryDequeue returns the next complete event if one is waiting.
func (r *Reassembler) TryDequeue() (*Event, bool) {
	select {
	case ev := <-r.queue:
		r.c.dequeued.Add(1)
		return ev, true
	default:
		return nil, false
	}
}

// Release returns a dequeued event's buffer for reuse; ev and its Data must
// not be used afterwards. Releasing an event again does nothing.
func (r *Reassembler) Release(ev *Event) { r.pool.put(ev) }

// Fill is how full the queue of complete events is, 0 to 1: the fill
// percent of the control plane's SendState.
func (r *Reassembler) Fill() float64 { return float64(len(r.queue)) / float64(cap(r.queue)) }

// Stats returns the counters.
func (r *Reassembler) Stats() Stats { return r.c.snapshot() }

// tombstones are the keys of finished events, each with the reason its
// later segments are dropped for, the oldest forgotten first.
type tombstones struct {
	why  table[Reason]
	ring []Key
	next int
}

func newTombstones(n int) tombstones {
	return tombstones{why: newTable[Reason](n), ring: make([]Key, 0, n)}
}

func (t *tombstones) lookup(k Key) (Reason, bool) { return t.why.get(k) }

func (t *tombstones) add(k Key, why Reason) {
	if len(t.ring) < cap(t.ring) {
		t.ring = append(t.ring, k)
	} else {
		t.why.del(t.ring[t.next])
		t.ring[t.next] = k
		t.next = (t.next + 1) % len(t.ring)
	}
	t.why.put(k, why)
}
