package lbfast_test

import (
	"testing"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/difftest"
)

// TestFastPathEdges runs the frames at the edges of length (difftest.Edges
// of ejfat.EdgeSeeds: empty to past 64 KiB, and every crafted frame cut at
// every byte) through
// each version's fast paths and the interpreter: the same verdicts, bytes
// and counters. The fast path has no longest frame of its own (its caller
// sizes the buffer), so jumbo and 64 KiB LB frames are forwarded whole.
func TestFastPathEdges(t *testing.T) {
	seeds, err := ejfat.EdgeSeeds(difftest.EdgeSizes)
	if err != nil {
		t.Fatal(err)
	}
	frames := difftest.Edges(seeds, difftest.EdgeSizes)
	for _, v := range ejfat.Versions {
		for _, prg := range []string{ejfat.HostPRG, "LinuxUDP"} {
			t.Run(v+"/"+prg, func(t *testing.T) {
				pl, m := pairOn(t, v, prg)
				where := difftest.Compare(t, pl, m, frames)
				t.Logf("%d frames: %v", len(frames), where)
				if v == "lb-2021" {
					return // its LB takes v1 headers only
				}
				sent := map[int]bool{}
				var buf []byte
				for _, f := range frames {
					if o := difftest.Fast(pl, f, &buf); o.Where == "sink TxWire" {
						sent[len(f)] = true
					}
				}
				for _, n := range difftest.EdgeSizes {
					if n >= 1514 && !sent[n] {
						t.Errorf("no %d-byte frame was forwarded", n)
					}
				}
			})
		}
	}
}
