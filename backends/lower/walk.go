package lower

import (
	"slices"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Dialect prints a lowered program's parts in one target's language:
// the instructions lower decides (conditions and values, exits, sets,
// pops, parses, a lookup's keys and action dispatch) and the operations
// lowered into one description each (Extract to Compute below), which
// the printer prints with its target's structures and runtime
// (docs/lowering.md). PlaceSyntax and the RoCE operations (roce.go) are
// printed by a dialect that implements them and refused for one that
// does not. A printer that picks a port itself calls Walker.Fire; one
// that returns a condition leaves the branch to the Walker.
type Dialect interface {
	// Conditions and values, and the If, EndIf, PushScope and PopScope
	// blocks use.
	ValueSyntax
	// The ways out (Exit): an O-node decided on the way, the jump to the
	// next F-node (each with the marker of its flow edge, for its
	// counter), a sink and a drop (with their numbers), an undecided end.
	Decided(h *Hop, edge string)
	Goto(e *Exit, edge string)
	Sink(e *Exit, sink int)
	Drop(e *Exit, drop int)
	// Undecided ends a frame no O-node could decide at drop site drop,
	// which all such ends share (edge: the marker of the end's own
	// counter); why says which O-node ("" for a C-node), for a comment.
	Undecided(e *Exit, why, edge string, drop int)
	// A switch: Switch declares its value (sw.Var, through Var), then
	// come its cases in order (the case's index and value), the default,
	// the end.
	Switch(sw *Switch)
	Case(sw *Switch, i int, v packet.Value)
	Default(sw *Switch)
	EndSwitch(sw *Switch)
	// A lookup's action dispatch, a set, a pop, lowered (Walker.Actions,
	// LowerSet, LowerPop).
	ActionSyntax
	SetSyntax
	PopSyntax

	// A parse, unrolled (Parse).
	ParseSyntax
	// DropUnless drops the frame, malformed, unless cond holds.
	DropUnless(cond string)

	// The operations lowered into one description each.
	// Extract prints extract node n, lowered (LowerExtract): it returns
	// the condition that the header is there, or fired when the printer
	// branched itself.
	Extract(n *dataflow.Node, x *Extract) (cond string, fired bool)
	// Lookup spells a lowered lookup: its keys' loads and stores as the
	// words or bytes its target's index reads them (LookupKey), the
	// probe of the target's table structures in a shape the lookup
	// allows, and Walker.Actions where the picked action runs.
	Lookup(n *dataflow.Node, l *Lookup)
	// Push prints a lowered push (LowerPush).
	Push(p *Push)
	// A checksum verify (the condition that it holds) and compute,
	// lowered (LowerChecksum).
	Verify(c *Checksum) (cond string)
	Compute(c *Checksum)
}

// Walker prints a Program's blocks through a Dialect.
type Walker struct {
	P      *Program
	D      Dialect
	Target string
	// Refused are the refusals so far: the walker's and the dialect's
	// (Refuse).
	Refused backends.Refusals
	// Valid is the validity analysis lower decides with (Analyze, Known):
	// which headers may be valid, and in which order, where a block runs
	// (none: any may, in any order).
	Valid *flow.Validity
	// Pops are the pops that move the frame together.
	Pops flow.PopChains
	// The numbered drop sites, sinks and count labels, and the flow
	// edges of the printed code (ends.go).
	Drops  Names[DropSite]
	Sinks  Names[string]
	Counts Names[string]
	Edges  flow.Edges

	cur    *Block
	forgot bool // the block's code changed the headers' validity (known.go)
	jumps  map[*dataflow.Node][]*dataflow.Node
}

// NewWalker returns a walker printing p through d for target.
func NewWalker(p *Program, d Dialect, target string) *Walker {
	return &Walker{P: p, D: d, Target: target, Valid: &flow.Validity{}, jumps: map[*dataflow.Node][]*dataflow.Node{}}
}

// Refuse refuses node n (nil: the graph) once: what a node's code does
// after its first refusal means little.
func (w *Walker) Refuse(n *dataflow.Node, format string, args ...any) {
	r := backends.Refuse(w.Target, n, format, args...)
	for _, o := range w.Refused {
		if o.Node == r.Node {
			return
		}
	}
	w.Refused = append(w.Refused, r)
}

// Print prints every block: begin, its operation and exits, end (which
// returns the block's code). It returns the code per node, the nodes each
// block jumps to, and the live nodes, those jumps reach from the start.
func (w *Walker) Print(begin func(*Block), end func(*Block) []byte) (code map[*dataflow.Node][]byte, targets map[*dataflow.Node][]*dataflow.Node, live map[*dataflow.Node]bool) {
	code = map[*dataflow.Node][]byte{}
	for _, b := range w.P.Blocks {
		w.cur, w.forgot = b, false
		begin(b)
		w.Node(b)
		code[b.Node] = end(b)
	}
	w.cur = nil
	live = map[*dataflow.Node]bool{w.P.Start: true}
	todo := []*dataflow.Node{w.P.Start}
	for len(todo) > 0 {
		n := todo[0]
		todo = todo[1:]
		for _, t := range w.jumps[n] {
			if !live[t] {
				live[t] = true
				todo = append(todo, t)
			}
		}
	}
	return code, w.jumps, live
}

// Node prints block b's operation and the exits it picks.
func (w *Walker) Node(b *Block) {
	n, d := b.Node, w.D
	switch n.Op.Kind {
	case packet.OpInput:
		if n.Op.Header >= 0 {
			w.parse(n)
		}
		w.Fire(n, 0)
	case packet.OpNop, packet.OpContext:
		w.Fire(n, 0)
	case packet.OpCount:
		w.Counts.Add(n.Op.Label) // counted as the node's runs
		w.Fire(n, 0)
	case packet.OpParse:
		w.parse(n)
	case packet.OpExtract:
		x := LowerExtract(w.P.Graph.Schema, n.Op.Header)
		x.Known = w.Known(x.H)
		w.forget()
		if cond, fired := d.Extract(n, x); !fired {
			w.Branch(n, cond)
		}
	case packet.OpTest:
		w.Branch(n, w.Cond(n.Op.Cond))
	case packet.OpSwitch:
		w.switchOp(n)
	case packet.OpLookup:
		w.lookup(n)
	case packet.OpSet:
		w.set(n)
		w.Fire(n, 0)
	case packet.OpPush:
		w.push(n)
		w.Fire(n, 0)
	case packet.OpPop:
		w.pop(n)
		w.Fire(n, 0)
	case packet.OpChecksumVerify:
		w.Branch(n, d.Verify(w.LowerChecksum(n)))
	case packet.OpChecksumCompute:
		d.Compute(w.LowerChecksum(n))
		w.Fire(n, 0)
	case packet.OpEmit, packet.OpSteer:
		w.Exit(&Exit{Kind: Sink, From: n.ID, To: n, Own: true})
	case packet.OpDrop:
		w.Exit(&Exit{Kind: Drop, From: n.ID, Site: n.Name, Reason: n.Op.Label, Own: true})
	case packet.OpPlace:
		w.place(n)
	case packet.OpICRCVerify, packet.OpICRCCompute, packet.OpLoad, packet.OpStore, packet.OpCut:
		w.roce(n)
	default:
		w.Refuse(n, "operation %s is not supported", n.Op.Kind)
	}
}

// Branch fires port 0 (true) when cond holds, else port 1 (false).
func (w *Walker) Branch(n *dataflow.Node, cond string) {
	w.D.If(cond)
	w.Fire(n, 0)
	w.D.EndIf()
	w.Fire(n, 1)
}

// Fire prints what happens when F-node n's operation picks its k-th port.
func (w *Walker) Fire(n *dataflow.Node, k int) {
	b := w.P.block[n]
	if b == nil || k < 0 || k >= len(b.Exits) {
		w.Refuse(n, "port %d of its operation does not exist", k)
		return
	}
	e := &b.Exits[k]
	if e.Kind == Goto {
		w.jumps[n] = append(w.jumps[n], e.To)
	}
	w.Exit(e)
}

// FirePort fires F-node n's port by name.
func (w *Walker) FirePort(n *dataflow.Node, port string) {
	w.Fire(n, slices.Index(n.Op.Ports(w.P.Graph.Schema), port))
}

// Exit prints the way out along e, recording its flow edges.
func (w *Walker) Exit(e *Exit) {
	for i := range e.Hops {
		h := &e.Hops[i]
		w.D.Decided(h, w.Edges.Jump(w.owner(), h.From, h.Node.ID))
	}
	switch e.Kind {
	case Goto:
		w.D.Goto(e, w.Edges.Jump(w.owner(), e.From, e.To.ID))
	case Sink:
		w.D.Sink(e, w.sinkEnd(e.From, e.To))
	case Drop:
		w.D.Drop(e, w.DropEnd(e.From, e.Site, e.Reason))
	case Undecided:
		why := ""
		if e.Site != "" {
			why = e.Site + " cannot decide on one operand"
		}
		edge := w.Edges.Shared(w.owner(), e.From)
		w.D.Undecided(e, why, edge, w.Drops.Add(DropSite{w.P.Start.Name, "undecided"}))
	}
}

// Switch is a lowered switch: its value, 128 bits or a word, compared
// with each case's.
type Switch struct {
	Node *dataflow.Node
	Wide bool
	// Var is the variable holding the value, once Dialect.Switch has
	// declared it.
	Var string
}

// switchOp prints a switch: each case fires its port, the default its.
func (w *Walker) switchOp(n *dataflow.Node) {
	sw := &Switch{Node: n, Wide: flow.IsWide(n.Op.Expr)}
	w.D.Switch(sw)
	for i, cs := range n.Op.Cases {
		w.D.Case(sw, i, cs.Value)
		w.FirePort(n, cs.Port)
	}
	w.D.Default(sw)
	w.FirePort(n, n.Op.Default)
	w.D.EndSwitch(sw)
}
