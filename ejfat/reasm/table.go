package reasm

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
)

// table is a fixed-capacity hash table of Keys: open addressing with
// linear probing at most half full, deletion by shifting the entries
// after back (no deleted markers, so a steady churn of inserts and deletes
// keeps probes short, and nothing is ever allocated after New). The hash
// is seeded per table so that chosen event numbers cannot collide on
// purpose.
type table[V any] struct {
	slots []slot[V]
	mask  uint64
	seed  uint64
}

type slot[V any] struct {
	key  Key
	val  V
	used bool
}

// newTable makes a table for up to n entries.
func newTable[V any](n int) table[V] {
	size := uint64(1) << bits.Len(uint(2*max(n, 1)-1))
	return table[V]{slots: make([]slot[V], size), mask: size - 1, seed: rand.Uint64()}
}

func (t *table[V]) home(k Key) uint64 {
	a := k.Src.As16()
	x := binary.LittleEndian.Uint64(a[:8]) ^ t.seed ^ 0xa0761d6478bd642f
	y := binary.LittleEndian.Uint64(a[8:]) ^ k.Number ^ uint64(k.DataID)<<48 ^ 0xe7037ed1a0b428db
	hi, lo := bits.Mul64(x, y)
	hi, lo = bits.Mul64(hi^lo^t.seed, 0x8ebc6af09c88c6e3)
	return (hi ^ lo) & t.mask
}

// find returns k's slot, or the empty slot where it would go.
func (t *table[V]) find(k Key) uint64 {
	i := t.home(k)
	for t.slots[i].used && t.slots[i].key != k {
		i = (i + 1) & t.mask
	}
	return i
}

func (t *table[V]) get(k Key) (V, bool) {
	s := &t.slots[t.find(k)]
	return s.val, s.used
}

// put adds or replaces k's value; the caller keeps the entries at most the
// n given to newTable.
func (t *table[V]) put(k Key, v V) { t.slots[t.find(k)] = slot[V]{k, v, true} }

// del removes k, moving back the entries probed past its slot (Knuth's
// Algorithm R).
func (t *table[V]) del(k Key) {
	i := t.find(k)
	if !t.slots[i].used {
		return
	}
	for {
		t.slots[i] = slot[V]{}
		j := i
		for {
			j = (j + 1) & t.mask
			if !t.slots[j].used {
				return
			}
			h := t.home(t.slots[j].key)
			// The entry at j stays if its home is cyclically in (i, j].
			if i <= j && i < h && h <= j || i > j && (i < h || h <= j) {
				continue
			}
			break
		}
		t.slots[i] = t.slots[j]
		i = j
	}
}
