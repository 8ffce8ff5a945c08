package table

import (
	"math/bits"

	"github.com/dragonet-go/nsc/packet"
)

// wordIndex finds the entries of exact, lpm and priority tables by their
// keys as 64-bit words (KeyWords: a key of at most 64 bits is one word, a
// wider one two, high first). Each level holds the entries of one mask
// (exact tables have one level, lpm tables one per prefix length, longest
// first, priority tables one per tuple of masks: Table.maskGroups) in an
// open-addressing table of hashes; the
// masked words of each slot's entry (padded with zeros to at least
// MaxKeyWords, so that LookupWords hashes and compares a fixed number of
// them) lie apart, read only when a hash matches: a probe that misses, as
// most of an lpm table's do, touches one small slot.
type wordIndex struct {
	wide   []bool // per key: two words
	words  int    // per key tuple
	stride int    // words per tuple as stored: max(words, MaxKeyWords)
	levels []WordLevel
	// rank, for a priority table, is each entry's place in priority order
	// (snapshot.order): the best of the levels' hits wins, not the first.
	// Its levels are sorted by their best entry's rank, so that the search
	// stops at a level that cannot do better.
	rank []int32
	// first is levels[0] again, inline: most tables have one level, and
	// its slots are then a load less away.
	first WordLevel
}

// WordLevel is one level of a word index: open addressing over the
// hashes of its entries' masked key words. Generated code probes the level
// of a table that has only one inline (Probes.Words): a key's words, cut by
// Mask, hash (WordsHash) to their first slot, h >> Shift; the probe steps
// by one, modulo the power-of-two length, to a slot whose key words match
// or to an empty one.
type WordLevel struct {
	Slots []WordSlot
	Wide  []uint64                   // keys of more than MaxKeyWords words: per slot, stride of them
	Mask  [packet.MaxKeyWords]uint64 // the mask's first MaxKeyWords words
	Shift uint8
	best  int32    // priority tables: the best rank in the level
	mask  []uint64 // per word, padded with zeros to stride
}

// SlotAction is an entry's action and parameters, next to its match.
type SlotAction struct {
	Action int32
	Params []packet.Value
}

// WordSlot is one slot of a WordLevel: what a probe compares and what a
// hit returns, in one 64-byte line.
type WordSlot struct {
	Keys   [packet.MaxKeyWords]uint64 // the entry's masked key words, zeros after them (wider keys: in Wide)
	Entry  int32                      // entry index + 1; 0 is an empty slot
	Action int32
	Params []packet.Value
}

// newWordIndex returns an empty index of spec's keys.
func newWordIndex(spec *packet.TableSpec) wordIndex {
	x := wordIndex{wide: make([]bool, len(spec.Keys)), words: spec.KeyWords()}
	for j, k := range spec.Keys {
		x.wide[j] = k.Width > 64
	}
	x.stride = max(x.words, packet.MaxKeyWords)
	return x
}

// toWords writes the words of a key tuple to out (stride long), zeros
// after them.
func (x *wordIndex) toWords(out []uint64, vs []packet.Value) {
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
func (x *wordIndex) addLevel(es []packet.Entry, masks []packet.Value, entries []int32, vals [][]packet.Value) {
	lv := WordLevel{mask: make([]uint64, x.stride)}
	if x.rank != nil {
		lv.best = x.rank[entries[0]] // entries come in priority order
	}
	x.toWords(lv.mask, masks)
	copy(lv.Mask[:], lv.mask)
	n := 4
	for n < 2*len(entries) {
		n *= 2
	}
	lv.Slots = make([]WordSlot, n)
	lv.Shift = uint8(64 - bits.TrailingZeros(uint(n)))
	if x.stride > packet.MaxKeyWords {
		lv.Wide = make([]uint64, n*x.stride)
	}
	w := make([]uint64, x.stride)
	for k, i := range entries {
		x.toWords(w, vals[k])
		j := hashWords(w) >> lv.Shift
		for lv.Slots[j].Entry != 0 {
			j = (j + 1) & uint64(n-1)
		}
		sl := &lv.Slots[j]
		*sl = WordSlot{Entry: i + 1, Action: int32(es[i].Action), Params: es[i].Params}
		if lv.Wide != nil {
			copy(lv.Wide[int(j)*x.stride:], w)
		} else {
			copy(sl.Keys[:], w)
		}
	}
	x.levels = append(x.levels, lv)
	x.first = x.levels[0]
}

// lookup returns the index of the entry keys find, -1 if none. The keys
// need not be cut to their widths: the masks are. Keys of more words than
// a slot holds are compared with their copy in Wide.
func (x *wordIndex) lookup(keys []packet.Value) int32 {
	if x.words <= packet.MaxKeyWords { // the slots hold the whole key
		var ws [packet.MaxKeyWords]uint64
		x.toWords(ws[:], keys)
		found, _ := x.lookup4(ws[0], ws[1], ws[2], ws[3])
		return found
	}
	found := int32(-1)
	for li := range x.levels {
		lv := &x.levels[li]
		if found >= 0 && lv.best > x.rank[found] {
			break
		}
		mask := lv.mask[:x.stride]
		h, w := uint64(0), 0
		for j, v := range keys {
			if x.wide[j] {
				h += mixWord(w, v.Hi&mask[w])
				w++
			}
			h += mixWord(w, v.Lo&mask[w])
			w++
		}
		n := uint64(len(lv.Slots) - 1)
	probe:
		for i := h >> lv.Shift; ; i = (i + 1) & n {
			sl := &lv.Slots[i]
			if sl.Entry == 0 {
				break
			}
			stored := lv.Wide[int(i)*x.stride : int(i+1)*x.stride]
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
			if x.rank == nil {
				return sl.Entry - 1
			}
			if found < 0 || x.rank[sl.Entry-1] < x.rank[found] {
				found = sl.Entry - 1
			}
			break
		}
	}
	return found
}

// lookup4 is lookup for keys of at most MaxKeyWords words, given as words;
// it returns the entry's slot too (nil with -1).
func (x *wordIndex) lookup4(k0, k1, k2, k3 uint64) (int32, *WordSlot) {
	found, act := int32(-1), (*WordSlot)(nil)
	lv := &x.first
	for li := 0; li < len(x.levels); li++ {
		if li > 0 {
			lv = &x.levels[li]
			if found >= 0 && lv.best > x.rank[found] {
				break
			}
		}
		m := &lv.Mask
		k0, k1, k2, k3 := k0&m[0], k1&m[1], k2&m[2], k3&m[3]
		h := WordsHash(k0, k1, k2, k3)
		n := uint64(len(lv.Slots) - 1)
		for i := h >> lv.Shift; ; i = (i + 1) & n {
			sl := &lv.Slots[i]
			if sl.Entry == 0 {
				break
			}
			if sl.Keys == [packet.MaxKeyWords]uint64{k0, k1, k2, k3} {
				if x.rank == nil {
					return sl.Entry - 1, sl
				}
				if found < 0 || x.rank[sl.Entry-1] < x.rank[found] {
					found, act = sl.Entry-1, sl
				}
				break
			}
		}
	}
	return found, act
}

// A key tuple's hash is the sum of its words' products with constants
// (mixWord): the products are independent, so a lookup's multiplications
// overlap, and their top bits, which pick the slot, depend on every bit of
// the word (keys cut to a prefix have their low bits all zero). Zero words
// add nothing, so a key padded with zeros hashes as it is.
const (
	wordMul  = 0x9e3779b97f4a7c15
	wordStep = 0x1d8e4e27c47d124e // even: every multiplier is odd
)

// mixWord is word i's share of a key tuple's hash.
func mixWord(i int, w uint64) uint64 {
	return w * (wordMul + uint64(i)*wordStep)
}

// WordsHash is the hash of a key's words as a WordLevel stores it (zeros
// after the key's own words); small enough for Go to inline anywhere.
func WordsHash(k0, k1, k2, k3 uint64) uint64 {
	return k0*wordMul + k1*(wordMul+wordStep) + k2*(wordMul+2*wordStep) + k3*(wordMul+3*wordStep)
}

func hashWords(ws []uint64) uint64 {
	var h uint64
	for i, w := range ws {
		h += mixWord(i, w)
	}
	return h
}
