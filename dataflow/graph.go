package dataflow

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"

	"github.com/dragonet-go/nsc/internal/errlist"
	"github.com/dragonet-go/nsc/packet"
)

// Kind is the kind of a graph.
type Kind uint8

const (
	LPG Kind = iota
	PRG
)

func (k Kind) String() string {
	if k == PRG {
		return "prg"
	}
	return "lpg"
}

// NodeKind says what a node is.
type NodeKind uint8

const (
	FNode NodeKind = iota
	ONode
	CNode
)

// Logic is an O-node's operator.
type Logic uint8

const (
	And Logic = iota
	Or
	Nand
	Nor
	Not
)

var logicNames = [...]string{"and", "or", "nand", "nor", "not"}

func (l Logic) String() string { return logicNames[l] }

// ParseLogic maps a keyword to its operator.
func ParseLogic(s string) (Logic, bool) {
	i := slices.Index(logicNames[:], s)
	return Logic(i), i >= 0
}

// Config is a C-node's typed configuration: its declared type and, if the
// model gives one, its value (package prg gives both their meaning).
type Config struct {
	Type  string
	Value string // Lit as text, "" when none is given
	// Lit is the value as written, with positions; nil when none is given.
	Lit *Literal
}

// LitKind is what a configuration literal is.
type LitKind uint8

const (
	LitNumber LitKind = iota // a number or an IPv4 address
	LitString
	LitIdent
	LitList
)

// Literal is a configuration value as written: Text (a number, an IPv4
// address, a string's contents, an identifier) or a List, at Pos.
type Literal struct {
	Kind LitKind
	Text string
	List []*Literal
	Pos  string
}

// Node is one node of a graph.
type Node struct {
	ID      int64
	Name    string   // full name, cluster prefixes included
	Cluster []string // enclosing clusters, outermost first
	Kind    NodeKind
	Op      *packet.Op // F-nodes
	Logic   Logic      // O-nodes
	Config  *Config    // C-nodes
	Ports   []*Port
	In      []*Edge

	Software, Hardware, Source, Sink bool
	// Program marks a sink of a programmable device (a P4 pipeline, an
	// XDP hook): the graph behind it is compiled into the device's program.
	Program bool
	// Host marks an emit that hands the frame to the host's own network
	// stack rather than out of the device (a punt).
	Host bool
	// Rule marks a hardware node that is a match-action rule of a flow
	// table (a flow NIC's set-field, decap, lookup): it does its work only
	// when installed, which the embedder does for a stage it moves there;
	// otherwise packets pass it by its first port.
	Rule bool
	// Pos is where the node is declared, "file:line:col".
	Pos string
}

// Port is a named output of a node.
type Port struct {
	Name  string
	Node  *Node
	Index int
	Out   []*Edge
	Spawn []*Edge
	// Pred is a symbolic atom the model adds to this port's predicate.
	Pred string
	Pos  string
}

// Edge connects a port to a node. Spawn edges start a new task at To
// instead of passing the packet on; they may close cycles.
type Edge struct {
	From  *Port
	To    *Node
	Spawn bool
}

// Port returns the named port.
func (n *Node) Port(name string) *Port {
	for _, p := range n.Ports {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Graph is an LPG or a PRG over a packet schema.
type Graph struct {
	Name   string
	Kind   Kind
	Schema *packet.Schema
	// Limits are a PRG's declared resources (see prg.LimitNames); a missing
	// one is unlimited.
	Limits map[string]int
	Nodes  []*Node
	// Declared is the graph as the model declares it when this one is a
	// configuration of it (its C-nodes instantiated, see package prg).
	Declared *Graph
	byName   map[string]*Node

	order []*Node
	preds *Predicates
}

// New returns an empty graph.
func New(name string, kind Kind, schema *packet.Schema) *Graph {
	return &Graph{Name: name, Kind: kind, Schema: schema, Limits: map[string]int{}, byName: map[string]*Node{}}
}

// Node returns the named node.
func (g *Graph) Node(name string) *Node { return g.byName[name] }

// AddNode adds n; its name must be new.
func (g *Graph) AddNode(n *Node) error {
	if _, dup := g.byName[n.Name]; dup {
		return fmt.Errorf("node %s declared twice", n.Name)
	}
	n.ID = int64(len(g.Nodes))
	g.Nodes = append(g.Nodes, n)
	g.byName[n.Name] = n
	return nil
}

// AddPort adds a port to n.
func (n *Node) AddPort(name, pos string) *Port {
	p := &Port{Name: name, Node: n, Index: len(n.Ports), Pos: pos}
	n.Ports = append(n.Ports, p)
	return p
}

// Connect adds an edge from port p to node to.
func Connect(p *Port, to *Node, spawn bool) *Edge {
	e := &Edge{From: p, To: to, Spawn: spawn}
	if spawn {
		p.Spawn = append(p.Spawn, e)
	} else {
		p.Out = append(p.Out, e)
		to.In = append(to.In, e)
	}
	return e
}

// Sources are the nodes packets enter by, in declaration order.
func (g *Graph) Sources() []*Node {
	var out []*Node
	for _, n := range g.Nodes {
		if n.Source {
			out = append(out, n)
		}
	}
	return out
}

// directed is the graph of normal edges for gonum.
func (g *Graph) directed() *simple.DirectedGraph {
	d := simple.NewDirectedGraph()
	for _, n := range g.Nodes {
		d.AddNode(simple.Node(n.ID))
	}
	for _, n := range g.Nodes {
		for _, p := range n.Ports {
			for _, e := range p.Out {
				if e.To != n && !d.HasEdgeFromTo(n.ID, e.To.ID) {
					d.SetEdge(simple.Edge{F: simple.Node(n.ID), T: simple.Node(e.To.ID)})
				}
			}
		}
	}
	return d
}

// Order is a topological order of the normal edges, stable: among nodes
// that could go in any order, declaration order wins. Validate first; on a
// graph with a cycle Order returns nil.
func (g *Graph) Order() []*Node {
	if g.order != nil {
		return g.order
	}
	ids, err := topo.SortStabilized(g.directed(), func(ns []graph.Node) {
		sort.Slice(ns, func(i, j int) bool { return ns[i].ID() < ns[j].ID() })
	})
	if err != nil {
		return nil
	}
	g.order = make([]*Node, len(ids))
	for i, id := range ids {
		g.order[i] = g.Nodes[id.ID()]
	}
	return g.order
}

// An Error is a validation problem at a node.
type Error struct {
	Pos string
	Msg string
}

func (e *Error) Error() string {
	if e.Pos == "" {
		return e.Msg
	}
	return e.Pos + ": " + e.Msg
}

// Errors is a list of validation problems, in declaration order.
type Errors = errlist.List[*Error]

// Validate checks the graph's structure.
func (g *Graph) Validate() error {
	var errs Errors
	spawned := spawnTargets(g)
	add := func(pos, format string, args ...any) {
		errs = append(errs, &Error{pos, fmt.Sprintf(format, args...)})
	}
	for _, n := range g.Nodes {
		for _, p := range n.Ports {
			for _, e := range p.Out {
				if e.To == n {
					add(p.Pos, "node %s: port %s leads back to the node itself (only spawn edges may close a cycle)", n.Name, p.Name)
				}
			}
		}
		if n.Kind == CNode && n.Source {
			add(n.Pos, "config node %s cannot be a source; sources are nodes with op input", n.Name)
		}
		switch n.Kind {
		case FNode:
			want := n.Op.Ports(g.Schema)
			for _, w := range want {
				if n.Port(w) == nil {
					add(n.Pos, "node %s: port %s of %s is not connected (declare `port %s` to end packets there)", n.Name, w, n.Op.Kind, w)
				}
			}
			for _, p := range n.Ports {
				if !slices.Contains(want, p.Name) {
					add(p.Pos, "node %s: %s has no port %s (it has %s)", n.Name, n.Op.Kind, p.Name, portList(want))
				}
			}
			if len(n.In) == 0 && !n.Source && !spawned[n] {
				add(n.Pos, "node %s cannot run: no edge leads to it and it is not a source", n.Name)
			}
			if n.Source && n.Op.Kind != packet.OpInput {
				add(n.Pos, "node %s: a source must have op input", n.Name)
			}
		case ONode:
			if n.Source {
				add(n.Pos, "%s node %s cannot be a source; sources are nodes with op input", n.Logic, n.Name)
			}
			for _, p := range n.Ports {
				if p.Name != packet.PortTrue && p.Name != packet.PortFalse {
					add(p.Pos, "%s node %s: port %s: O-nodes have ports true and false", n.Logic, n.Name, p.Name)
				}
			}
			operands := len(Operands(n))
			switch {
			case operands == 0:
				add(n.Pos, "%s node %s cannot run: it has no operands", n.Logic, n.Name)
			case n.Logic == Not && operands != 1:
				add(n.Pos, "not node %s has %d operands, want 1", n.Name, operands)
			}
		}
	}
	if len(errs) == 0 && g.Order() == nil {
		pos, msg := cycleMessage(g)
		add(pos, "graph %s: %s", g.Name, msg)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// spawnTargets are the nodes some spawn edge leads to.
func spawnTargets(g *Graph) map[*Node]bool {
	out := map[*Node]bool{}
	for _, m := range g.Nodes {
		for _, p := range m.Ports {
			for _, e := range p.Spawn {
				out[e.To] = true
			}
		}
	}
	return out
}

func portList(ps []string) string {
	if len(ps) == 0 {
		return "no ports"
	}
	return strings.Join(ps, ", ")
}

func cycleMessage(g *Graph) (pos, msg string) {
	cycles := topo.DirectedCyclesIn(g.directed())
	if len(cycles) == 0 {
		return "", "cycle"
	}
	c := cycles[0]
	names := make([]string, len(c))
	for i, n := range c {
		names[i] = g.Nodes[n.ID()].Name
	}
	return g.Nodes[c[0].ID()].Pos, fmt.Sprintf("cycle %s (only spawn edges may close a cycle)", strings.Join(names, " -> "))
}

// Reachable returns the nodes reachable from n by normal edges, n included.
func Reachable(n *Node) map[*Node]bool {
	seen := map[*Node]bool{}
	todo := []*Node{n}
	for len(todo) > 0 {
		x := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[x] {
			continue
		}
		seen[x] = true
		for _, p := range x.Ports {
			for _, e := range p.Out {
				todo = append(todo, e.To)
			}
		}
	}
	return seen
}

// Operands are the distinct nodes feeding an O-node, in edge order.
func Operands(n *Node) []*Node {
	var out []*Node
	for _, e := range n.In {
		if !slices.Contains(out, e.From.Node) {
			out = append(out, e.From.Node)
		}
	}
	return out
}

// Truthy is the boolean a port delivers into an O-node: false for ports
// named false, true for every other port.
func Truthy(p *Port) bool { return p.Name != packet.PortFalse }
