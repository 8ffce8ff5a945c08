package dataflow_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

func fnode(g *dataflow.Graph, name string, kind packet.OpKind) *dataflow.Node {
	n := &dataflow.Node{Name: name, Kind: dataflow.FNode, Op: &packet.Op{Kind: kind, Header: -1, After: -1, Table: -1}}
	if err := g.AddNode(n); err != nil {
		panic(err)
	}
	return n
}

// Among nodes with no order between them, declaration order wins, whatever
// the edges' order.
func TestOrderIsStable(t *testing.T) {
	g := dataflow.New("g", dataflow.LPG, &packet.Schema{})
	src := fnode(g, "src", packet.OpInput)
	src.Source = true
	c := fnode(g, "c", packet.OpEmit)
	b := fnode(g, "b", packet.OpEmit)
	a := fnode(g, "a", packet.OpNop)
	out := src.AddPort("out", "")
	dataflow.Connect(out, a, false)
	dataflow.Connect(out, c, false)
	dataflow.Connect(out, b, false)
	dataflow.Connect(a.AddPort("out", ""), b, false)
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range g.Order() {
		got = append(got, n.Name)
	}
	if diff := cmp.Diff([]string{"src", "c", "a", "b"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// A cycle closed by a spawn edge is allowed; the same cycle with a normal
// edge is not.
func TestSpawnCycles(t *testing.T) {
	for _, spawn := range []bool{true, false} {
		g := dataflow.New("g", dataflow.LPG, &packet.Schema{})
		src := fnode(g, "src", packet.OpInput)
		src.Source = true
		a := fnode(g, "a", packet.OpNop)
		b := fnode(g, "b", packet.OpNop)
		dataflow.Connect(src.AddPort("out", ""), a, false)
		dataflow.Connect(a.AddPort("out", ""), b, false)
		dataflow.Connect(b.AddPort("out", ""), a, spawn)
		err := g.Validate()
		if spawn && err != nil {
			t.Errorf("spawn cycle refused: %v", err)
		}
		if !spawn && err == nil {
			t.Errorf("normal cycle accepted")
		}
	}
}
