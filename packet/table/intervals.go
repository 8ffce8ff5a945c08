package table

import (
	"cmp"
	"container/heap"
	"math/bits"
	"slices"

	"github.com/dragonet-go/nsc/packet"
)

// IntervalIndex finds the entries of a priority or lpm table whose keys
// are all exact but one lpm or range key, each at most 64 bits wide: the
// EJFAT epoch table (instance exact, tick lpm), whose control plane writes
// a range of ticks as the prefixes that cover it, dozens per epoch. Per
// tuple of exact keys it cuts the other key's values into segments, each
// with the entry that wins there (priority order among the entries
// covering it); a lookup probes the tuple's group and binary-searches its
// segments, however many prefix lengths the entries have. (A scan tests
// every entry; the word index probes one level per prefix length.)
//
// Generated code probes it inline (Probes.Intervals): the exact keys' words,
// the word At zero, hash (WordsHash) to their group's first slot in
// Groups, h >> Shift, and the probe steps by one, modulo the power-of-two
// length, to the group with those words or an empty slot (Hi 0); in the
// group's Starts[Lo:Hi], the last start at or before the word At picks the
// segment, whose Acts entry is the hit (Action -1: none).
type IntervalIndex struct {
	At      int // the key that is not exact
	Groups  []IntervalGroup
	Shift   uint8        // a hash's top bits pick a group's first slot
	Starts  []uint64     // the groups' segments, group by group, by start
	Acts    []SlotAction // per segment, the entry's action, -1 for none
	Entries []int32      // per segment, the entry index, -1 for none
}

// IntervalGroup is a slot of the exact keys' open addressing: their words
// and the group's segments, Starts[Lo:Hi]. Hi is 0 in an empty slot.
type IntervalGroup struct {
	Keys   [packet.MaxKeyWords]uint64
	Lo, Hi int32
}

// minIntervalEntries is the size from which a table of the interval shape
// is indexed so; a scan of fewer entries is as quick.
const minIntervalEntries = 8

// intervals builds s's interval index if the table has the shape and
// enough entries, and reports whether it did. order is the entries in
// priority order (an lpm table's longest prefix first), match their
// matchers (entry i, key j).
func (t *Table) intervals(s *snapshot, order []int32, match func(i int32, j int) *matcher) bool {
	nk, at := len(t.spec.Keys), t.spec.IntervalKey()
	if at < 0 || len(s.entries) < minIntervalEntries {
		return false
	}
	// Each entry's interval of the key at `at`, by group of exact keys,
	// in priority order.
	var groups [][packet.MaxKeyWords]uint64
	byKeys := map[[packet.MaxKeyWords]uint64][]interval{}
	w := t.masks[at].Lo
	for r, i := range order {
		var keys [packet.MaxKeyWords]uint64
		var lo, hi uint64
		for j := range nk {
			m := match(i, j)
			if j != at {
				keys[j] = m.val.Lo
				continue
			}
			// k&mask == val (a prefix block) and lo <= k <= hi.
			lo, hi = max(m.val.Lo, m.lo.Lo), min(m.val.Lo|^m.mask.Lo&w, m.hi.Lo)
		}
		if lo > hi {
			continue // matches nothing
		}
		if _, ok := byKeys[keys]; !ok {
			groups = append(groups, keys)
		}
		byKeys[keys] = append(byKeys[keys], interval{lo, hi, int32(r)})
	}
	n := 4
	for n < 2*len(groups) {
		n *= 2
	}
	x := &IntervalIndex{At: at, Groups: make([]IntervalGroup, n), Shift: uint8(64 - bits.TrailingZeros(uint(n)))}
	for _, keys := range groups {
		lo := int32(len(x.Starts))
		x.segments(byKeys[keys], func(start uint64, rank int32) {
			e, a := int32(-1), SlotAction{Action: -1}
			if rank >= 0 {
				e = order[rank]
				a = SlotAction{int32(s.entries[e].Action), s.entries[e].Params}
			}
			x.Starts = append(x.Starts, start)
			x.Acts = append(x.Acts, a)
			x.Entries = append(x.Entries, e)
		})
		h := WordsHash(keys[0], keys[1], keys[2], keys[3])
		j := h >> x.Shift
		for x.Groups[j].Hi != 0 {
			j = (j + 1) & uint64(n-1)
		}
		x.Groups[j] = IntervalGroup{keys, lo, int32(len(x.Starts))}
	}
	s.Intervals = x
	return true
}

// interval is the values [lo, hi] an entry's key matches; rank is the
// entry's place in priority order.
type interval struct {
	lo, hi uint64
	rank   int32
}

// segments cuts the line [0, 2^64) at the intervals' ends and calls emit
// for each segment, by start, with the best rank of the intervals covering
// it (-1 for none); neighbours with the same rank are one segment.
func (x *IntervalIndex) segments(ivls []interval, emit func(start uint64, rank int32)) {
	slices.SortFunc(ivls, func(a, b interval) int { return cmp.Compare(a.lo, b.lo) })
	// Where coverage can change: each start, and after each end.
	points := []uint64{0}
	for _, v := range ivls {
		points = append(points, v.lo)
		if v.hi != ^uint64(0) {
			points = append(points, v.hi+1)
		}
	}
	slices.Sort(points)
	points = slices.Compact(points)
	// The intervals begun, best rank on top; those ended before a point
	// are dropped when they come to the top.
	begun := &rankHeap{ivls: ivls}
	next, prev := 0, int32(-2)
	for _, p := range points {
		for ; next < len(ivls) && ivls[next].lo <= p; next++ {
			heap.Push(begun, next)
		}
		for begun.Len() > 0 && ivls[begun.top[0]].hi < p {
			heap.Pop(begun)
		}
		rank := int32(-1)
		if begun.Len() > 0 {
			rank = ivls[begun.top[0]].rank
		}
		if rank != prev {
			emit(p, rank)
			prev = rank
		}
	}
}

// rankHeap holds intervals (indices into ivls), the best rank first.
type rankHeap struct {
	ivls []interval
	top  []int
}

func (h *rankHeap) Len() int { return len(h.top) }

func (h *rankHeap) Less(a, b int) bool { return h.ivls[h.top[a]].rank < h.ivls[h.top[b]].rank }

func (h *rankHeap) Swap(a, b int) { h.top[a], h.top[b] = h.top[b], h.top[a] }

func (h *rankHeap) Push(x any) { h.top = append(h.top, x.(int)) }

func (h *rankHeap) Pop() any {
	x := h.top[len(h.top)-1]
	h.top = h.top[:len(h.top)-1]
	return x
}

// lookup returns the index of the entry the key words find, -1 if none.
func (x *IntervalIndex) lookup(ks [packet.MaxKeyWords]uint64) int32 {
	v := ks[x.At]
	ks[x.At] = 0
	h := WordsHash(ks[0], ks[1], ks[2], ks[3])
	n := uint64(len(x.Groups) - 1)
	for i := h >> x.Shift; ; i = (i + 1) & n {
		g := &x.Groups[i]
		if g.Hi == 0 {
			return -1
		}
		if g.Keys != ks {
			continue
		}
		// The last segment starting at or before v; the first starts at 0.
		ss := x.Starts[g.Lo:g.Hi]
		j := 0
		for m := len(ss); m > 1; {
			half := m / 2
			if ss[j+half] <= v {
				j += half
			}
			m -= half
		}
		return x.Entries[int(g.Lo)+j]
	}
}
