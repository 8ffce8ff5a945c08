package xsk

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is one of the four rings, mapped from the socket: the kernel and
// the socket's goroutine share the producer and consumer indices, which
// only grow (wrapping at 2^32) and are read and written atomically (the
// kernel's smp_load_acquire and smp_store_release); head is this side's
// own index, published by a store.
type ring struct {
	mem                []byte
	producer, consumer *uint32
	flags              *uint32
	mask               uint32
	head               uint32
}

// mapRing maps the ring at page offset pgoff of n entries of size bytes.
func mapRing(fd int, pgoff int64, off unix.XDPRingOffset, n, size int) (ring, error) {
	mem, err := unix.Mmap(fd, pgoff, int(off.Desc)+n*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return ring{}, err
	}
	at := func(o uint64) *uint32 { return (*uint32)(unsafe.Pointer(&mem[o])) }
	return ring{mem: mem, producer: at(off.Producer), consumer: at(off.Consumer), flags: at(off.Flags), mask: uint32(n - 1)}, nil
}

func (r *ring) unmap() {
	if r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
}

// entries is the ring's array of n entries of type T.
func entries[T any](r *ring, off unix.XDPRingOffset, n int) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(&r.mem[off.Desc])), n)
}

// For a ring the kernel fills (rx, completion):

// available is how many entries the kernel has produced that this side
// has not consumed.
func (r *ring) available() uint32 { return atomic.LoadUint32(r.producer) - r.head }

// consume releases n entries to the kernel.
func (r *ring) consume(n uint32) {
	r.head += n
	atomic.StoreUint32(r.consumer, r.head)
}

// For a ring this side fills (fill, tx):

// room is how many entries this side may produce.
func (r *ring) room() uint32 { return r.mask + 1 - (r.head - atomic.LoadUint32(r.consumer)) }

// publish hands the entries produced so far to the kernel.
func (r *ring) publish() { atomic.StoreUint32(r.producer, r.head) }

// unsent is how many published entries the kernel has yet to take.
func (r *ring) unsent() uint32 { return r.head - atomic.LoadUint32(r.consumer) }
