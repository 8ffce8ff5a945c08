package embed

import (
	"slices"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
	"github.com/dragonet-go/nsc/prg"
)

// sameWork reports whether a PRG hardware node's operation b does the
// LPG's a: the same operation on the same header (a checksum computation,
// a push or pop), a lookup of the same table, an assignment of the same
// fields. Only the fields: the predicates cannot tell the values written
// apart, so what a hardware node writes is a claim that nsc verify tests.
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

// outcome is the result of trying to offload a stage.
type outcome struct {
	hw             string // hardware node that does the work
	guard          string // residual guard, for a split
	reason         string
	counterexample string
}

// overLimits says which of the PRG's declared limits a table stage
// exceeds, or "": its own and the tables the hardware already holds.
func (b *builder) overLimits(e *enode) string {
	if e.op.Kind != packet.OpLookup {
		return ""
	}
	tables := map[int]bool{}
	for _, x := range b.nodes {
		if !x.removed && x.op != nil && x.op.Kind == packet.OpLookup && (x.hardware || x == e) {
			tables[x.op.Table] = true
		}
	}
	return prg.TableFits(b.prg, b.lpg.Schema.Tables[e.op.Table].Spec, len(tables))
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

// snapshot records every port's edges; calling the result restores them
// and the removed and installed flags.
func (b *builder) snapshot() func() {
	type saved struct {
		p          *eport
		out, spawn []*enode
	}
	var ports []saved
	removed, installed := map[*enode]bool{}, map[*enode]bool{}
	n := len(b.nodes)
	for _, e := range b.nodes {
		removed[e], installed[e] = e.removed, e.installed
		for _, p := range e.ports {
			ports = append(ports, saved{p, slices.Clone(p.out), slices.Clone(p.spawn)})
		}
	}
	return func() {
		b.nodes = b.nodes[:n]
		for _, e := range b.nodes {
			e.removed, e.installed = removed[e], installed[e]
		}
		// Clones: a restore may be followed by edits and another restore.
		for _, s := range ports {
			s.p.out, s.p.spawn = slices.Clone(s.out), slices.Clone(s.spawn)
		}
	}
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

// writes lists the fields an operation writes: assigned, popped, pushed,
// computed (w), and checksums patched incrementally (patched).
func writes(s *packet.Schema, op *packet.Op) (w, patched []packet.FieldRef) {
	switch op.Kind {
	case packet.OpChecksumCompute:
		w = append(w, packet.FieldRef{Header: op.Header, Field: s.Headers[op.Header].Checksum})
	case packet.OpICRCCompute, packet.OpLoad:
		for _, h := range s.Headers {
			if op.Kind == packet.OpICRCCompute && s.ICRCMayWrite(op.Header, h.ID) || op.Kind == packet.OpLoad && h.ID == s.Registers[op.Register].Value {
				for i := range h.Fields {
					w = append(w, packet.FieldRef{Header: h.ID, Field: i})
				}
			}
		}
	case packet.OpSet:
		for _, a := range op.Assign {
			w = append(w, a.Dst)
		}
	case packet.OpPush, packet.OpPop:
		for i := range s.Headers[op.Header].Fields {
			w = append(w, packet.FieldRef{Header: op.Header, Field: i})
		}
	case packet.OpLookup:
		for _, a := range s.Tables[op.Table].Actions {
			for _, as := range s.Actions[a].Body {
				if !slices.Contains(w, as.Dst) {
					w = append(w, as.Dst)
				}
			}
		}
	}
	for _, h := range op.Update {
		patched = append(patched, packet.FieldRef{Header: h, Field: s.Headers[h].Checksum})
	}
	return w, patched
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
	case packet.OpLoad, packet.OpStore:
		r := s.Registers[op.Register]
		exprs = append(exprs, r.Keys...)
		if op.Kind == packet.OpStore && f.Header == r.Value {
			return true
		}
	case packet.OpICRCCompute, packet.OpICRCVerify:
		return !s.Headers[f.Header].Metadata // the ICRC covers every wire byte from the IP header on
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
