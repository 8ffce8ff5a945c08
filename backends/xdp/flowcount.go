package xdp

import (
	"fmt"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
)

// Node runs are counted as every generator counts them (backends/flow,
// count.go): only the edges outside a spanning forest of the flow graph
// get a counter of their own, and the runner solves for the rest
// (Meta.Flow). Count labels are the runs of their count nodes.

// owner is the F-node whose code is being generated, as a flow vertex.
func (c *gen) owner() int64 {
	if c.node == nil {
		return -2 // outside any node's code: never live
	}
	return c.node.ID
}

// jumpEdge records an edge from vertex from to vertex to and returns the
// marker to emit on it.
func (c *gen) jumpEdge(from, to int64) string { return c.edges.Jump(c.owner(), from, to) }

// endEdge records that a frame ends at vertex from with the given counter.
func (c *gen) endEdge(from int64, k flow.Counter) { c.edges.End(c.owner(), from, k) }

// forcedEnd records an end whose counter other ends share; it returns
// the marker where its own counter goes.
func (c *gen) forcedEnd(from int64) string { return c.edges.Shared(c.owner(), from) }

// placeCounters decides which edges of the live code get a counter,
// replaces the markers, and returns how to solve for the node runs.
func (c *gen) placeCounters(code map[*dataflow.Node][]byte, live map[*dataflow.Node]bool) *flow.Flow {
	plan, err := c.edges.PlaceGraph(c.g, c.start, live, nil)
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
