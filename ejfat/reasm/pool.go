package reasm

import (
	"math/bits"
	"sync"
)

// minClass is the smallest buffer the pool hands out.
const minClass = 4096

// numClasses is the number of buffer size classes, up to 2^32 bytes.
const numClasses = 4*21 + 1

// bufClass rounds an event length up to its buffer size class: four
// classes per doubling (5/8, 6/8, 7/8, 8/8 of the next power of two, at
// least minClass), so a buffer is at most 25% longer than its event and
// freed buffers of nearby lengths are shared. It returns the class's index
// and size.
func bufClass(n uint32) (int, int) {
	if n <= minClass {
		return 0, minClass
	}
	k := bits.Len32(n - 1) // 2^(k-1) < n <= 2^k
	step := 1 << (k - 3)
	j := (int(n) + step - 1) / step // 5..8
	return 4*(k-12) + j - 8, j * step
}

// pool owns every buffer of a reassembler — of events in progress, of
// first segments held alone, of complete events until the application
// releases them, and the free ones kept for reuse by size class — and
// keeps their bytes under limit: a buffer is made only when it fits, free
// buffers of other classes are let go to make room, and when none are
// left get fails and the caller evicts an event. It also recycles the
// Event structs. The application releases events from its own goroutine,
// hence the lock (taken once per buffer, never per segment).
type pool struct {
	mu     sync.Mutex
	free   [numClasses][][]byte
	events []*Event
	bytes  int64 // of every buffer made and not let go
	idle   int64 // of the free ones
	limit  int64
	kind   RecordKind
}

// get returns a buffer of at least n bytes (its class's size), nil when
// one would take the pool past its limit.
func (p *pool) get(n uint32) []byte {
	c, size := bufClass(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := len(p.free[c]); l > 0 {
		b := p.free[c][l-1]
		p.free[c] = p.free[c][:l-1]
		p.idle -= int64(size)
		return b
	}
	for i := numClasses - 1; p.bytes+int64(size) > p.limit && p.idle > 0; {
		if l := len(p.free[i]); l > 0 {
			b := p.free[i][l-1]
			p.free[i][l-1] = nil
			p.free[i] = p.free[i][:l-1]
			p.bytes -= int64(len(b))
			p.idle -= int64(len(b))
			continue
		}
		i--
	}
	if p.bytes+int64(size) > p.limit {
		return nil
	}
	p.bytes += int64(size)
	return make([]byte, size)
}

// putBuffer keeps b for reuse.
func (p *pool) putBuffer(b []byte) {
	p.mu.Lock()
	p.keep(b)
	p.mu.Unlock()
}

// keep adds b to the free buffers; the caller holds the lock.
func (p *pool) keep(b []byte) {
	c, _ := bufClass(uint32(len(b)))
	p.free[c] = append(p.free[c], b)
	p.idle += int64(len(b))
}

// event returns an Event struct, buffer-less, with its record.
func (p *pool) event() *Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := len(p.events); l > 0 {
		ev := p.events[l-1]
		p.events = p.events[:l-1]
		ev.pooled = false
		return ev
	}
	return &Event{rec: newRecord(p.kind)}
}

// put keeps ev and its buffer for reuse. Putting an event twice puts it
// once.
func (p *pool) put(ev *Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.pooled {
		return
	}
	if ev.buf != nil {
		p.keep(ev.buf)
	}
	ev.pooled, ev.Data, ev.buf = true, nil, nil
	ev.rec.trim()
	p.events = append(p.events, ev)
}
