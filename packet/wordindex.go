package packet

// wordIndex finds the entries of exact, lpm and uniform-mask tables by
// their keys as 64-bit words (KeyWords: a key of at most 64 bits is one
// word, a wider one two, high first). Each level holds the entries of one
// mask (exact and uniform tables have one level, lpm tables one per prefix
// length, longest first) in an open-addressing table whose slots carry
// their first MaxKeyWords masked words inline (padded with zeros), so that
// a probe reads one slot and compares words, not Values; LookupWords
// hashes and compares a fixed number of them.
type wordIndex struct {
	wide   []bool // per key: two words
	words  int    // per key tuple
	stride int    // words per tuple as stored: max(words, MaxKeyWords)
	levels []wordLevel
	// first is levels[0] again, inline: most tables have one level, and
	// its slots are then a load less away.
	first wordLevel
}

type wordLevel struct {
	mask4 [MaxKeyWords]uint64 // mask's first words, inline for lookup4
	mask  []uint64            // per word, padded with zeros to stride
	slots []wordSlot
	rest  []uint64 // per slot, the masked words after its first MaxKeyWords
}

type wordSlot struct {
	key   [MaxKeyWords]uint64 // the entry's first masked words
	entry int32               // entry index + 1; 0 is an empty slot
}

// MaxKeyWords is the most key words LookupWords takes.
const MaxKeyWords = 4

// KeyWords is the number of 64-bit words a table's keys take as
// LookupWords wants them: one per key of at most 64 bits, two per wider
// key (high word first), in key order.
func (s *TableSpec) KeyWords() int {
	n := 0
	for _, k := range s.Keys {
		n++
		if k.Width > 64 {
			n++
		}
	}
	return n
}

// newWordIndex returns an empty index of spec's keys.
func newWordIndex(spec *TableSpec) wordIndex {
	x := wordIndex{wide: make([]bool, len(spec.Keys)), words: spec.KeyWords()}
	for j, k := range spec.Keys {
		x.wide[j] = k.Width > 64
	}
	x.stride = max(x.words, MaxKeyWords)
	return x
}

// toWords writes the words of a key tuple to out (stride long), zeros
// after them.
func (x *wordIndex) toWords(out []uint64, vs []Value) {
	clear(out)
	w := 0
	for j, v := range vs {
		if x.wide[j] {
			out[w] = v.Hi
			w++
		}
		out[w] = v.Lo
		w++
	}
}

// addLevel adds a level of the given key masks holding entries (index,
// key values already masked), which must be distinct.
func (x *wordIndex) addLevel(masks []Value, entries []int32, vals [][]Value) {
	lv := wordLevel{mask: make([]uint64, x.stride)}
	x.toWords(lv.mask, masks)
	copy(lv.mask4[:], lv.mask)
	n := 4
	for n < 2*len(entries) {
		n *= 2
	}
	lv.slots = make([]wordSlot, n)
	lv.rest = make([]uint64, n*(x.stride-MaxKeyWords))
	w := make([]uint64, x.stride)
	for k, i := range entries {
		x.toWords(w, vals[k])
		j := hashWords(w) & uint64(n-1)
		for lv.slots[j].entry != 0 {
			j = (j + 1) & uint64(n-1)
		}
		lv.slots[j] = wordSlot{entry: i + 1}
		copy(lv.slots[j].key[:], w)
		copy(lv.rest[int(j)*(x.stride-MaxKeyWords):], w[MaxKeyWords:])
	}
	x.levels = append(x.levels, lv)
	x.first = x.levels[0]
}

// lookup returns the index of the entry keys find, -1 if none. The keys
// need not be cut to their widths: the masks are.
func (x *wordIndex) lookup(keys []Value) int32 {
	for li := range x.levels {
		lv := &x.levels[li]
		mask := lv.mask[:x.stride]
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
		for ; w < x.stride; w++ {
			h ^= mixWord(w, 0)
		}
		h = finishHash(h)
		n := uint64(len(lv.slots) - 1)
		extra := x.stride - MaxKeyWords
	probe:
		for i := h & n; ; i = (i + 1) & n {
			sl := &lv.slots[i]
			if sl.entry == 0 {
				break
			}
			stored := func(w int) uint64 {
				if w < MaxKeyWords {
					return sl.key[w]
				}
				return lv.rest[int(i)*extra+w-MaxKeyWords]
			}
			w := 0
			for j, v := range keys {
				if x.wide[j] {
					if stored(w) != v.Hi&mask[w] {
						continue probe
					}
					w++
				}
				if stored(w) != v.Lo&mask[w] {
					continue probe
				}
				w++
			}
			return sl.entry - 1
		}
	}
	return -1
}

// lookup4 is lookup for keys of at most MaxKeyWords words, given as words.
func (x *wordIndex) lookup4(k0, k1, k2, k3 uint64) int32 {
	lv := &x.first
	for li := 0; li < len(x.levels); li++ {
		if li > 0 {
			lv = &x.levels[li]
		}
		m := &lv.mask4
		k0, k1, k2, k3 := k0&m[0], k1&m[1], k2&m[2], k3&m[3]
		h := finishHash(mixWord(0, k0) ^ mixWord(1, k1) ^ mixWord(2, k2) ^ mixWord(3, k3))
		n := uint64(len(lv.slots) - 1)
		for i := h & n; ; i = (i + 1) & n {
			sl := &lv.slots[i]
			if sl.entry == 0 {
				break
			}
			if sl.key == [MaxKeyWords]uint64{k0, k1, k2, k3} {
				return sl.entry - 1
			}
		}
	}
	return -1
}

// mixWord is word i of a key tuple's share of its hash: the words'
// products are independent, so a lookup's multiplications overlap.
func mixWord(i int, w uint64) uint64 {
	return (w + uint64(i)*0x632be59bd9b4e019) * 0x9e3779b97f4a7c15
}

// finishHash folds the products' well-mixed high bits into the low ones
// that pick a slot.
func finishHash(h uint64) uint64 {
	return h ^ h>>32 ^ h>>47
}

func hashWords(ws []uint64) uint64 {
	var h uint64
	for i, w := range ws {
		h ^= mixWord(i, w)
	}
	return finishHash(h)
}
