package ejfat

import (
	"testing"

	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// TestXDPEdges runs the frames at the edges of length (EdgeSeeds, cut and
// sized by xdptest.CompareEdges, with frames of xdp.MaxFrame bytes and one
// more) through each version's XDP program in the kernel and through the
// interpreter held to the same longest frame: the same verdicts, bytes and
// counters. Longer frames are passed to the kernel untouched and counted
// as oversize.
func TestXDPEdges(t *testing.T) {
	seeds, err := EdgeSeeds(xdptest.EdgeSizes)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Versions {
		t.Run(v, func(t *testing.T) {
			r, m := xdpPair(t, v)
			xdptest.CompareEdges(t, r, m, seeds)
			if v == "lb-2021" {
				return // its LB takes v1 headers only
			}
			for _, f := range seeds {
				if len(f) == xdp.MaxFrame && xdptest.Interp(m, r.Meta, f).Verdict == "XDP_TX" {
					return
				}
			}
			t.Errorf("no %d-byte frame was forwarded", xdp.MaxFrame)
		})
	}
}
