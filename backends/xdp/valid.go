package xdp

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/backends/lower"
)

// Which headers are valid where is lower's decision (Walker.Known, from
// flow's analysis); which header pointers (hpN) are checked and fresh on
// every path to a node is flow.Checked's, from what a first generation
// left checked.

type hset = flow.HSet

// hasAvail reports whether header h's pointer variable is checked and
// fresh on every path to the node being generated (h is valid there and
// fresh wherever it is valid), and the node has not moved the frame since.
func (c *gen) hasAvail(h int) bool {
	if c.node == nil || c.moved || c.avail == nil || c.w.Known(h) != lower.KnownValid {
		return false
	}
	a := c.avail[c.node]
	return a != nil && a.Has(h)
}
