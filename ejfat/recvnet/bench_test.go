package recvnet

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/ejfat/segment"
	"github.com/dragonet-go/nsc/packet"
)

// benchSegments is the number of segments of a benchmark event.
const benchSegments = 128

// BenchmarkEngines: nsc recv's two engines on the same datagrams, as a
// receive loop hands them over (RE header and payload, from one IPv4
// source), events of 128 segments in order; one op is one segment, the
// event dequeued and released when it completes. "generated" is the
// model's generated code (Model, --engine model), "runtime" the
// hand-written ejfat/reasm (--engine runtime), "copy" copy() of the
// payload to its place in one buffer: the bound neither can beat.
func BenchmarkEngines(b *testing.B) {
	src := netip.MustParseAddr("10.0.0.1")
	clock := func() time.Time { return time.Unix(1000, 0) } // both engines read it
	for _, size := range []int{1 << 10, 8 << 10} {
		event := make([]byte, size*benchSegments)
		segment.Fill(event, 0, 1)
		// Each datagram as a reader receives it: Room in front (FrameAt).
		bufs, dgrams := make([][]byte, benchSegments), make([][]byte, benchSegments)
		for j := range dgrams {
			bufs[j] = make([]byte, Room+ejfat.RELen+size+packet.Headroom)
			d := bufs[j][Room : Room+ejfat.RELen+size]
			ejfat.RE(d).Encode(1, uint32(j*size), uint32(len(event)), 0)
			copy(d[ejfat.RELen:], event[j*size:])
			dgrams[j] = d
		}
		engines := []struct {
			name string
			new  func() (Reassembler, error)
		}{
			{"generated", func() (Reassembler, error) { return NewModel(clock, 16) }},
			{"runtime", func() (Reassembler, error) { return reasm.New(reasm.Config{Now: clock}) }},
		}
		for _, e := range engines {
			b.Run(fmt.Sprintf("seg=%dKiB/%s", size>>10, e.name), func(b *testing.B) {
				r, err := e.new()
				if err != nil {
					b.Fatal(err)
				}
				datagram := func(j int) reasm.Reason { return r.Datagram(src, dgrams[j]) }
				m, _ := r.(*Model)
				if m != nil { // as the reader hands them over, in batches
					datagram = func(j int) reasm.Reason {
						if j%ReadBatch == 0 {
							m.Flush()
							m.Tick()
						}
						return m.FrameAt(src, bufs[j], Room, len(dgrams[j]))
					}
				}
				number := uint64(0)
				segs := func(i, j int) {
					if j == 0 { // a new event number, in place
						number++
						for _, o := range dgrams {
							ejfat.RE(o).SetEventNumber(number)
						}
					}
					if datagram(j) == reasm.Completed {
						ev, ok := r.TryDequeue()
						if !ok || len(ev.Data) != len(event) {
							b.Fatalf("event %d not delivered whole", number)
						}
						r.Release(ev)
					}
				}
				for j := range benchSegments { // warm the pools
					segs(j, j)
				}
				benchLoop(b, size, segs)
				if m != nil {
					m.Flush()
				}
				if s := r.Stats(); s.Reassembled < uint64(b.N/benchSegments) {
					b.Fatalf("%d events reassembled of %d segments", s.Reassembled, b.N)
				}
			})
		}
		b.Run(fmt.Sprintf("seg=%dKiB/copy", size>>10), func(b *testing.B) {
			dst := make([]byte, len(event))
			benchLoop(b, size, func(i, j int) {
				copy(dst[j*size:(j+1)*size], dgrams[j][ejfat.RELen:])
			})
		})
	}
}

// benchLoop runs seg(i, j) for op i, segment j of its event, and reports
// segments/s and bytes/s.
func benchLoop(b *testing.B, size int, seg func(i, j int)) {
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		seg(i, i%benchSegments)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "segments/s")
}
