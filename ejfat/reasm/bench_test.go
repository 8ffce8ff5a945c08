package reasm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// benchSegsPerEvent is the number of segments of a benchmark event.
const benchSegsPerEvent = 128

// benchOrders are the arrival orders of the benchmarks: segment indices.
func benchOrders() map[string][]int {
	in := make([]int, benchSegsPerEvent)
	for i := range in {
		in[i] = i
	}
	rev := slices.Clone(in)
	slices.Reverse(rev)
	shuf := slices.Clone(in)
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(shuf), func(i, j int) { shuf[i], shuf[j] = shuf[j], shuf[i] })
	return map[string][]int{"inorder": in, "reversed": rev, "shuffled": shuf}
}

// BenchmarkReassembly: one op is one segment of an event of 128 segments,
// copied into its place, the event dequeued and released when complete;
// "copy" is copy() of the same bytes to the same places of one buffer,
// the bound the reassembler's copy cannot beat.
func BenchmarkReassembly(b *testing.B) {
	orders := benchOrders()
	for _, size := range []int{8192, 1024} {
		src := content(Key{}, size*benchSegsPerEvent)
		for _, name := range []string{"inorder", "reversed", "shuffled"} {
			order := orders[name]
			b.Run(fmt.Sprintf("seg=%d/%s/copy", size, name), func(b *testing.B) {
				dst := bytes.Clone(src) // touched, as the pool's buffer is
				benchLoop(b, size, func(i, j int) {
					off := order[j] * size
					copy(dst[off:off+size], src[off:off+size])
				})
			})
			for _, kind := range kinds {
				b.Run(fmt.Sprintf("seg=%d/%s/%s", size, name, kind), func(b *testing.B) {
					benchReassembly(b, kind, size, src, order)
				})
			}
		}
	}
}

func benchReassembly(b *testing.B, kind RecordKind, size int, src []byte, order []int) {
	r, err := New(Config{Record: kind, Now: func() time.Time { return time.Time{} }})
	if err != nil {
		b.Fatal(err)
	}
	k := Key{Src: src1, DataID: 1}
	n := uint32(len(src))
	for j := range order { // warm the pool: the timed loop allocates nothing
		off := order[j] * size
		r.Segment(k, uint32(off), n, src[off:off+size])
	}
	ev, _ := r.TryDequeue()
	r.Release(ev)
	k.Number++
	benchLoop(b, size, func(i, j int) {
		off := order[j] * size
		if r.Segment(k, uint32(off), n, src[off:off+size]) == Completed {
			ev, _ := r.TryDequeue()
			r.Release(ev)
			k.Number++
		}
	})
}

// benchLoop runs seg(i, j) for op i, segment j of its event, and reports
// segments/s and bytes/s.
func benchLoop(b *testing.B, size int, seg func(i, j int)) {
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		seg(i, i%benchSegsPerEvent)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "segments/s")
}
