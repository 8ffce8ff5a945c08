package rdma_test

import (
	"testing"

	"github.com/dragonet-go/nsc/internal/testutil"
)

// TestICRCFacts: `checksum verify icrc(bth)` and `compute` give their
// ports icrc_ok(bth); a write to a wire field forgets it (the ICRC covers
// every byte from the IP header on), a write to metadata does not.
func TestICRCFacts(t *testing.T) {
	m := testutil.ModelSource(t, `
include "lib/roce.nsc"
metadata meta { x: 8 }
lpg G {
    node In { op input parse ethernet  port out -> V }
    node V { op checksum verify icrc(bth)  port true -> Meta  port false -> C }
    node Meta { op set { meta.x = 1 }  port out -> Wire }
    node Wire { op set { bth.psn = 1 }  port out -> Out }
    node C { op checksum compute icrc(bth)  port out -> Out }
    node Out { op emit }
}`)
	g, _ := m.Graph("G")
	ps := g.Predicates()
	bth, _ := m.Schema.Header("bth")
	ok := ps.ICRCOK(bth.ID)
	holds := func(node, port string) bool {
		return ps.Port(g.Node(node).Port(port)).And(ok.Not()).IsFalse()
	}
	for _, c := range []struct {
		node, port string
		want       bool
	}{{"V", "true", true}, {"V", "false", false}, {"Meta", "out", true}, {"Wire", "out", false}, {"C", "out", true}} {
		if got := holds(c.node, c.port); got != c.want {
			t.Errorf("%s.%s implies icrc_ok(bth): %v, want %v", c.node, c.port, got, c.want)
		}
	}
	if !ps.Port(g.Node("V").Port("false")).And(ok).IsFalse() {
		t.Error("V.false allows icrc_ok(bth)")
	}
}
