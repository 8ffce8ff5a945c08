package embed

import (
	"fmt"
	"slices"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
)

// A stage is an LPG node that a PRG hardware node might do instead: the
// same operation on the same header (a checksum computation, a push or
// pop, a field assignment).
func sameWork(a, b *packet.Op) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case packet.OpChecksumCompute, packet.OpPush, packet.OpPop:
		return a.Header == b.Header
	case packet.OpLookup:
		return a.Table == b.Table
	case packet.OpSet:
		for _, x := range a.Assign {
			if !slices.ContainsFunc(b.Assign, func(y packet.Assign) bool { return y.Dst == x.Dst }) {
				return false
			}
		}
		return len(a.Assign) > 0
	}
	return false
}

// outcome is the result of trying to offload one stage.
type outcome struct {
	hw             string // hardware node that does the work
	guard          string // residual guard, for a split
	reason         string
	counterexample string
}

// offloadTx tries every LPG stage that some PRG hardware node could do:
// remove it (or keep it behind a residual guard) and compare, by BDD
// equivalence, the predicate at every place packets end.
func (b *builder) offloadTx() error {
	for _, e := range slices.Clone(b.nodes) {
		if e.removed || !e.lpg || e.tmpl.Kind != dataflow.FNode {
			continue
		}
		var hws []*enode
		for _, x := range b.nodes {
			if !x.removed && !x.lpg && x.hardware && x.op != nil && sameWork(e.op, x.op) && b.downstream(e, x) {
				hws = append(hws, x)
			}
		}
		if len(hws) == 0 {
			continue
		}
		if why := b.overLimits(e); why != "" {
			p := b.placeOf(e.tmpl)
			p.Kind, p.Reason = Software, fmt.Sprintf("%s could do it, but %s", hws[0].name, why)
			continue
		}
		if len(e.ports) != 1 {
			p := b.placeOf(e.tmpl)
			p.Kind, p.Reason = Software, fmt.Sprintf("%s does the same, but moving a node with %d ports is not supported yet", hws[0].name, len(e.ports))
			continue
		}
		o, err := b.tryOffload(e, hws)
		if err != nil {
			return err
		}
		p := b.placeOf(e.tmpl)
		switch {
		case o.hw != "" && o.guard == "":
			p.Kind, p.Hardware, p.Reason = Hardware, o.hw, o.reason
		case o.guard != "":
			p.Kind, p.Hardware, p.Guard, p.Reason, p.Counterexample = Split, o.hw, o.guard, o.reason, o.counterexample
		default:
			p.Kind, p.Reason, p.Counterexample = Software, o.reason, o.counterexample
		}
	}
	return nil
}

// overLimits says which of the PRG's declared limits a table stage
// exceeds, or "".
func (b *builder) overLimits(e *enode) string {
	if e.op.Kind != packet.OpLookup {
		return ""
	}
	spec := b.lpg.Schema.Tables[e.op.Table].Spec
	keyBits, actionBits := spec.KeyBits(), spec.ActionBits()
	tables := map[int]bool{}
	for _, x := range b.nodes {
		if !x.removed && x.op != nil && x.op.Kind == packet.OpLookup && (x.hardware || x == e) {
			tables[x.op.Table] = true
		}
	}
	lim := b.prg.Limits
	over := func(name string, need int) bool { v, ok := lim[name]; return ok && need > v }
	switch {
	case over("table_size", spec.Size):
		return fmt.Sprintf("table %s has %d entries and %s holds at most %d (limit table_size)", spec.Name, spec.Size, b.prg.Name, lim["table_size"])
	case over("key_bits", keyBits):
		return fmt.Sprintf("table %s has a %d-bit key and %s takes at most %d bits (limit key_bits)", spec.Name, keyBits, b.prg.Name, lim["key_bits"])
	case over("action_bits", actionBits):
		return fmt.Sprintf("table %s's actions carry %d bits of parameters and %s at most %d (limit action_bits)", spec.Name, actionBits, b.prg.Name, lim["action_bits"])
	case over("tables", len(tables)):
		return fmt.Sprintf("%s would need %d tables and holds at most %d (limit tables)", b.prg.Name, len(tables), lim["tables"])
	}
	return ""
}

// downstream reports whether x can be reached from e.
func (b *builder) downstream(e, x *enode) bool {
	seen := map[*enode]bool{}
	var walk func(n *enode) bool
	walk = func(n *enode) bool {
		if n == x {
			return true
		}
		if seen[n] {
			return false
		}
		seen[n] = true
		for _, p := range n.ports {
			for _, t := range p.out {
				if !t.removed && walk(t) {
					return true
				}
			}
		}
		return false
	}
	return walk(e)
}

// ends are the predicates at the nodes where packets end, by name.
func (b *builder) ends() (map[string]predicate.Pred, error) {
	g, _, err := b.graph()
	if err != nil {
		return nil, err
	}
	if g.Order() == nil {
		return nil, fmt.Errorf("embedded graph %s has a cycle", g.Name)
	}
	ps := g.PredicatesIn(b.space)
	out := map[string]predicate.Pred{}
	for _, n := range g.Nodes {
		if n.Kind == dataflow.FNode && (n.Op.Terminal() || n.Sink) {
			out[n.Name] = ps.Reaching(n)
		}
	}
	return out, nil
}

// differ returns the first place (in name order) whose predicate differs,
// with a packet class that ends there with the stage and not without it
// (or the reverse).
func differ(with, without map[string]predicate.Pred) (where, class string) {
	names := make([]string, 0, len(with))
	for k := range with {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		w, wo := with[k], without[k]
		if predicate.Equivalent(w, wo) {
			continue
		}
		// Print only what sets the class apart from the packets that end
		// there either way.
		both := w.Or(wo)
		if c, ok := predicate.Counterexample(w, wo); ok {
			return k, c.Relative(both).String()
		}
		c, _ := predicate.Counterexample(wo, w)
		return k, c.Relative(both).String()
	}
	return "", ""
}

// tryOffload removes e; failing that, keeps it behind a residual guard made
// of the hardware's own conditions on the way to the node that does the
// work; failing that, keeps it and says why.
func (b *builder) tryOffload(e *enode, hws []*enode) (outcome, error) {
	with, err := b.ends()
	if err != nil {
		return outcome{}, err
	}
	hw := hws[0]
	if r := b.readAfter(e, hw); r != "" {
		return outcome{reason: r}, nil
	}
	// Without the stage.
	restore := b.snapshot()
	redirect(b.nodes, e, e.ports[0].out)
	e.removed = true
	without, err := b.ends()
	if err != nil {
		return outcome{}, err
	}
	where, class := differ(with, without)
	if where == "" {
		e.removed = true
		return outcome{hw: hw.name, reason: fmt.Sprintf("%s does it for every packet class: the predicates where packets end are equivalent without %s", hw.name, e.tmpl.Name)}, nil
	}
	restore()
	// Behind a residual guard.
	if guard, text, ok := b.residualGuard(e, hw); ok {
		gn := b.guardNode(e, guard)
		b.nodes = append(b.nodes, gn)
		redirect(b.nodes, e, []*enode{gn})
		gn.ports[0].out = []*enode{e}
		gn.ports[1].out = slices.Clone(e.ports[0].out)
		split, err := b.ends()
		if err != nil {
			return outcome{}, err
		}
		if w, _ := differ(with, split); w == "" {
			return outcome{hw: hw.name, guard: text, counterexample: class,
				reason: fmt.Sprintf("%s does it only when not (%s); e.g. without %s, %s ends at %s differently", hw.name, text, e.tmpl.Name, class, where)}, nil
		}
		restore()
	}
	return outcome{counterexample: class,
		reason: fmt.Sprintf("without it, packets of class %s end at %s differently: %s does not do it for them", class, where, hw.name)}, nil
}

// snapshot records every port's edges; calling the result restores them
// and the removed flags.
func (b *builder) snapshot() func() {
	type saved struct {
		p          *eport
		out, spawn []*enode
	}
	var ports []saved
	removed := map[*enode]bool{}
	n := len(b.nodes)
	for _, e := range b.nodes {
		removed[e] = e.removed
		for _, p := range e.ports {
			ports = append(ports, saved{p, slices.Clone(p.out), slices.Clone(p.spawn)})
		}
	}
	return func() {
		b.nodes = b.nodes[:n]
		for _, e := range b.nodes {
			e.removed = removed[e]
		}
		for _, s := range ports {
			s.p.out, s.p.spawn = s.out, s.spawn
		}
	}
}

// residualGuard is the condition under which the hardware does not do the
// work: the PRG tests on the way to hw whose other port avoids hw, negated
// as needed and kept only if some packet class reaching e meets them.
func (b *builder) residualGuard(e, hw *enode) (*packet.Expr, string, bool) {
	g, of, err := b.graph()
	if err != nil || g.Order() == nil {
		return nil, "", false
	}
	ps := g.PredicatesIn(b.space)
	reach := ps.Reaching(of[e])
	var terms []*packet.Expr
	for _, x := range b.nodes {
		if x.removed || x.lpg || x.op == nil || x.op.Kind != packet.OpTest || !b.downstream(e, x) {
			continue
		}
		yes := b.leadsTo(x.ports[0], hw)
		no := b.leadsTo(x.ports[1], hw)
		var t *packet.Expr
		switch {
		case yes && !no:
			t = &packet.Expr{Kind: packet.ENot, Width: 1, A: x.op.Cond, Text: "!(" + x.op.Cond.Text + ")"}
		case no && !yes:
			t = x.op.Cond
		default:
			continue
		}
		if predicate.Satisfiable(reach.And(ps.Cond(t))) {
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 {
		return nil, "", false
	}
	guard := terms[0]
	for _, t := range terms[1:] {
		guard = &packet.Expr{Kind: packet.EOr, Width: 1, A: guard, B: t, Text: guard.Text + " || " + t.Text}
	}
	return guard, ps.Cond(guard).String(), true
}

// leadsTo reports whether port p leads to x.
func (b *builder) leadsTo(p *eport, x *enode) bool {
	for _, t := range p.out {
		if !t.removed && b.downstream(t, x) {
			return true
		}
	}
	return false
}

// guardNode is a software test that sends packets meeting guard through
// the stage and the others around it.
func (b *builder) guardNode(e *enode, guard *packet.Expr) *enode {
	tmpl := &dataflow.Node{Name: e.name + "Guard", Kind: dataflow.FNode, Cluster: e.tmpl.Cluster, Software: true, Pos: e.tmpl.Pos}
	op := &packet.Op{Kind: packet.OpTest, Cond: guard, Header: -1, After: -1, Table: -1}
	return &enode{name: tmpl.Name, tmpl: tmpl, guardOf: e.tmpl.Name, sink: e.sink, serves: e.serves, op: op, software: true,
		ports: []*eport{{name: packet.PortTrue}, {name: packet.PortFalse}}}
}

// readAfter names a node after e (other than hw) that reads what e
// writes; moving e's work to hw would change what that node sees.
func (b *builder) readAfter(e, hw *enode) string {
	schema := b.lpg.Schema
	writes := written(schema, e.op)
	for _, x := range b.nodes {
		if x == e || x == hw || x.removed || x.op == nil || !b.downstream(e, x) {
			continue
		}
		for _, f := range writes {
			if reads(schema, x.op, f) {
				return fmt.Sprintf("%s reads %s, which %s writes, before %s does the work", x.display(), schema.FieldName(f), e.tmpl.Name, hw.name)
			}
		}
	}
	return ""
}

// written lists the fields an operation writes.
func written(s *packet.Schema, op *packet.Op) []packet.FieldRef {
	var out []packet.FieldRef
	switch op.Kind {
	case packet.OpChecksumCompute:
		out = append(out, packet.FieldRef{Header: op.Header, Field: s.Headers[op.Header].Checksum})
	case packet.OpSet:
		for _, a := range op.Assign {
			out = append(out, a.Dst)
		}
	case packet.OpPush, packet.OpPop:
		for i := range s.Headers[op.Header].Fields {
			out = append(out, packet.FieldRef{Header: op.Header, Field: i})
		}
	}
	return out
}

// reads reports whether an operation reads field f.
func reads(s *packet.Schema, op *packet.Op, f packet.FieldRef) bool {
	var exprs []*packet.Expr
	switch op.Kind {
	case packet.OpTest:
		exprs = append(exprs, op.Cond)
	case packet.OpSwitch:
		exprs = append(exprs, op.Expr)
	case packet.OpSet:
		for _, a := range op.Assign {
			exprs = append(exprs, a.Src)
		}
	case packet.OpLookup:
		exprs = append(exprs, s.Tables[op.Table].Keys...)
	case packet.OpChecksumCompute, packet.OpChecksumVerify:
		c := s.Headers[op.Header]
		return s.ChecksumCovers(op.Header, f) || (op.Kind == packet.OpChecksumVerify && f == packet.FieldRef{Header: c.ID, Field: c.Checksum})
	}
	for _, x := range exprs {
		if mentions(x, f) {
			return true
		}
	}
	return false
}

func mentions(x *packet.Expr, f packet.FieldRef) bool {
	if x == nil {
		return false
	}
	return (x.Kind == packet.EField && x.Field == f) || mentions(x.A, f) || mentions(x.B, f)
}
