package calendar

import (
	"fmt"
	"math"
	"math/bits"
)

// MaxLive is how many epochs a data plane holds at once.
const MaxLive = 4

// Epoch is a calendar in force from a boundary event number on.
type Epoch struct {
	Seq      uint64 // counts the LB instance's epochs from 0
	Boundary uint64 // its first event number
	Calendar Calendar
}

// ID is the epoch's number in the data plane, Seq mod MaxLive (as
// udplbd2): the epoch that retires hands its number, and with it its
// calendar entries, to the one that starts, so an epoch change modifies
// 512 calendar entries in place instead of adding 512 more.
func (e *Epoch) ID() uint32 { return uint32(e.Seq % MaxLive) }

// Advance returns live (oldest first) with a new epoch from boundary on,
// the oldest retired past MaxLive. The boundary must be above the newest
// one's.
func Advance(live []Epoch, boundary uint64, cal *Calendar) ([]Epoch, error) {
	next := Epoch{Boundary: boundary, Calendar: *cal}
	if n := len(live); n > 0 {
		newest := &live[n-1]
		if boundary <= newest.Boundary {
			return nil, fmt.Errorf("boundary %d not above the newest epoch's %d", boundary, newest.Boundary)
		}
		next.Seq = newest.Seq + 1
	}
	out := append(append(make([]Epoch, 0, MaxLive), live[max(len(live)+1-MaxLive, 0):]...), next)
	return out, nil
}

// EpochOf is the index in live of the epoch tick falls in: epoch i holds
// [Boundary_i, Boundary_i+1), the newest every tick from its boundary on
// and, as the data plane's catch-all, every tick below the oldest
// boundary (udplbd2's /0 entry: a sender that restarts its numbering is
// still delivered). -1 when live is empty.
func EpochOf(live []Epoch, tick uint64) int {
	for i := len(live) - 1; i >= 0; i-- {
		if tick >= live[i].Boundary {
			return i
		}
	}
	return len(live) - 1
}

// Prefix is the tick values whose top Len of 64 bits equal Value's.
type Prefix struct {
	Value uint64
	Len   int
}

// Cover returns the fewest prefixes whose union is exactly the ticks
// [lo, hi] (hi included, so that a range may end at 2^64−1): from lo,
// repeatedly the largest aligned block that starts there and stays within
// hi. Ranges to prefixes as in udplbd2's range_as_power_of_two_prefixes
// and ejfat-lb-pipeline.md §10. Empty when lo > hi.
func Cover(lo, hi uint64) []Prefix { return cover(lo, hi, 64) }

// cover is Cover for width-bit values (1..64), so that tests can check
// minimality exhaustively on narrow ones.
func cover(lo, hi uint64, width int) []Prefix {
	var out []Prefix
	for lo <= hi {
		k := min(bits.TrailingZeros64(lo), width) // lo 0: width
		for k > 0 && lo+span(k) > hi {
			k--
		}
		out = append(out, Prefix{lo, width - k})
		end := lo + span(k) // no overflow: lo is a multiple of 2^k
		if end >= hi {
			break
		}
		lo = end + 1
	}
	return out
}

// span is 2^k − 1 for k in 0..64.
func span(k int) uint64 {
	if k == 64 {
		return math.MaxUint64
	}
	return 1<<k - 1
}
