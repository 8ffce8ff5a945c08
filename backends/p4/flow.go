package p4

import (
	"github.com/dragonet-go/nsc/backends/lower"
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

// succ is where F-node n goes when its operation picks its k-th port:
// lower's exit, an end no O-node decides counted at the start.
func (c *gen) succ(n *dataflow.Node, k int) dest {
	e := lower.PortExit(n, n.Op.Ports(c.s)[k])
	switch e.Kind {
	case lower.Goto:
		return dest{node: e.To}
	case lower.Sink:
		return dest{end: endLeave, sink: e.To}
	case lower.Drop:
		return dest{end: endDrop, drop: sim.DropKey{Node: e.Site, Reason: e.Reason}}
	}
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
