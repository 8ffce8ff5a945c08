package reasm

import "sync/atomic"

// Reason is what became of one segment: placed, completing its event, or
// dropped for one reason. Every segment is counted under exactly one.
type Reason uint8

// The reasons. Each drop reason has its own counter (Stats.Segments).
const (
	Placed    Reason = iota // copied into its event, which is still incomplete
	Completed               // copied, and its event is complete
	// Short: a datagram shorter than the RE header.
	Short
	// BadHeader: an RE header whose version is not 1 or whose reserved
	// bits of byte 1 are set.
	BadHeader
	// Empty: no payload bytes.
	Empty
	// ZeroLength: an event length of 0.
	ZeroLength
	// TooLarge: an event length above Config.MaxEventSize.
	TooLarge
	// OutOfBounds: offset + payload beyond the event length.
	OutOfBounds
	// LengthMismatch: an event length other than the first segment's.
	LengthMismatch
	// Duplicate: every byte already arrived (or the event was delivered).
	Duplicate
	// Overlap: some of the bytes arrived before, some did not; a correct
	// sender never sends that, so nothing is copied.
	Overlap
	// Fragmented: the event's interval record is full (Intervals only).
	Fragmented
	// Late: the event was dropped (timed out or evicted).
	Late
	// NoMemory: no buffer for the event within Config.MaxBytes, all of it
	// held by complete events the application has not released.
	NoMemory
	numReasons
)

var reasonNames = [numReasons]string{"placed", "completed", "short", "bad header", "empty",
	"zero length", "too large", "out of bounds", "length mismatch", "duplicate", "overlap",
	"fragmented", "late", "no memory"}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Stats are the counters of spec §4.6, as the control plane's SendState
// wants them, and the segments by reason.
type Stats struct {
	Received      uint64 // events begun: distinct keys seen
	Reassembled   uint64 // events complete
	TimedOut      uint64 // events not complete within Config.Timeout
	Evicted       uint64 // incomplete events dropped for the caps
	Dequeued      uint64 // events the application took
	EnqueueErrors uint64 // complete events dropped: the queue was full
	Packets       uint64 // segments (datagrams) handed in
	Bytes         uint64 // their bytes
	Segments      [numReasons]uint64
}

// Errors is the reassembly error count: events lost (timed out or
// evicted). Bad segments are counted by reason in Segments.
func (s Stats) Errors() uint64 { return s.TimedOut + s.Evicted }

// counters are Stats as the reassembler keeps them: one writer (the
// reassembler's goroutine) stores, any goroutine loads. dequeued is the
// application's.
type counters struct {
	received, reassembled, timedOut, evicted, enqueueErrors, packets, bytes atomic.Uint64
	segments                                                                [numReasons]atomic.Uint64
	dequeued                                                                atomic.Uint64
}

// inc adds n to a counter only this goroutine writes: a load and a store,
// no read-modify-write loop (the store is still an XCHG on amd64).
func inc(c *atomic.Uint64, n uint64) { c.Store(c.Load() + n) }

func (c *counters) snapshot() Stats {
	s := Stats{
		Received: c.received.Load(), Reassembled: c.reassembled.Load(), TimedOut: c.timedOut.Load(),
		Evicted: c.evicted.Load(), Dequeued: c.dequeued.Load(), EnqueueErrors: c.enqueueErrors.Load(),
		Packets: c.packets.Load(), Bytes: c.bytes.Load(),
	}
	for i := range s.Segments {
		s.Segments[i] = c.segments[i].Load()
	}
	return s
}
