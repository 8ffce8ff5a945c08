package golang

import (
	"fmt"
	"strings"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
)

// Node runs are counted on a few flow edges (backends/flow, count.go):
// the walk records the flow graph as the code is printed (lower/ends.go),
// and runs() solves for every node from the edge, sink and drop counters.

// retDrop is the statement that ends a frame at drop site d.
func retDrop(d int) string { return fmt.Sprintf("return pl.drop(%d)", d) }

// placeCounters places the edge counters in the live code, none on a step
// of the hot path where it can be helped, and returns the function that
// solves for the node runs.
func (c *gen) placeCounters(code map[*dataflow.Node][]byte, live map[*dataflow.Node]bool, hot []*dataflow.Node) string {
	plan, err := c.w.Edges.PlaceGraph(c.g, c.start, live, hot)
	if err != nil {
		panic("go backend: " + err.Error()) // a forest always peels
	}
	c.counters = plan.Counters
	for n, b := range code {
		code[n] = []byte(plan.Replace(string(b), func(k int) string { return fmt.Sprintf("pl.edges[%d]++\n", k) }))
	}
	counter := func(k flow.Counter) string {
		switch k.Kind {
		case flow.CountSink:
			return fmt.Sprintf("pl.Sunk[%d]", k.Index)
		case flow.CountDrop:
			return fmt.Sprintf("pl.Dropped[%d]", k.Index)
		case flow.CountEdge:
			return fmt.Sprintf("pl.edges[%d]", k.Index)
		}
		return "total"
	}
	var w strings.Builder
	fmt.Fprintf(&w, "// runs solves the flow graph for the frames each node ran on.\nfunc (pl *Pipeline) runs() (r [len(NodeNames)]uint64) {\n")
	fmt.Fprintf(&w, "var f [%d]uint64\ntotal := uint64(0)", len(plan.Known))
	for _, k := range plan.Ends {
		fmt.Fprintf(&w, " + %s", counter(k))
	}
	w.WriteString("\n")
	for i, k := range plan.Known {
		if k.Kind != "" {
			fmt.Fprintf(&w, "f[%d] = %s\n", i, counter(k))
		}
	}
	for _, s := range plan.Solve {
		fmt.Fprintf(&w, "f[%d] = 0", s.Edge)
		for _, i := range s.Plus {
			fmt.Fprintf(&w, " + f[%d]", i)
		}
		for _, i := range s.Minus {
			fmt.Fprintf(&w, " - f[%d]", i)
		}
		w.WriteString("\n")
	}
	for n, in := range plan.In {
		if len(in) == 0 {
			continue
		}
		fmt.Fprintf(&w, "r[%d] = 0", n)
		for _, i := range in {
			fmt.Fprintf(&w, " + f[%d]", i)
		}
		w.WriteString("\n")
	}
	w.WriteString("return r\n}\n")
	return w.String()
}
