package reasm

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestTable runs random puts and deletes on a table and on a Go map, the
// oracle, with few distinct keys so that probes collide and wrap around.
func TestTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 3, 16, 100} {
		tb := newTable[int](n)
		want := map[Key]int{}
		for step := range 20000 {
			k := Key{netip.AddrFrom4([4]byte{10, 0, 0, byte(rng.IntN(2))}), uint16(rng.IntN(2)), uint64(rng.IntN(2 * n))}
			if _, ok := want[k]; !ok && len(want) < n && rng.IntN(2) == 0 {
				tb.put(k, step)
				want[k] = step
			} else {
				tb.del(k)
				delete(want, k)
			}
			used := 0
			for _, s := range tb.slots {
				if s.used {
					used++
					if v, ok := want[s.key]; !ok || v != s.val {
						t.Fatalf("n=%d step %d: table holds %+v=%d, map %d %v", n, step, s.key, s.val, v, ok)
					}
				}
			}
			for k, v := range want {
				if got, ok := tb.get(k); !ok || got != v {
					t.Fatalf("n=%d step %d: get %+v = %d %v, want %d (used %d)", n, step, k, got, ok, v, used)
				}
			}
		}
	}
}
