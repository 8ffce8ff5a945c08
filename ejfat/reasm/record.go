package reasm

import "math/bits"

// A record keeps which byte ranges of an event arrived. add marks
// [lo, hi) (lo < hi <= the length given to reset) and says whether the range
// was new (Placed: the caller copies it), had arrived before (Duplicate),
// partly had (Overlap), or cannot be kept (Fragmented); only a Placed range
// changes the record.
type record interface {
	reset(length uint32)
	add(lo, hi uint32) Reason
	// trim lets go of memory past what a common event needs, as the
	// record goes back to the pool: a pooled record keeps little.
	trim()
}

// keepRecord is the most memory (bytes) a pooled record keeps.
const keepRecord = 8 << 10

// RecordKind selects how events record their arrived ranges.
type RecordKind uint8

const (
	// Intervals keeps a sorted list of disjoint arrived ranges, merged as
	// they touch: in-order and reversed arrival keep one range and touch
	// only its end; shuffled arrival binary-searches. Memory per event is
	// bounded to 1/8 of its length, plus 512 bytes (one 8-byte range per 64
	// bytes, and 64 more; past that a segment is refused as Fragmented,
	// which no sender of segments of 128 bytes or more can cause).
	Intervals RecordKind = iota
	// Bitmap keeps one bit per byte: exact for ranges of any alignment, at
	// 1/8 of the event's length, and a mark costs a word operation per 64
	// bytes of segment. (A bit per larger unit would be exact only for
	// segments aligned to the unit.)
	Bitmap
)

func (k RecordKind) String() string {
	if k == Bitmap {
		return "bitmap"
	}
	return "intervals"
}

func newRecord(k RecordKind) record {
	if k == Bitmap {
		return &bitmap{}
	}
	return &intervals{}
}

type span struct{ lo, hi uint32 }

// intervals is a sorted list of disjoint, non-touching arrived ranges.
type intervals struct {
	s   []span
	max int
}

func (v *intervals) reset(length uint32) {
	v.s = v.s[:0]
	v.max = int(length/64) + 64
}

func (v *intervals) trim() {
	if cap(v.s)*8 > keepRecord {
		v.s = nil
	}
}

func (v *intervals) add(lo, hi uint32) Reason {
	s := v.s
	n := len(s)
	switch {
	case n == 0:
		v.s = append(s, span{lo, hi})
		return Placed
	case lo >= s[n-1].hi: // after every range: in order
		if lo == s[n-1].hi {
			s[n-1].hi = hi
			return Placed
		}
		return v.insert(n, span{lo, hi})
	case hi <= s[0].lo: // before every range: reversed
		if hi == s[0].lo {
			s[0].lo = lo
			return Placed
		}
		return v.insert(0, span{lo, hi})
	}
	i := v.search(lo)
	switch {
	case s[i].lo <= lo && hi <= s[i].hi:
		return Duplicate
	case s[i].lo < hi:
		return Overlap
	}
	// In the gap between s[i-1] (which ends at or before lo) and s[i].
	left := i > 0 && s[i-1].hi == lo
	right := s[i].lo == hi
	switch {
	case left && right:
		s[i-1].hi = s[i].hi
		v.s = append(s[:i], s[i+1:]...)
	case left:
		s[i-1].hi = hi
	case right:
		s[i].lo = lo
	default:
		return v.insert(i, span{lo, hi})
	}
	return Placed
}

// search returns the first range ending after lo (one exists: the caller
// saw the last one does).
func (v *intervals) search(lo uint32) int {
	i, j := 0, len(v.s)-1
	for i < j {
		h := int(uint(i+j) >> 1)
		if v.s[h].hi > lo {
			j = h
		} else {
			i = h + 1
		}
	}
	return i
}

func (v *intervals) insert(i int, sp span) Reason {
	if len(v.s) >= v.max {
		return Fragmented
	}
	v.s = append(v.s, span{})
	copy(v.s[i+1:], v.s[i:])
	v.s[i] = sp
	return Placed
}

// bitmap has bit i%64 of word i/64 set when byte i arrived.
type bitmap struct{ w []uint64 }

func (b *bitmap) reset(length uint32) {
	n := int(length+63) / 64
	if cap(b.w) < n {
		b.w = make([]uint64, n)
		return
	}
	b.w = b.w[:n]
	clear(b.w)
}

// trim keeps the bitmap of events up to 16 MiB: a bitmap is 1/8 of its
// event, and allocating one per event would cost more than the record.
func (b *bitmap) trim() {
	if cap(b.w)*8 > 256*keepRecord {
		b.w = nil
	}
}

func (b *bitmap) add(lo, hi uint32) Reason {
	first, last := lo/64, (hi-1)/64
	fm, lm := ^uint64(0)<<(lo%64), ^uint64(0)>>(63-(hi-1)%64)
	w := b.w[first : last+1]
	if first == last {
		return b.mark(w, fm&lm)
	}
	// The common case, none of the range arrived: one pass to see that,
	// one to set it.
	seen := w[0]&fm | w[len(w)-1]&lm
	for _, x := range w[1 : len(w)-1] {
		seen |= x
	}
	if seen != 0 {
		return b.overlapOrDuplicate(w, fm, lm)
	}
	w[0] |= fm
	w[len(w)-1] |= lm
	for i := 1; i < len(w)-1; i++ {
		w[i] = ^uint64(0)
	}
	return Placed
}

// mark adds a range within one word, bits m.
func (b *bitmap) mark(w []uint64, m uint64) Reason {
	switch w[0] & m {
	case 0:
		w[0] |= m
		return Placed
	case m:
		return Duplicate
	}
	return Overlap
}

// overlapOrDuplicate tells a range that arrived whole from one that partly
// did; neither changes the record.
func (b *bitmap) overlapOrDuplicate(w []uint64, fm, lm uint64) Reason {
	set := bits.OnesCount64(w[0]&fm) + bits.OnesCount64(w[len(w)-1]&lm)
	for _, x := range w[1 : len(w)-1] {
		set += bits.OnesCount64(x)
	}
	if set == bits.OnesCount64(fm)+bits.OnesCount64(lm)+64*(len(w)-2) {
		return Duplicate
	}
	return Overlap
}
