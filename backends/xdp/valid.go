package xdp

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Which headers are valid where is flow's analysis (flow.AnalyzeValid),
// shared with the Go backend: a header valid on every path to a node needs
// no check there, one valid on none is invalid there, and a pop moves only
// the offsets of headers that may lie behind the popped one.

type hset = flow.HSet

func newHset(n int) hset { return flow.NewHSet(n) }

// analyzeValid computes, per node, the headers that may and must be valid
// when it runs.
// analyzeValid runs the validity analysis with every join merged: keeping
// paths apart proves more headers valid, and the generated program then
// keeps their pointers live across more of it (through the map lookups'
// helper calls), which made the LB's forward path slower (56 -> 67 ns).
func (c *gen) analyzeValid() { c.valid = flow.AnalyzeValid(c.g, c.start, 1) }

// mustValid reports whether header h is valid whenever the node being
// generated runs (and nothing in it has changed that yet).
func (c *gen) mustValid(h int) bool {
	if c.node == nil || c.noFacts {
		return false
	}
	return c.valid.Must(c.node, h)
}

// mayValid reports whether header h can be valid when the node runs.
func (c *gen) mayValid(h int) bool {
	if c.node == nil || c.noFacts {
		return true
	}
	return c.valid.May(c.node, h)
}

// mayBehind reports whether header x can lie behind header h (both
// valid) when the node runs.
func (c *gen) mayBehind(x, h int) bool {
	if c.node == nil || c.noFacts {
		return true
	}
	return c.valid.Behind(c.node, x, h)
}

// hasAvail reports whether header h's pointer variable is checked and
// fresh on every path to the node being generated (h is valid there and
// fresh wherever it is valid), and the node has not moved the frame since.
func (c *gen) hasAvail(h int) bool {
	if c.node == nil || c.moved || c.noFacts || c.avail == nil || !c.mustValid(h) {
		return false
	}
	a := c.avail[c.node]
	return a != nil && a.Has(h)
}

// analyzeAvail computes, from a first generation, the headers whose
// pointer variable is fresh (checked since the frame last moved) or that
// are invalid, on every path to each node. A real extraction and an
// unconditional check in a node's code (topHdr) make a pointer fresh; a
// push or pop (the frame moves) or a parse (the headers are found anew)
// leaves fresh only what cannot be valid.
func (c *gen) analyzeAvail() map[*dataflow.Node]hset {
	nh := len(c.s.Headers)
	in := map[*dataflow.Node]hset{}
	merge := func(n *dataflow.Node, s hset) {
		cur, ok := in[n]
		if !ok {
			in[n] = s.Clone()
			return
		}
		for i := range cur {
			cur[i] &= s[i]
		}
	}
	all := newHset(nh)
	for h := 0; h < nh; h++ {
		all.Add(h)
	}
	in[c.start] = all
	for _, n := range c.g.Order() {
		st, ok := in[n]
		if !ok {
			continue
		}
		vs := c.valid.In[n]
		for _, p := range n.Ports {
			out := st.Clone()
			if n.Kind == dataflow.FNode && vs != nil {
				after := c.valid.Transfer(n, p, *vs)
				moves := false
				switch n.Op.Kind {
				case packet.OpPush, packet.OpPop, packet.OpParse:
					moves = true
				case packet.OpInput:
					moves = n.Op.Header >= 0
				case packet.OpExtract:
					h := n.Op.Header
					if p.Name != packet.PortTrue || !vs.May.Has(h) {
						out.Add(h) // invalid, or just extracted and checked
					}
				}
				if moves {
					out = newHset(nh)
					for h := 0; h < nh; h++ {
						if !after.May.Has(h) {
							out.Add(h)
						}
					}
				}
				if t := c.topHdr[n]; t != nil {
					for i := range out {
						out[i] |= t[i]
					}
				}
			}
			for _, e := range p.Out {
				merge(e.To, out)
			}
		}
	}
	return in
}
