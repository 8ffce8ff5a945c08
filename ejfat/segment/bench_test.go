package segment

import (
	"io"
	"testing"
)

// BenchmarkNext: one op is one segment of a 1 MiB event written into a
// buffer, as a UDP payload or a frame (whose UDP checksum covers the
// payload); "copy" is copy() of the same payload bytes, the floor.
func BenchmarkNext(b *testing.B) {
	event := make([]byte, 1<<20)
	Fill(event, 1, 1)
	for _, frames := range []bool{false, true} {
		cfg := configs()["ipv4 lbv2"]
		cfg.Frames = frames
		s, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		name := map[bool]string{false: "datagram", true: "frame"}[frames]
		buf := make([]byte, s.MaxLen())
		b.Run(name+"/copy", func(b *testing.B) {
			b.SetBytes(int64(s.PayloadSize()))
			b.ReportAllocs()
			off := 0
			for range b.N {
				if off+s.PayloadSize() > len(event) {
					off = 0
				}
				copy(buf, event[off:off+s.PayloadSize()])
				off += s.PayloadSize()
			}
		})
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(s.PayloadSize()))
			b.ReportAllocs()
			_ = s.Start(event, 1, 1)
			for range b.N {
				if _, err := s.Next(buf); err == io.EOF {
					_ = s.Start(event, 1, 1)
				}
			}
		})
	}
}

// BenchmarkFill: the synthetic content of a 1 MiB event (nsc send's
// cost per event besides the sending), next to copy() of the same bytes.
func BenchmarkFill(b *testing.B) {
	buf, src := make([]byte, 1<<20), make([]byte, 1<<20)
	b.Run("fill", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for i := 0; b.Loop(); i++ {
			Fill(buf, uint64(i), 1)
		}
	})
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			copy(buf, src)
		}
	})
}
