package reasm

import (
	"math/bits"
	"sync"
)

// minClass is the smallest buffer the pool hands out.
const minClass = 4096

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

// pool keeps the events (buffers and records) of finished events for
// reuse, by size class, up to limit bytes; the application returns
// delivered events from its own goroutine, hence the lock (taken once per
// event, never per segment).
type pool struct {
	mu    sync.Mutex
	free  [4*21 + 1][]*Event // by bufClass: up to 2^32 bytes
	bytes int64
	limit int64
	kind  RecordKind
}

// get returns an event whose buffer holds n bytes.
func (p *pool) get(n uint32) *Event {
	c, size := bufClass(n)
	p.mu.Lock()
	if l := len(p.free[c]); l > 0 {
		ev := p.free[c][l-1]
		p.free[c] = p.free[c][:l-1]
		p.bytes -= int64(size)
		ev.pooled = false
		p.mu.Unlock()
		return ev
	}
	p.mu.Unlock()
	return &Event{buf: make([]byte, size), class: c, rec: newRecord(p.kind, size)}
}

// put keeps ev for reuse, or leaves it to the garbage collector when the
// pool holds limit bytes already. Putting an event twice puts it once.
func (p *pool) put(ev *Event) {
	size := int64(len(ev.buf))
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.pooled {
		return
	}
	ev.pooled, ev.Data = true, nil
	if p.bytes+size <= p.limit {
		p.free[ev.class] = append(p.free[ev.class], ev)
		p.bytes += size
	}
}
