package flow_test

import (
	"testing"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// Two parse paths (an A header, or a B header after a type switch) join;
// tests behind the join rule paths out.
const joinModel = `
header a { x: 8  y: 8 }
header b { x: 8  y: 8 }
lpg Join {
    node In {
        op input
        port out -> Kind
    }
    node Kind {
        op extract a
        port true -> Type
        port false -> Drop
    }
    node Type {
        op switch a.x { 1 -> one, default -> other }
        port one -> Join
        port other -> GetB
    }
    node GetB {
        op extract b
        port true -> Join
        port false -> Drop
    }
    node Join {
        op test valid(b)
        port true -> WithB
        port false -> NoB
    }
    node WithB {
        op test a.y == 0
        port true -> Out
        port false -> Out
    }
    node NoB {
        op test a.x == 1
        port true -> Out
        port false -> Impossible
    }
    node Impossible { op drop "never" }
    node Out { op emit }
    node Drop { op drop "short" }
}
`

func TestValidityKeepsPathsApart(t *testing.T) {
	g, ok := testutil.ModelSource(t, joinModel).Graph("Join")
	if !ok {
		t.Fatal("no lpg Join")
	}
	node := func(name string) *dataflow.Node {
		for _, n := range g.Nodes {
			if n.Name == name {
				return n
			}
		}
		t.Fatalf("no node %s", name)
		return nil
	}
	hb, _ := g.Schema.Header("b")
	b := hb.ID
	merged, paths := flow.AnalyzeValid(g, node("In"), 1), flow.AnalyzeValid(g, node("In"), 16)
	// Behind valid(b) true, b must be valid either way; both paths reach
	// Out, with b (a.x != 1) and without (a.x == 1).
	if !merged.Must(node("WithB"), b) || !paths.Must(node("WithB"), b) {
		t.Error("b must be valid behind valid(b) true")
	}
	if paths.Must(node("Out"), b) || !paths.May(node("Out"), b) {
		t.Error("at Out, b may be valid but need not be")
	}
	// a.x == 1 was switched on the way to the join without b: NoB's false
	// port leads nowhere, so Impossible is not reached when the paths are
	// kept apart.
	if _, reached := paths.In[node("Impossible")]; reached {
		t.Error("Impossible is reached; the known a.x should rule both ports out")
	}
	if _, reached := merged.In[node("Impossible")]; !reached {
		t.Error("merged, the join forgets a.x: Impossible should be reached")
	}
}
