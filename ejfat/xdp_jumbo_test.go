package ejfat

import (
	"math/rand/v2"
	"testing"

	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// TestXDPJumboAgainstInterpreter: every LB version's XDP program (loaded
// for multi-buffer frames) against the interpreter on the corpus grown to
// 1,518 and 9,018 bytes (difftest.Grow: the payloads longer, lengths and
// checksums made to fit) and to mixed lengths, and on frames derived from
// those: the kernel hands the program frames longer than a page as a
// head and fragments, so the payload, and the checksums responders
// compute over it, run across them; the frames run again with a head of
// 128 bytes. Jumbo frames are forwarded (never
// passed unparsed) and answered as the interpreter does.
func TestXDPJumboAgainstInterpreter(t *testing.T) {
	for _, v := range Versions {
		t.Run(v, func(t *testing.T) {
			r, m := xdpPair(t, v)
			seeds := xdpSeeds(t)
			rnd := rand.New(rand.NewPCG(25, 1))
			var at1518, at9018, mixed [][]byte
			for _, f := range seeds {
				at1518 = append(at1518, difftest.Grow(f, 1518))
				at9018 = append(at9018, difftest.Grow(f, 9018))
				mixed = append(mixed, difftest.Grow(f, 60+rnd.IntN(9018-60+1)))
			}
			all := append(append(append([][]byte(nil), at1518...), at9018...), mixed...)
			all = append(all, difftest.Mutate(append(at9018, mixed...), 2000, 25)...)
			where := xdptest.Compare(t, r, m, all)
			// Again with a head of 128 bytes (past every header of these
			// frames), as a driver with small receive buffers splits them.
			r.Head = 128
			xdptest.Compare(t, r, m, all)
			c := m.Counters()
			for _, node := range xdpMustRun[v] {
				if c.Nodes[node] == 0 {
					t.Errorf("no frame ran through %s", node)
				}
			}
			if n := where["drop "+r.Meta.Graph+": oversize"]; n > 0 {
				t.Errorf("%d frames passed as oversize", n)
			}
			// The interpreter's outcomes of the 9,018-byte frames (the
			// comparison is over: running it again changes no verdict).
			tx := 0
			for _, f := range at9018 {
				if xdptest.Interp(m, r.Meta, f).Verdict == "XDP_TX" {
					tx++
				}
			}
			if tx < 10 {
				t.Errorf("%d frames of 9,018 bytes sent back out, want 10 or more", tx)
			}
			t.Logf("%d frames (%d of 9,018 bytes sent back out): %v", len(all), tx, where)
		})
	}
}
