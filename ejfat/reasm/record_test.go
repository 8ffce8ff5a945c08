package reasm

import (
	"math/rand/v2"
	"testing"
)

// TestRecordsAgree marks random ranges of long events in both records and
// in a flag per byte, the oracle: the same verdict for every range, with
// many more ranges per event than the fuzz test reaches.
func TestRecordsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	iv, bm := newRecord(Intervals), newRecord(Bitmap)
	for range 100 {
		length := uint32(1 + rng.IntN(8000))
		iv.reset(length)
		bm.reset(length)
		ev := &modelEvent{got: make([]bool, length)}
		maxSeg := 1 + rng.IntN(300)
		for range 1000 {
			lo := uint32(rng.IntN(int(length)))
			hi := min(length, lo+1+uint32(rng.IntN(maxSeg)))
			arrived := 0
			for _, g := range ev.got[lo:hi] {
				if g {
					arrived++
				}
			}
			want := Placed
			switch {
			case arrived == int(hi-lo):
				want = Duplicate
			case arrived > 0:
				want = Overlap
			}
			wantIv := want
			if want == Placed && (&model{}).rangesAfter(ev, int(lo), int(hi)) > int(length)/64+64 {
				wantIv = Fragmented
			}
			if got := bm.add(lo, hi); got != want {
				t.Fatalf("length %d: bitmap add [%d,%d) %s, want %s", length, lo, hi, got, want)
			}
			if got := iv.add(lo, hi); got != wantIv {
				t.Fatalf("length %d: intervals add [%d,%d) %s, want %s", length, lo, hi, got, wantIv)
			}
			if wantIv == Placed {
				for i := lo; i < hi; i++ {
					ev.got[i] = true
				}
			} else if want == Placed {
				bm.reset(length) // the bitmap took a range the intervals refused: start over
				iv.reset(length)
				clear(ev.got)
			}
		}
	}
}
