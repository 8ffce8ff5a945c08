// Package lpg is the protocol side of nsc: what makes a dataflow graph a
// Logical Protocol Graph, and the questions the embedder and the backends
// ask of one.
//
// An LPG takes received frames at its Rx entry (a source named RxQueue)
// and hands frames to send to its Tx exit (an emit named TxQueue); the
// embedder joins these to a PRG's Rx sinks and Tx entry (package prg).
// What the Rx entry reaches is the LPG's Rx part, copied behind every Rx
// sink; the rest is its Tx part. Stateful stages (keyed state: `place`)
// are where a frame's fate depends on the frames before it.
package lpg

import (
	"fmt"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Where an LPG meets a PRG (Dragonet's collapsed queues).
const (
	RxEntry = "RxQueue"
	TxExit  = "TxQueue"
)

// LPG is a checked Logical Protocol Graph.
type LPG struct {
	*dataflow.Graph
}

// Of checks that g is an LPG whose entry and exit, where it has them, can
// be joined to a PRG: the Rx entry a source, the Tx exit an emit.
func Of(g *dataflow.Graph) (*LPG, error) {
	if g.Kind != dataflow.LPG {
		return nil, fmt.Errorf("%s %s is not an lpg", g.Kind, g.Name)
	}
	if n := g.Node(RxEntry); n != nil && !n.Source {
		return nil, fmt.Errorf("%s: lpg %s: %s must be a source (op input) to take packets from the PRG", n.Pos, g.Name, RxEntry)
	}
	if n := g.Node(TxExit); n != nil && (n.Kind != dataflow.FNode || n.Op.Kind != packet.OpEmit) {
		return nil, fmt.Errorf("%s: lpg %s: %s must end packets with op emit to hand them to the PRG (a drop or a steer there would be lost at the join)", n.Pos, g.Name, TxExit)
	}
	return &LPG{g}, nil
}

// RxEntry is the node received frames enter by, or nil.
func (l *LPG) RxEntry() *dataflow.Node { return l.Node(RxEntry) }

// TxExit is the node frames to send leave by, or nil.
func (l *LPG) TxExit() *dataflow.Node { return l.Node(TxExit) }

// RxPart is what the Rx entry reaches (empty without one): the part the
// embedder copies behind each PRG Rx sink.
func (l *LPG) RxPart() map[*dataflow.Node]bool {
	if e := l.RxEntry(); e != nil {
		return dataflow.Reachable(e)
	}
	return map[*dataflow.Node]bool{}
}

// Stateful lists the stages whose outcome depends on earlier frames (keyed
// state), in declaration order.
func (l *LPG) Stateful() []*dataflow.Node {
	var out []*dataflow.Node
	for _, n := range l.Nodes {
		if n.Kind == dataflow.FNode && n.Op.Kind == packet.OpPlace {
			out = append(out, n)
		}
	}
	return out
}
