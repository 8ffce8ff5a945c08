package embed

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
)

// pruneRx propagates each Rx sink's predicate through its LPG copy: ports
// that no packet can take are cut, nodes whose outcome is decided are
// folded away (F-nodes that only decide, and O-nodes whose value the
// predicates imply), and what can no longer be reached goes.
func (b *builder) pruneRx() error {
	g, of, err := b.graph()
	if err != nil {
		return err
	}
	ps := g.PredicatesIn(b.space)
	order := map[*dataflow.Node]int{}
	for i, n := range g.Order() {
		order[n] = i
	}
	copies := slices.DeleteFunc(slices.Clone(b.nodes), func(e *enode) bool { return e.sink == "" })
	portOf := map[*eport]*dataflow.Port{}
	for e, n := range of {
		for i, p := range e.ports {
			portOf[p] = n.Ports[i]
		}
	}
	slices.SortFunc(copies, func(x, y *enode) int { return order[of[x]] - order[of[y]] })

	// Folding an O-node can let the F-nodes before it fold: repeat until
	// nothing changes. The port predicates stay those of the full graph:
	// cutting and folding keep every surviving port's packets the same.
	for changed := true; changed; {
		changed = false
		for _, e := range copies {
			if e.removed {
				continue
			}
			n := of[e]
			if !predicate.Satisfiable(ps.Reaching(n)) {
				b.remove(e, "unreachable")
				changed = true
				continue
			}
			var live []*eport
			for i, p := range e.ports {
				if predicate.Satisfiable(ps.Port(n.Ports[i])) {
					live = append(live, p)
					continue
				}
				if len(p.out) > 0 || len(p.spawn) > 0 {
					b.note(e, fmt.Sprintf("port %s cut", p.name))
					p.out, p.spawn = nil, nil
					changed = true
				}
			}
			if len(live) == 1 && len(live[0].spawn) == 0 && len(live[0].out) > 0 && b.fold(e, n, live[0], ps) {
				changed = true
				continue
			}
			if n.Kind == dataflow.ONode && b.trim(e, n, ps, portOf) {
				changed = true
			}
		}
	}
	// Nodes left without a way in go too.
	for changed := true; changed; {
		changed = false
		in := preds(b.nodes)
		for _, e := range copies {
			if !e.removed && len(in[e]) == 0 {
				b.remove(e, "unreachable")
				changed = true
			}
		}
	}
	return nil
}

// fold removes a node whose outcome is decided: every edge into it now
// leads where its live port led. An F-node is folded only if it just
// decides (test, switch, checksum verify, parse, or extract of a header
// the packets already have) and its live port feeds
// no O-node (the O-node would see another port's boolean). An O-node is
// folded only if, for the packets it lets through, "any operand arrived
// with the live value" equals its own semantics (BDD equivalence).
func (b *builder) fold(e *enode, n *dataflow.Node, live *eport, ps *dataflow.Predicates) bool {
	if n.Kind == dataflow.FNode {
		switch e.op.Kind {
		case packet.OpTest, packet.OpSwitch:
			// Deciding is not all a test does: on a packet that lacks a
			// header it reads, it drops the packet as malformed.
			e := e.op.Cond
			if e == nil {
				e = n.Op.Expr
			}
			if predicate.Satisfiable(ps.Reaching(n).And(ps.Malformed(e))) {
				return false
			}
		case packet.OpChecksumVerify, packet.OpICRCVerify:
		case packet.OpParse:
			// Parsing again forgets a header extracted since the last
			// parse; the predicates do not say so.
			if ps.ChangedSinceParse(n) {
				return false
			}
		case packet.OpInput:
			// The LPG's entry kept behind a sink (build): its parse is
			// done when the PRG parsed from the same header on the way.
			if e.op.Header < 0 || !predicate.Implies(ps.Reaching(n), ps.Parsed(e.op.Header)) ||
				slices.ContainsFunc(live.out, func(t *enode) bool { return t.tmpl.Kind == dataflow.ONode && !t.removed }) {
				return false
			}
			b.bypass(e, live, fmt.Sprintf("joined to the PRG's Rx sinks; %s parsed from %s before them", b.prg.Name, b.lpg.Schema.Headers[e.op.Header].Name))
			return true
		case packet.OpPlace:
			// A sink's claim says how the place ended (rxoffload.go).
			if !e.claimed {
				return false
			}
		case packet.OpPop:
			// A header split did it (rxoffload.go).
			if why, ok := b.splitPop(e, ps.Reaching(n)); !ok {
				if why != "" {
					b.note(e, why)
				}
				return false
			}
			b.bypass(e, live, "done by "+b.prg.Name+"'s header split")
			return true
		case packet.OpExtract:
			// Extracting a header that every packet here has already
			// changes nothing.
			h := b.lpg.Schema.Headers[e.op.Header].Name
			if live.name != packet.PortTrue || !predicate.Implies(ps.Reaching(n), b.space.Valid(h)) {
				return false
			}
		default:
			return false
		}
		if slices.ContainsFunc(live.out, func(t *enode) bool { return t.tmpl.Kind == dataflow.ONode && !t.removed }) {
			return false
		}
		b.bypass(e, live, fmt.Sprintf("always %s", live.name))
		return true
	}
	if n.Kind != dataflow.ONode {
		return false
	}
	// Operand edges carrying the live port's value.
	want := live.name == packet.PortTrue
	if n.Logic == dataflow.Not || n.Logic == dataflow.Nand || n.Logic == dataflow.Nor {
		want = !want
	}
	var any []predicate.Pred
	var from []*eport
	for _, ed := range n.In {
		if dataflow.Truthy(ed.From) == want {
			any = append(any, ps.Port(ed.From))
		}
	}
	for _, x := range b.nodes {
		for _, p := range x.ports {
			if slices.Contains(p.out, e) && (p.name != packet.PortFalse) == want {
				from = append(from, p)
			}
		}
	}
	if !predicate.Equivalent(b.space.Or(any...), ps.Port(n.Port(live.name))) {
		return false
	}
	// Edges of the other value lead nowhere now.
	for _, x := range b.nodes {
		for _, p := range x.ports {
			if slices.Contains(p.out, e) && !slices.Contains(from, p) {
				p.out = slices.DeleteFunc(p.out, func(t *enode) bool { return t == e })
			}
		}
	}
	b.bypass(e, live, fmt.Sprintf("always %s (%s folded by implication)", live.name, strings.ToUpper(n.Logic.String())))
	return true
}

// trim drops an operand of an O-node that the others imply: if the node's
// true and false predicates stay BDD-equivalent without operand x, x's
// edges into it go (an AND whose second operand only runs when the first
// is true does not need the first).
func (b *builder) trim(e *enode, n *dataflow.Node, ps *dataflow.Predicates, portOf map[*eport]*dataflow.Port) bool {
	if n.Logic == dataflow.Not {
		return false
	}
	type operand struct {
		src  *enode
		t, f predicate.Pred
	}
	var ops []*operand
	for _, x := range b.nodes {
		if x.removed {
			continue
		}
		var o *operand
		for _, p := range x.ports {
			if !slices.Contains(p.out, e) {
				continue
			}
			if o == nil {
				o = &operand{src: x, t: b.space.False(), f: b.space.False()}
				ops = append(ops, o)
			}
			if p.name == packet.PortFalse {
				o.f = o.f.Or(ps.Port(portOf[p]))
			} else {
				o.t = o.t.Or(ps.Port(portOf[p]))
			}
		}
	}
	if len(ops) < 2 {
		return false
	}
	value := func(skip *operand) (yes, no predicate.Pred) {
		var ts, fs []predicate.Pred
		for _, o := range ops {
			if o != skip {
				ts, fs = append(ts, o.t), append(fs, o.f)
			}
		}
		if n.Logic == dataflow.And || n.Logic == dataflow.Nand {
			return b.space.And(ts...), b.space.Or(fs...)
		}
		return b.space.Or(ts...), b.space.And(fs...)
	}
	// A port that led only here would then end its packets (a counted
	// drop), which changes behaviour: such operands stay.
	onlyHere := func(x *enode) bool {
		for _, p := range x.ports {
			if slices.Contains(p.out, e) && len(p.out) == 1 && len(p.spawn) == 0 {
				return true
			}
		}
		return false
	}
	yes, no := value(nil)
	for _, o := range ops {
		if onlyHere(o.src) {
			continue
		}
		y, f := value(o)
		if !predicate.Equivalent(y, yes) || !predicate.Equivalent(f, no) {
			continue
		}
		for _, p := range o.src.ports {
			p.out = slices.DeleteFunc(p.out, func(t *enode) bool { return t == e })
		}
		b.note(e, fmt.Sprintf("operand %s implied", o.src.tmpl.Name))
		return true
	}
	return false
}

// bypass removes e, sending what reached it where its live port leads.
func (b *builder) bypass(e *enode, live *eport, why string) {
	redirect(b.nodes, e, live.out)
	b.remove(e, why)
}

func (b *builder) remove(e *enode, why string) {
	e.removed = true
	b.note(e, why)
	for _, p := range e.ports {
		p.out, p.spawn = nil, nil
	}
}

// note records what happened to a copy, for the placement report.
func (b *builder) note(e *enode, what string) {
	if !e.lpg {
		return
	}
	if b.notes[e.tmpl] == nil {
		b.notes[e.tmpl] = map[string][]string{}
	}
	if ns := b.notes[e.tmpl][e.sink]; len(ns) > 0 && ns[len(ns)-1] == what {
		return // pruning passes again over what it saw
	}
	b.notes[e.tmpl][e.sink] = append(b.notes[e.tmpl][e.sink], what)
}

// story tells, per group of sinks, what became of an LPG node's copies:
// "always true behind RxCsumValid; unreachable behind RxOut_". Copies that
// run are told by Placement.Serves; ports cut in them are added here.
func (b *builder) story(n *dataflow.Node) string {
	bySink := b.notes[n]
	var order []string
	groups := map[string][]string{}
	for _, s := range b.rxSinks {
		notes := bySink[s.Name]
		if len(notes) == 0 {
			continue
		}
		what := notes[len(notes)-1]
		if !b.copyRemoved(n, s.Name) {
			what = strings.Join(notes, ", ") // only cuts
		}
		if _, ok := groups[what]; !ok {
			order = append(order, what)
		}
		groups[what] = append(groups[what], s.Name)
	}
	parts := make([]string, len(order))
	for i, what := range order {
		parts[i] = what + " behind " + strings.Join(groups[what], ", ")
	}
	return strings.Join(parts, "; ")
}

func (b *builder) copyRemoved(n *dataflow.Node, sink string) bool {
	for _, e := range b.copies[n] {
		if e.sink == sink {
			return e.removed && len(b.notes[n][sink]) > 0 && !strings.HasPrefix(b.notes[n][sink][len(b.notes[n][sink])-1], "port ")
		}
	}
	return false
}
