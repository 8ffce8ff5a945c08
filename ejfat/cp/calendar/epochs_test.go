package calendar

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fewestPrefixes is the smallest number of width-bit prefixes whose union
// is [lo, hi], by dynamic programming over where the block that holds lo
// ends (prefixes are nested or disjoint, so a smallest cover is a
// partition into aligned blocks).
func fewestPrefixes(width int) [][]int {
	n := 1 << width
	best := make([][]int, n+1) // best[lo][hi+1]
	for i := range best {
		best[i] = make([]int, n+1)
	}
	for lo := n - 1; lo >= 0; lo-- {
		for end := lo + 1; end <= n; end++ {
			b := math.MaxInt
			for size := 1; lo%size == 0 && lo+size <= end; size *= 2 {
				rest := 0
				if lo+size < end {
					rest = best[lo+size][end]
				}
				b = min(b, 1+rest)
			}
			best[lo][end] = b
		}
	}
	return best
}

// TestCoverExhaustive: on 8-bit values, for every range, the prefixes
// cover exactly the range and are as few as possible.
func TestCoverExhaustive(t *testing.T) {
	const width = 8
	best := fewestPrefixes(width)
	for lo := range uint64(1 << width) {
		for hi := lo; hi < 1<<width; hi++ {
			ps := cover(lo, hi, width)
			var in [1 << width]int
			for _, p := range ps {
				for v := range uint64(1 << width) {
					if v>>(width-p.Len) == p.Value>>(width-p.Len) {
						in[v]++
					}
				}
			}
			for v := range uint64(1 << width) {
				if want := lo <= v && v <= hi; (in[v] == 1) != want || in[v] > 1 {
					t.Fatalf("[%d, %d]: %v matches %d %d times", lo, hi, ps, v, in[v])
				}
			}
			if len(ps) != best[lo][hi+1] {
				t.Fatalf("[%d, %d]: %d prefixes %v, %d suffice", lo, hi, len(ps), ps, best[lo][hi+1])
			}
		}
	}
}

// TestCover64: 64-bit ranges, the ends included: the prefixes are aligned
// blocks that follow each other from lo to hi, at most 2·64−2 of them.
func TestCover64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	cases := [][2]uint64{{0, math.MaxUint64}, {0, 0}, {math.MaxUint64, math.MaxUint64}, {1, math.MaxUint64 - 1}, {1 << 63, math.MaxUint64}, {16, 31}}
	for range 10000 {
		lo, hi := r.Uint64()>>r.IntN(64), r.Uint64()>>r.IntN(64)
		cases = append(cases, [2]uint64{min(lo, hi), max(lo, hi)})
	}
	for _, c := range cases {
		ps := Cover(c[0], c[1])
		next := c[0]
		for i, p := range ps {
			size := span(64 - p.Len)
			if p.Value != next || p.Value&size != 0 {
				t.Fatalf("%v: prefix %d %v does not start at %d aligned", c, i, p, next)
			}
			next = p.Value + size + 1
			if i == len(ps)-1 && p.Value+size != c[1] {
				t.Fatalf("%v: ends at %d", c, p.Value+size)
			}
		}
		if len(ps) > 126 {
			t.Fatalf("%v: %d prefixes", c, len(ps))
		}
	}
	if ps := Cover(0, math.MaxUint64); len(ps) != 1 || ps[0].Len != 0 {
		t.Errorf("everything: %v, want 0/0", ps)
	}
	if ps := Cover(16, 31); len(ps) != 1 || ps[0] != (Prefix{16, 60}) {
		t.Errorf("16..31: %v, want 0x10/60 (ejfat-lb-pipeline.md §10)", ps)
	}
	if ps := Cover(5, 4); len(ps) != 0 {
		t.Errorf("empty range: %v", ps)
	}
}

// TestAdvance: epochs are numbered on, the data-plane ids cycle through
// MaxLive, the oldest retires past MaxLive, boundaries must rise.
func TestAdvance(t *testing.T) {
	var live []Epoch
	var err error
	for i := range uint64(7) {
		if live, err = Advance(live, 100*(i+1), Empty()); err != nil {
			t.Fatal(err)
		}
		if n := min(int(i)+1, MaxLive); len(live) != n || live[n-1].Seq != i || live[n-1].ID() != uint32(i%MaxLive) {
			t.Fatalf("after %d: %+v", i, live)
		}
	}
	if live[0].Boundary != 400 {
		t.Errorf("oldest boundary %d, want 400", live[0].Boundary)
	}
	if _, err := Advance(live, 700, Empty()); err == nil {
		t.Error("a boundary not above the newest accepted")
	}
	for tick, want := range map[uint64]int{0: 3, 399: 3, 400: 0, 499: 0, 500: 1, 699: 2, 700: 3, math.MaxUint64: 3} {
		if got := EpochOf(live, tick); got != want {
			t.Errorf("EpochOf(%d) = %d, want %d", tick, got, want)
		}
	}
	if EpochOf(nil, 5) != -1 {
		t.Error("EpochOf of no epochs")
	}
}
