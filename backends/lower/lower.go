// Package lower lowers a graph once for the targets whose generated code
// follows one path per frame (Go, XDP): every reachable F-node becomes a
// Block holding its operation and, for each port the operation can pick,
// the Exit a frame takes — the next F-node, a sink, a drop with its
// reason, or an end undecided — with the O-nodes on the way decided at
// generation time (on a single path only the fired operand counts). A
// Walker then prints the blocks through a target's Dialect: it dispatches
// on the operation, fires ports, records the jumps that make a block live,
// and refuses, identically for every target, what no dialect prints.
//
// Below the operation the walker lowers what every target does alike,
// and the dialect prints each part in its syntax: conditions (Cond:
// short-circuits resolved, wide or word arithmetic chosen), sets with
// their checksum windows and deltas (LowerSet, SetSyntax), pops with the
// bytes a pop holds for the next and the patches it leaves pending
// (LowerPop, PopSyntax), the parse graph unrolled (UnrollParse, Parse),
// extractions (LowerExtract), pushes (LowerPush), checksum regions
// (LowerChecksum, IPHeaders), places and their ports (LowerPlace,
// PlaceSyntax), registers and the ICRC (roce.go), lookups' keys and
// action dispatch (LowerLookup, Actions), expression values (Walker.Word,
// Low, Wide over a ValueSyntax; the binary operators' table, WordOp and
// WideOp), what the printed code knows of header validity (Known), and
// the ends: drop sites, sinks and count labels numbered,
// flow edges recorded for the counters (ends.go). The analyses — header
// validity, pop chains, counter placement — are in backends/flow.
package lower

import (
	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/sim"
)

// ExitKind says where a fired port takes a frame.
type ExitKind uint8

const (
	Goto      ExitKind = iota // to the next F-node, To
	Sink                      // out at sink node To
	Drop                      // ended at drop site Site for Reason
	Undecided                 // an O-node (Site; "" for a C-node) cannot decide on one operand
)

// Hop is an O-node a frame passes, decided on the fired operand.
type Hop struct {
	From int64          // the flow vertex the frame comes from
	Node *dataflow.Node // the O-node
	Port string         // the port it fires
}

// Exit is the way out of a block along one port.
type Exit struct {
	Kind ExitKind
	Hops []Hop
	// From is the flow vertex the frame leaves from: the F-node, or the
	// last node before the end (the counters' flow graph, flow.Counts).
	From   int64
	To     *dataflow.Node // Goto, Sink
	Site   string         // Drop: node (or node.port); Undecided: the O-node
	Reason string         // Drop
	// Own: the end is the node's own operation (emit, steer, drop), not
	// a port without an edge.
	Own bool
}

// Block is a reachable F-node: its operation and, per port of the
// operation (Op.Ports order), the exit taken when it fires.
type Block struct {
	Node  *dataflow.Node
	Exits []Exit
}

// Program is a graph lowered for a single-path target.
type Program struct {
	Graph  *dataflow.Graph
	Start  *dataflow.Node
	Blocks []*Block // reachable F-nodes in graph order
	block  map[*dataflow.Node]*Block
}

// Lower lowers g, run from its first source, for target; it refuses a
// graph in which a frame could take two paths.
func Lower(g *dataflow.Graph, target string) (*Program, error) {
	srcs := g.Sources()
	if len(srcs) == 0 {
		return nil, backends.Refuse(target, nil, "graph %s has no source", g.Name)
	}
	return LowerFrom(g, target, srcs[0])
}

// LowerFrom lowers the part of g that start reaches, run from start (a
// PRG's Rx sink, for a program that gets frames where the device hands
// them over).
func LowerFrom(g *dataflow.Graph, target string, start *dataflow.Node) (*Program, error) {
	if rs := backends.SinglePath(g, target); rs != nil {
		return nil, rs.Err()
	}
	p := &Program{Graph: g, Start: start, block: map[*dataflow.Node]*Block{}}
	reach := dataflow.Reachable(p.Start)
	for _, n := range g.Order() {
		if n.Kind != dataflow.FNode || !reach[n] {
			continue
		}
		b := &Block{Node: n}
		for _, name := range n.Op.Ports(g.Schema) {
			b.Exits = append(b.Exits, PortExit(n, name))
		}
		p.Blocks = append(p.Blocks, b)
		p.block[n] = b
	}
	return p, nil
}

// PortExit resolves F-node n's port name: where a frame goes when n's
// operation fires it (P4's parser and control take their exits from it).
func PortExit(n *dataflow.Node, name string) Exit {
	pt := n.Port(name)
	if pt == nil {
		return Exit{Kind: Drop, From: n.ID, Site: n.Name + "." + name, Reason: sim.ReasonUnconnected}
	}
	return follow(pt, nil)
}

// follow resolves the way along port pt: to the next F-node, through
// O-nodes, or out of the graph.
func follow(pt *dataflow.Port, hops []Hop) Exit {
	n := pt.Node
	if len(pt.Out) == 0 {
		if n.Sink {
			return Exit{Kind: Sink, Hops: hops, From: n.ID, To: n}
		}
		return Exit{Kind: Drop, Hops: hops, From: n.ID, Site: n.Name + "." + pt.Name, Reason: sim.ReasonUnconnected}
	}
	to := pt.Out[0].To
	switch to.Kind {
	case dataflow.FNode:
		return Exit{Kind: Goto, Hops: hops, From: n.ID, To: to}
	case dataflow.ONode:
		want, ok := flow.Decide(to, pt)
		if !ok {
			return Exit{Kind: Undecided, Hops: hops, From: n.ID, Site: to.Name}
		}
		hops = append(hops, Hop{From: n.ID, Node: to, Port: want})
		op := to.Port(want)
		if op == nil {
			return Exit{Kind: Drop, Hops: hops, From: to.ID, Site: to.Name + "." + want, Reason: sim.ReasonUnconnected}
		}
		return follow(op, hops)
	default: // C-nodes never run
		return Exit{Kind: Undecided, Hops: hops, From: n.ID}
	}
}
