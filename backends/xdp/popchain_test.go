package xdp_test

import (
	"os"
	"testing"

	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// TestPopChainsAgainstInterpreter: chains of pops (adjacent in either
// order, apart, and a pop of the header whose checksum a pop just patched)
// in the kernel against the interpreter.
func TestPopChainsAgainstInterpreter(t *testing.T) {
	src, err := os.ReadFile("../flow/testdata/popchain.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.ModelSource(t, string(src))
	g, _ := m.Graph("PopChain")
	r, mach := pair(t, m, g, "")
	seeds := testutil.PopChainCorpus(t)
	where := xdptest.Compare(t, r, mach, append(seeds, difftest.Mutate(seeds, 20000, 3)...))
	for _, node := range testutil.PopChainNodes {
		if mach.Counters().Nodes[node] == 0 {
			t.Errorf("no frame ran %s: %v", node, where)
		}
	}
}
