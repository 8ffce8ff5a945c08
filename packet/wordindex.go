package packet

// wordIndex finds the entries of exact, lpm and uniform-mask tables by
// their keys as 64-bit words, what Lookup reads: a key of at most 64 bits
// is one word, a wider one two (Hi, then Lo). Each level holds the entries
// of one mask (exact and uniform tables have one level, lpm tables one per
// prefix length, longest first) in an open-addressing table whose slots
// carry their masked words inline, so that a probe touches one cache line
// or two and compares words, not Values.
type wordIndex struct {
	wide   []bool // per key: two words
	words  int    // per key tuple
	levels []wordLevel
}

type wordLevel struct {
	mask  []uint64 // per word
	slots []wordSlot
	keys  []uint64 // per slot, its entry's masked words
}

type wordSlot struct {
	hash  uint64
	entry int32 // entry index + 1; 0 is an empty slot
}

// maxIndexWords bounds the key tuple a wordIndex takes (eight 128-bit
// keys, sixteen narrow ones); wider tuples are found the slower way.
const maxIndexWords = 8

// newWordIndex returns an index of widths' keys.
func newWordIndex(keyWidths []int) *wordIndex {
	x := &wordIndex{wide: make([]bool, len(keyWidths))}
	for j, w := range keyWidths {
		x.wide[j] = w > 64
		x.words++
		if w > 64 {
			x.words++
		}
	}
	return x
}

// toWords appends the words of a key tuple to out.
func (x *wordIndex) toWords(out []uint64, vs []Value) []uint64 {
	for j, v := range vs {
		if x.wide[j] {
			out = append(out, v.Hi)
		}
		out = append(out, v.Lo)
	}
	return out
}

// addLevel adds a level of the given key masks holding entries (index,
// key values already masked), which must be distinct.
func (x *wordIndex) addLevel(masks []Value, entries []int32, vals [][]Value) {
	lv := wordLevel{mask: x.toWords(nil, masks)}
	n := 4
	for n < 2*len(entries) {
		n *= 2
	}
	lv.slots = make([]wordSlot, n)
	lv.keys = make([]uint64, n*x.words)
	var w []uint64
	for k, i := range entries {
		w = x.toWords(w[:0], vals[k])
		h := hashWords(w)
		j := h & uint64(n-1)
		for lv.slots[j].entry != 0 {
			j = (j + 1) & uint64(n-1)
		}
		lv.slots[j] = wordSlot{h, i + 1}
		copy(lv.keys[int(j)*x.words:], w)
	}
	x.levels = append(x.levels, lv)
}

// lookup returns the index of the entry keys find, -1 if none.
func (x *wordIndex) lookup(keys []Value) int32 {
	for li := range x.levels {
		lv := &x.levels[li]
		mask := lv.mask[:x.words]
		var h uint64
		w := 0
		for j, v := range keys {
			if x.wide[j] {
				h ^= mixWord(w, v.Hi&mask[w])
				w++
			}
			h ^= mixWord(w, v.Lo&mask[w])
			w++
		}
		h = finishHash(h)
		n := uint64(len(lv.slots) - 1)
	probe:
		for i := h & n; ; i = (i + 1) & n {
			sl := &lv.slots[i]
			if sl.entry == 0 {
				break
			}
			if sl.hash != h {
				continue
			}
			stored := lv.keys[int(i)*x.words : int(i+1)*x.words]
			w := 0
			for j, v := range keys {
				if x.wide[j] {
					if stored[w] != v.Hi&mask[w] {
						continue probe
					}
					w++
				}
				if stored[w] != v.Lo&mask[w] {
					continue probe
				}
				w++
			}
			return sl.entry - 1
		}
	}
	return -1
}

// mixWord is word w of a key tuple's share of its hash: the words'
// products are independent, so a lookup's multiplications overlap.
func mixWord(i int, w uint64) uint64 {
	return (w + uint64(i)*0x632be59bd9b4e019) * 0x9e3779b97f4a7c15
}

func finishHash(h uint64) uint64 {
	h ^= h >> 32
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>29
}

func hashWords(ws []uint64) uint64 {
	var h uint64
	for i, w := range ws {
		h ^= mixWord(i, w)
	}
	return finishHash(h)
}
