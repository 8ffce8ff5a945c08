package ejfat

import (
	"testing"

	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// TestXDPEdges runs the frames at the edges of length (difftest.Edges of
// EdgeSeeds, with frames of xdp.MaxFrame bytes and one more) through each version's XDP program
// in the kernel and through the interpreter held to the same longest
// frame: the same verdicts, bytes and counters. Longer frames are passed
// to the kernel untouched and counted as oversize.
func TestXDPEdges(t *testing.T) {
	sizes := append([]int{xdp.MaxFrame, xdp.MaxFrame + 1}, difftest.EdgeSizes...)
	seeds, err := EdgeSeeds(sizes)
	if err != nil {
		t.Fatal(err)
	}
	frames := difftest.Edges(seeds, sizes)
	for _, v := range Versions {
		t.Run(v, func(t *testing.T) {
			r, m := xdpPair(t, v)
			where := xdptest.Compare(t, r, m, frames)
			t.Logf("%d frames: %v", len(frames), where)
			if n := where["drop "+r.Meta.Graph+": oversize"]; n == 0 {
				t.Errorf("no frame was passed as oversize: %v", where)
			}
			if v == "lb-2021" {
				return // its LB takes v1 headers only
			}
			for _, f := range frames {
				if len(f) == xdp.MaxFrame && xdptest.Interp(m, r.Meta, f).Verdict == "XDP_TX" {
					return
				}
			}
			t.Errorf("no %d-byte frame was forwarded", xdp.MaxFrame)
		})
	}
}
