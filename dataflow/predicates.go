package dataflow

import (
	"fmt"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
)

// Predicates holds the predicate of every port of a graph: which packets
// leave by it. They are computed once, in topological order, from the
// operations (a `test ipv4.proto == 17` node's true port carries that atom,
// its false port the negation) plus the symbolic atoms a model adds.
type Predicates struct {
	Space *predicate.Space
	g     *Graph
	port  map[*Port]predicate.Pred
	in    map[*Node]predicate.Pred
}

// Predicates computes (once) and returns the port predicates. The graph
// must be valid.
func (g *Graph) Predicates() *Predicates {
	if g.preds == nil {
		g.preds = computePredicates(g, predicate.NewSpace())
	}
	return g.preds
}

// Port is the predicate of packets leaving by p.
func (ps *Predicates) Port(p *Port) predicate.Pred { return ps.port[p] }

// Reaching is the predicate of packets that reach n: for an F-node, those
// entering it; for an O-node, those leaving by either port.
func (ps *Predicates) Reaching(n *Node) predicate.Pred {
	if n.Kind == ONode {
		var out []predicate.Pred
		for _, p := range n.Ports {
			out = append(out, ps.port[p])
		}
		return ps.Space.Or(out...)
	}
	return ps.in[n]
}

func computePredicates(g *Graph, s *predicate.Space) *Predicates {
	ps := &Predicates{Space: s, g: g, port: map[*Port]predicate.Pred{}, in: map[*Node]predicate.Pred{}}
	for _, n := range g.Order() {
		switch n.Kind {
		case ONode:
			ps.logic(n)
		default:
			in := ps.input(n)
			ps.in[n] = in
			for _, p := range n.Ports {
				c := ps.condition(n, p)
				if p.Pred != "" {
					c = c.And(s.Symbol(p.Pred))
				}
				ps.port[p] = in.And(c)
			}
		}
	}
	return ps
}

// input is the OR of the predicates of the edges into n. Sources admit
// everything their own port atom allows; a spawned task is a fresh packet
// known only by the symbol spawn(Node).
func (ps *Predicates) input(n *Node) predicate.Pred {
	s := ps.Space
	if n.Source {
		return s.True()
	}
	var terms []predicate.Pred
	for _, e := range n.In {
		terms = append(terms, ps.port[e.From])
	}
	if spawnTarget(ps.g, n) {
		terms = append(terms, s.Symbol(fmt.Sprintf("spawn(%s)", n.Name)))
	}
	return s.Or(terms...)
}

// logic gives an O-node's ports their predicates; see Truthy for what each
// operand contributes.
func (ps *Predicates) logic(n *Node) {
	s := ps.Space
	var ts, fs []predicate.Pred
	for _, x := range Operands(n) {
		var t, f []predicate.Pred
		for _, e := range n.In {
			if e.From.Node != x {
				continue
			}
			if Truthy(e.From) {
				t = append(t, ps.port[e.From])
			} else {
				f = append(f, ps.port[e.From])
			}
		}
		ts, fs = append(ts, s.Or(t...)), append(fs, s.Or(f...))
	}
	var yes, no predicate.Pred
	switch n.Logic {
	case And, Nand:
		yes, no = s.And(ts...), s.Or(fs...)
	case Or, Nor:
		yes, no = s.Or(ts...), s.And(fs...)
	case Not:
		yes, no = s.Or(fs...), s.Or(ts...)
	}
	if n.Logic == Nand || n.Logic == Nor {
		yes, no = no, yes
	}
	for _, p := range n.Ports {
		c := no
		if p.Name == packet.PortTrue {
			c = yes
		}
		if p.Pred != "" {
			c = c.And(s.Symbol(p.Pred))
		}
		ps.port[p] = c
	}
}

// condition is what leaving n by port p says about the packet, beyond
// having reached n.
func (ps *Predicates) condition(n *Node, p *Port) predicate.Pred {
	s := ps.Space
	if n.Kind != FNode {
		return s.Symbol(fmt.Sprintf("pred(%s,%s)", n.Name, p.Name))
	}
	op := n.Op
	schema := ps.g.Schema
	yes := p.Name == packet.PortTrue
	pick := func(c predicate.Pred) predicate.Pred {
		if yes {
			return c
		}
		return c.Not()
	}
	switch op.Kind {
	case packet.OpInput, packet.OpContext:
		return s.Symbol(fmt.Sprintf("pred(%s,%s)", n.Name, p.Name))
	case packet.OpExtract:
		return pick(s.Valid(schema.Headers[op.Header].Name))
	case packet.OpParse:
		return pick(s.Symbol(fmt.Sprintf("parsed(%s)", schema.Headers[op.Header].Name)))
	case packet.OpChecksumVerify:
		return pick(s.Symbol(fmt.Sprintf("csum_ok(%s)", schema.Headers[op.Header].Name)))
	case packet.OpTest:
		return pick(ps.Cond(op.Cond))
	case packet.OpSwitch:
		var hit []predicate.Pred
		for _, c := range op.Cases {
			eq := ps.equals(op.Expr, c.Value)
			if c.Port == p.Name {
				hit = append(hit, eq)
			}
		}
		if p.Name == op.Default {
			var none []predicate.Pred
			for _, c := range op.Cases {
				if c.Port != p.Name {
					none = append(none, ps.equals(op.Expr, c.Value).Not())
				}
			}
			hit = append(hit, s.And(none...))
		}
		return s.Or(hit...)
	case packet.OpLookup:
		t := schema.Tables[op.Table].Spec
		return s.Eq(actionField(t), packet.V(uint64(p.Index)))
	}
	return s.True()
}

// actionField is the synthetic field naming which action a lookup ran, so
// that the ports of one lookup exclude each other.
func actionField(t *packet.TableSpec) predicate.Field {
	w := 1
	for 1<<w < len(t.Actions) {
		w++
	}
	return predicate.Field{Name: t.Name + ".action", Width: w}
}

func (ps *Predicates) equals(e *packet.Expr, v packet.Value) predicate.Pred {
	if e.Kind == packet.EField {
		return ps.Space.Eq(ps.field(e.Field), v)
	}
	return ps.Space.Symbol(fmt.Sprintf("%s == %s", e.Text, v))
}

func (ps *Predicates) field(f packet.FieldRef) predicate.Field {
	return predicate.Field{Name: ps.g.Schema.FieldName(f), Width: ps.g.Schema.FieldSpec(f).Width}
}

// Cond turns a boolean expression into a predicate: comparisons of a field
// with a constant become grounded atoms, anything else a symbolic atom
// named by its source text.
func (ps *Predicates) Cond(e *packet.Expr) predicate.Pred {
	s := ps.Space
	switch e.Kind {
	case packet.ENot:
		return ps.Cond(e.A).Not()
	case packet.EAnd:
		return ps.Cond(e.A).And(ps.Cond(e.B))
	case packet.EOr:
		return ps.Cond(e.A).Or(ps.Cond(e.B))
	case packet.EValid:
		return s.Valid(ps.g.Schema.Headers[e.Header].Name)
	case packet.EMasked:
		if e.A.Kind == packet.EField {
			return s.Masked(ps.field(e.A.Field), e.Value, e.Mask)
		}
	case packet.ERange:
		if e.A.Kind == packet.EField {
			return s.Range(ps.field(e.A.Field), e.Lo, e.Hi)
		}
	case packet.EEq, packet.ENe, packet.ELt, packet.ELe, packet.EGt, packet.EGe:
		op := cmpOps[e.Kind]
		if e.A.Kind == packet.EField && e.B.Kind == packet.EConst {
			return s.Cmp(ps.field(e.A.Field), op, e.B.Const)
		}
		if e.B.Kind == packet.EField && e.A.Kind == packet.EConst {
			return s.Cmp(ps.field(e.B.Field), flipped[op], e.A.Const)
		}
	}
	return s.Symbol(e.Text)
}

var cmpOps = map[packet.ExprKind]string{
	packet.EEq: "==", packet.ENe: "!=", packet.ELt: "<", packet.ELe: "<=", packet.EGt: ">", packet.EGe: ">=",
}

var flipped = map[string]string{"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
