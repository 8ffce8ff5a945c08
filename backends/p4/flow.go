package p4

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/sim"
)

// endKind says how a frame ends when a fired port leads to no F-node.
type endKind uint8

const (
	endNone  endKind = iota // not an end: dest.node runs next
	endLeave                // the frame leaves by a sink (a port leading nowhere on a [sink] node)
	endDrop                 // dropped, counted under drop.Node and drop.Reason
)

// dest is where a fired port takes the frame: the next F-node (O-nodes
// decided on the way, as on any single path), or an end.
type dest struct {
	node *dataflow.Node
	end  endKind
	sink *dataflow.Node // endLeave: the sink the frame leaves by
	drop sim.DropKey    // endDrop
}

func (d dest) String() string {
	switch d.end {
	case endLeave:
		return "leave at " + d.sink.Name
	case endDrop:
		return "drop " + d.drop.Node + " " + d.drop.Reason
	}
	return d.node.Name
}

// succ is where F-node n goes when its operation picks its k-th port.
func (c *gen) succ(n *dataflow.Node, k int) dest {
	name := n.Op.Ports(c.s)[k]
	pt := n.Port(name)
	if pt == nil {
		return dest{end: endDrop, drop: sim.DropKey{Node: n.Name + "." + name, Reason: sim.ReasonUnconnected}}
	}
	return c.follow(pt)
}

// follow resolves a fired port through O-nodes, as flow.Decide does for
// generated code: on a single path only the operand that fired counts.
func (c *gen) follow(pt *dataflow.Port) dest {
	n := pt.Node
	if len(pt.Out) == 0 {
		if n.Sink {
			return dest{end: endLeave, sink: n}
		}
		return dest{end: endDrop, drop: sim.DropKey{Node: n.Name + "." + pt.Name, Reason: sim.ReasonUnconnected}}
	}
	to := pt.Out[0].To
	switch to.Kind {
	case dataflow.FNode:
		return dest{node: to}
	case dataflow.ONode:
		want, ok := flow.Decide(to, pt)
		if !ok {
			return dest{end: endDrop, drop: sim.DropKey{Node: c.start.Name, Reason: sim.ReasonUndecided}}
		}
		op := to.Port(want)
		if op == nil {
			return dest{end: endDrop, drop: sim.DropKey{Node: to.Name + "." + want, Reason: sim.ReasonUnconnected}}
		}
		return c.follow(op)
	}
	// C-nodes never run.
	return dest{end: endDrop, drop: sim.DropKey{Node: c.start.Name, Reason: sim.ReasonUndecided}}
}

// terminal reports whether n's operation ends the frame.
func terminal(n *dataflow.Node) bool { return n.Op.Terminal() }

// nports is the number of ports n's operation may pick.
func (c *gen) nports(n *dataflow.Node) int { return len(n.Op.Ports(c.s)) }

// succs lists n's destinations by operation port.
func (c *gen) succs(n *dataflow.Node) []dest {
	var out []dest
	for k := range c.nports(n) {
		out = append(out, c.succ(n, k))
	}
	return out
}

// sameDest reports whether two destinations are the same place.
func sameDest(a, b dest) bool {
	return a.node == b.node && a.end == b.end && a.sink == b.sink && a.drop == b.drop
}

func join(ss []string, sep string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += sep
		}
		out += s
	}
	return out
}
