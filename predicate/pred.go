package predicate

import "github.com/dragonet-go/nsc/packet"

// Pred is a predicate over packets belonging to one Space. It is a small
// value; compare two with Equivalent, not ==. The zero Pred belongs to no
// Space and reads as False.
type Pred struct {
	s    *Space
	bit  node // canonical: equal bits ⇔ equivalent predicates
	atom node // the same formula over whole atoms, for printing
}

// And returns p ∧ q₁ ∧ … .
func (p Pred) And(q ...Pred) Pred { return combine(opAnd, append([]Pred{p}, q...)) }

// Or returns p ∨ q₁ ∨ … .
func (p Pred) Or(q ...Pred) Pred { return combine(opOr, append([]Pred{p}, q...)) }

// Not returns ¬p. The zero Pred has no Space to build True in, so its
// negation is again the zero Pred.
func (p Pred) Not() Pred {
	if p.s == nil {
		return p
	}
	return Pred{p.s, p.s.bits.not(p.bit), p.s.atoms.not(p.atom)}
}

// And returns the conjunction of ps; True if ps is empty.
func (s *Space) And(ps ...Pred) Pred { return combine(opAnd, append([]Pred{s.True()}, ps...)) }

// Or returns the disjunction of ps; False if ps is empty.
func (s *Space) Or(ps ...Pred) Pred { return combine(opOr, append([]Pred{s.False()}, ps...)) }

// combine folds ps with op. Zero Preds read as False; Preds of a second
// Space make the result False and are reported by Err.
func combine(op opcode, ps []Pred) Pred {
	var s *Space
	for _, p := range ps {
		if p.s == nil {
			continue
		}
		if s == nil {
			s = p.s
		} else if p.s != s {
			return mixed(s, p.s)
		}
	}
	if s == nil {
		return Pred{}
	}
	r := Pred{s, ps[0].bit, ps[0].atom} // a zero Pred's nodes are False already
	for _, p := range ps[1:] {
		r.bit = s.bits.apply(op, r.bit, p.bit)
		r.atom = s.atoms.apply(op, r.atom, p.atom)
	}
	return r
}

func mixed(a, b *Space) Pred {
	const msg = "predicates of different Spaces combined"
	b.fail(msg)
	return a.fail(msg)
}

// common returns the Space of a and b for a query, or false (after
// reporting) when they belong to different Spaces. Zero Preds read as False.
func common(a, b Pred) (*Space, bool) {
	switch {
	case a.s == nil:
		return b.s, true
	case b.s == nil || a.s == b.s:
		return a.s, true
	}
	mixed(a.s, b.s)
	return nil, false
}

// Equivalent reports whether a and b hold for exactly the same packets.
// Predicates of different Spaces are never equivalent.
func Equivalent(a, b Pred) bool {
	_, ok := common(a, b)
	return ok && a.bit == b.bit
}

// Implies reports whether every packet satisfying a satisfies b. It is false
// for predicates of different Spaces.
func Implies(a, b Pred) bool {
	s, ok := common(a, b)
	if !ok {
		return false
	}
	if s == nil {
		return true // False ⇒ False
	}
	return s.bits.implies(a.bit, b.bit)
}

// Satisfiable reports whether some packet satisfies p.
func Satisfiable(p Pred) bool { return p.bit != falseNode }

// IsTrue reports whether every packet satisfies p.
func (p Pred) IsTrue() bool { return p.bit == trueNode }

// IsFalse reports whether no packet satisfies p.
func (p Pred) IsFalse() bool { return p.bit == falseNode }

// Env supplies concrete inputs for Eval: field values (bits above the
// field's width are ignored), header validity and symbol values.
type Env interface {
	FieldValue(name string) packet.Value
	HeaderValid(header string) bool
	SymbolValue(name string) bool
}

// Eval reports whether p holds for the concrete inputs in e.
func (p Pred) Eval(e Env) bool {
	n := p.bit
	for n > trueNode {
		d := p.s.bits.nodes[n]
		v := p.s.vars[d.level]
		var b bool
		switch v.kind {
		case varField:
			b = e.FieldValue(v.name).Bit(v.bit)
		case varValid:
			b = e.HeaderValid(v.name)
		default:
			b = e.SymbolValue(v.name)
		}
		if b {
			n = d.hi
		} else {
			n = d.lo
		}
	}
	return n == trueNode
}
