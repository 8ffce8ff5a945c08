package xdp

import (
	"fmt"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
)

// Node runs are counted as every generator counts them (backends/flow,
// count.go; the walk records the flow graph, lower/ends.go): only the
// edges outside a spanning forest of the flow graph get a counter of
// their own, and the runner solves for the rest (Meta.Flow). Count labels
// are the runs of their count nodes.

// placeCounters decides which edges of the live code get a counter,
// replaces the markers, and returns how to solve for the node runs.
func (c *gen) placeCounters(code map[*dataflow.Node][]byte, live map[*dataflow.Node]bool) *flow.Flow {
	plan, err := c.w.Edges.PlaceGraph(c.g, c.start, live, nil)
	if err != nil {
		c.fail("%v", err)
		return &flow.Flow{}
	}
	c.edgeCounters = plan.Counters
	for n, b := range code {
		code[n] = []byte(plan.Replace(string(b), func(k int) string { return fmt.Sprintf("NSC_EDGE(%d); ", k) }))
	}
	return &plan.Flow
}
