// Package difftest runs the same frames through a generated fast path and
// through the reference interpreter on the same graph and tables, and
// reports every difference: where each frame went, its bytes, and at the
// end every counter.
package difftest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
)

// Outcome is where a frame went and the bytes that left.
type Outcome = sim.Outcome

// Interp runs one frame through the interpreter.
func Interp(m *sim.Machine, frame []byte) Outcome { return m.Outcome(frame) }

// Fast runs one frame through a generated pipeline, in a buffer with
// headroom and tailroom (buf is reused when large enough).
func Fast(pl fastpath.Pipeline, frame []byte, buf *[]byte) Outcome {
	need := 2*packet.Headroom + len(frame)
	if cap(*buf) < need {
		*buf = make([]byte, need)
	}
	b := (*buf)[:need]
	copy(b[packet.Headroom:], frame)
	r := pl.Process(b, packet.Headroom, len(frame))
	if r.Sink >= 0 {
		return Outcome{Where: "sink " + pl.SinkName(int(r.Sink)), Data: hex.EncodeToString(r.Data)}
	}
	d := pl.DropSite(int(r.Drop))
	return Outcome{Where: fmt.Sprintf("drop %s: %s", d.Node, d.Reason)}
}

// Compare runs every frame through both and fails t on the first few
// differing frames and on differing counters. It returns the outcomes
// (the interpreter's) by where they went, for the caller's own checks.
func Compare(t testing.TB, pl fastpath.Pipeline, m *sim.Machine, frames [][]byte) map[string]int {
	t.Helper()
	var buf []byte
	where := Frames(t, "fast path", frames,
		func(f []byte) (Outcome, string) { o := Interp(m, f); return o, o.Where },
		func(f []byte) Outcome { return Fast(pl, f, &buf) })
	if diff := cmp.Diff(m.Counters(), golang.Counters(pl)); diff != "" {
		t.Errorf("counters differ (-interp +fast path):\n%s", diff)
	}
	return where
}

// Frames runs every frame through the interpreter (interp: its outcome and
// where the frame went) and another implementation (run) and fails t on
// the first few whose outcomes differ. It returns the interpreter's
// outcomes counted by where they went.
func Frames[O comparable](t testing.TB, other string, frames [][]byte, interp func([]byte) (O, string), run func([]byte) O) map[string]int {
	t.Helper()
	counts := map[string]int{}
	bad := 0
	for i, f := range frames {
		want, where := interp(f)
		got := run(f)
		counts[where]++
		if want != got {
			bad++
			if bad <= 5 {
				t.Errorf("frame %d (%d bytes %x): %s differs from the interpreter (-interp +%s):\n%s", i, len(f), f, other, other, cmp.Diff(want, got))
			}
		}
	}
	if bad > 5 {
		t.Errorf("%d of %d frames differ", bad, len(frames))
	}
	return counts
}

// Mutate derives n frames from seeds, reproducibly from seed: bytes
// flipped (mostly in the first 80, where the headers are), cut short,
// extended, or wholly random.
func Mutate(seeds [][]byte, n int, seed uint64) [][]byte {
	rnd := rand.New(rand.NewPCG(seed, 11))
	out := make([][]byte, 0, n)
	for len(out) < n {
		f := append([]byte(nil), seeds[rnd.IntN(len(seeds))]...)
		switch rnd.IntN(5) {
		case 0, 1:
			for k := 1 + rnd.IntN(3); k > 0 && len(f) > 0; k-- {
				i := rnd.IntN(min(len(f), 80))
				f[i] ^= byte(1 + rnd.IntN(255))
			}
		case 2:
			f = f[:rnd.IntN(len(f)+1)]
		case 3:
			f = append(f, make([]byte, rnd.IntN(64))...)
		case 4:
			f = make([]byte, rnd.IntN(160))
			for i := range f {
				f[i] = byte(rnd.UintN(256))
			}
		}
		out = append(out, f)
	}
	return out
}

// EdgeSizes are the frame lengths where backends could part ways: nothing,
// one byte, one short of an Ethernet header and one, one short of
// Ethernet's 60-byte minimum (FCS not counted) and that minimum, a full
// 1500-byte MTU, a 9000-byte jumbo MTU with a VLAN tag, and either side of
// 64 KiB (the longest IPv4 datagram still fits in 65535 + 14 bytes).
var EdgeSizes = []int{0, 1, 13, 14, 59, 60, 1514, 9018, 65535, 65536, 65537}

// maxCut bounds where Edges cuts a seed: past every header.
const maxCut = 256

// Edges returns frames at the edges of length made from seeds: the seeds;
// each cut at every byte of its first maxCut, so that every header of
// every path ends at each of its bytes; for every size of sizes the first
// seed cut or padded with zeros to that length, and that many zeros.
// Frames that repeat are left out.
func Edges(seeds [][]byte, sizes []int) [][]byte {
	out := append([][]byte(nil), seeds...)
	for _, f := range seeds {
		for n := range min(len(f), maxCut) {
			out = append(out, f[:n])
		}
	}
	for _, n := range sizes {
		if len(seeds) > 0 {
			k := min(n, len(seeds[0]))
			out = append(out, append(seeds[0][:k:k], make([]byte, n-k)...))
		}
		out = append(out, make([]byte, n))
	}
	seen := map[string]bool{}
	frames := out[:0]
	for _, f := range out {
		if !seen[string(f)] {
			seen[string(f)] = true
			frames = append(frames, f)
		}
	}
	return frames
}

// ICRCTraffic is RoCEv2 seeds, each seed with its ICRC broken, and n frames
// derived from them that keep takes, every other one (IPv4) with its ICRC
// made right again, so that it gets past an ICRC check.
func ICRCTraffic(seeds [][]byte, n int, seed uint64, keep func([]byte) bool) [][]byte {
	frames := append([][]byte(nil), seeds...)
	for _, f := range seeds {
		f = bytes.Clone(f)
		f[len(f)-1] ^= 0xff
		frames = append(frames, f)
	}
	for i, f := range Mutate(seeds, n, seed) {
		if !keep(f) {
			continue
		}
		if i%2 == 0 && len(f) > 58 && f[12] == 0x08 && f[13] == 0 {
			binary.LittleEndian.PutUint32(f[len(f)-4:], packet.ICRC(f, 14, 42, len(f), false))
		}
		frames = append(frames, f)
	}
	return frames
}
