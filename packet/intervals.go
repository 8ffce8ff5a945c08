package packet

import (
	"cmp"
	"math/bits"
	"slices"
)

// intervalIndex finds the entries of a priority or lpm table whose keys
// are all exact but one lpm or range key, each at most 64 bits wide: the EJFAT
// epoch table (instance exact, tick lpm), whose control plane writes a
// range of ticks as the prefixes that cover it, dozens per epoch. Per
// tuple of exact keys it cuts the other key's values into segments, each
// with the entry that wins there (priority order among the entries
// covering it); a lookup probes the tuple's group and binary-searches its
// segments, however many prefix lengths the entries have. (A scan tests
// every entry; the word index probes one level per prefix length.)
type intervalIndex struct {
	at     int // the key that is not exact
	slots  []ivlGroup
	shift  uint8    // a hash's top bits pick a group's first slot
	starts []uint64 // the groups' segments, group by group, by start
	entry  []int32  // per segment, the entry index, -1 for none
}

// ivlGroup is a slot of the exact keys' open addressing: their words (the
// word at intervalIndex.at zero) and the group's segments, starts[lo:hi].
// hi is 0 in an empty slot.
type ivlGroup struct {
	keys   [MaxKeyWords]uint64
	lo, hi int32
}

// minIntervalEntries is the size from which a priority table of the
// interval shape is indexed so; a scan of fewer entries is as quick.
const minIntervalEntries = 8

// intervals builds s's interval index if the table has the shape and
// enough entries, and reports whether it did. order is the entries in
// priority order (an lpm table's longest prefix first), match their
// matchers (entry i, key j).
func (t *Table) intervals(s *snapshot, order []int32, match func(i int32, j int) *matcher) bool {
	nk := len(t.spec.Keys)
	if !t.narrow || nk > MaxKeyWords || len(s.entries) < minIntervalEntries {
		return false
	}
	at := -1
	for j, k := range t.spec.Keys {
		if k.Kind == Exact {
			continue
		}
		if at >= 0 || k.Kind == Ternary {
			return false
		}
		at = j
	}
	if at < 0 {
		return false
	}
	// Each entry's interval of the key at `at`, by group of exact keys,
	// in priority order.
	var groups [][MaxKeyWords]uint64
	byKeys := map[[MaxKeyWords]uint64][]interval{}
	w := t.masks[at].Lo
	for r, i := range order {
		var keys [MaxKeyWords]uint64
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
	x := &intervalIndex{at: at, slots: make([]ivlGroup, n), shift: uint8(64 - bits.TrailingZeros(uint(n)))}
	for _, keys := range groups {
		lo := int32(len(x.starts))
		x.segments(byKeys[keys], func(start uint64, rank int32) {
			e := int32(-1)
			if rank >= 0 {
				e = order[rank]
			}
			x.starts = append(x.starts, start)
			x.entry = append(x.entry, e)
		})
		h := WordsHash(keys[0], keys[1], keys[2], keys[3])
		j := h >> x.shift
		for x.slots[j].hi != 0 {
			j = (j + 1) & uint64(n-1)
		}
		x.slots[j] = ivlGroup{keys, lo, int32(len(x.starts))}
	}
	s.ivl = x
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
func (x *intervalIndex) segments(ivls []interval, emit func(start uint64, rank int32)) {
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
	// A heap of the intervals begun, best rank on top; those ended before
	// a point are dropped when they come to the top.
	var heap []int
	less := func(a, b int) bool { return ivls[heap[a]].rank < ivls[heap[b]].rank }
	push := func(i int) {
		heap = append(heap, i)
		for c := len(heap) - 1; c > 0; {
			p := (c - 1) / 2
			if !less(c, p) {
				break
			}
			heap[c], heap[p] = heap[p], heap[c]
			c = p
		}
	}
	pop := func() {
		last := len(heap) - 1
		heap[0] = heap[last]
		heap = heap[:last]
		for p := 0; ; {
			c := 2*p + 1
			if c >= len(heap) {
				break
			}
			if c+1 < len(heap) && less(c+1, c) {
				c++
			}
			if !less(c, p) {
				break
			}
			heap[c], heap[p] = heap[p], heap[c]
			p = c
		}
	}
	next, prev := 0, int32(-2)
	for _, p := range points {
		for ; next < len(ivls) && ivls[next].lo <= p; next++ {
			push(next)
		}
		for len(heap) > 0 && ivls[heap[0]].hi < p {
			pop()
		}
		rank := int32(-1)
		if len(heap) > 0 {
			rank = ivls[heap[0]].rank
		}
		if rank != prev {
			emit(p, rank)
			prev = rank
		}
	}
}

// lookup returns the index of the entry the key words find, -1 if none.
func (x *intervalIndex) lookup(ks [MaxKeyWords]uint64) int32 {
	v := ks[x.at]
	ks[x.at] = 0
	h := WordsHash(ks[0], ks[1], ks[2], ks[3])
	n := uint64(len(x.slots) - 1)
	for i := h >> x.shift; ; i = (i + 1) & n {
		g := &x.slots[i]
		if g.hi == 0 {
			return -1
		}
		if g.keys != ks {
			continue
		}
		// The last segment starting at or before v; the first starts at 0.
		ss := x.starts[g.lo:g.hi]
		j := 0
		for m := len(ss); m > 1; {
			half := m / 2
			if ss[j+half] <= v {
				j += half
			}
			m -= half
		}
		return x.entry[int(g.lo)+j]
	}
}
