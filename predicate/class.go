package predicate

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/packet"
)

// Class is a packet class: one cube of a predicate, i.e. fixed values for
// some field bits, header validities and symbols, every other input free.
// Every packet in the class satisfies the predicate it came from.
type Class struct {
	fields  []FieldClass // sorted by field name
	valid   []boolLit    // sorted by header
	symbols []boolLit    // sorted by name
}

// FieldClass constrains the bits of Field set in Mask to those of Value
// (Value has no bits outside Mask).
type FieldClass struct {
	Field       Field
	Value, Mask packet.Value
}

type boolLit struct {
	name  string
	value bool
}

// Fields returns the constrained fields, sorted by name.
func (c Class) Fields() []FieldClass { return slices.Clone(c.fields) }

// Valid reports the validity the class requires of header, and whether it
// requires one at all.
func (c Class) Valid(header string) (value, constrained bool) { return lookupLit(c.valid, header) }

// Symbol reports the value the class requires of a symbol, and whether it
// requires one at all.
func (c Class) Symbol(name string) (value, constrained bool) { return lookupLit(c.symbols, name) }

func lookupLit(ls []boolLit, name string) (value, ok bool) {
	i, ok := slices.BinarySearchFunc(ls, name, func(l boolLit, n string) int { return strings.Compare(l.name, n) })
	if !ok {
		return false, false
	}
	return ls[i].value, true
}

// FieldValue, HeaderValid and SymbolValue make a Class an Env for
// Pred.Eval: the class's one packet whose free bits are all zero/false.
func (c Class) FieldValue(name string) packet.Value {
	i, ok := slices.BinarySearchFunc(c.fields, name, func(f FieldClass, n string) int { return strings.Compare(f.Field.Name, n) })
	if !ok {
		return packet.Value{}
	}
	return c.fields[i].Value
}

// HeaderValid: see FieldValue.
func (c Class) HeaderValid(header string) bool { v, _ := c.Valid(header); return v }

// SymbolValue: see FieldValue.
func (c Class) SymbolValue(name string) bool { v, _ := c.Symbol(name); return v }

// String prints fields (name=value when fully fixed, name=value/mask in hex
// otherwise), then validities, then symbols, e.g.
// "ipv4.proto=17, udp.dport=0x4000/0xc000, valid(udp), not pred(TxQueue,out)".
// The class of all packets prints as "any packet".
func (c Class) String() string {
	var parts []string
	for _, f := range c.fields {
		if f.Mask == packet.Mask(f.Field.Width) {
			parts = append(parts, f.Field.Name+"="+f.Value.String())
		} else {
			parts = append(parts, f.Field.Name+"="+hex(f.Value)+"/"+hex(f.Mask))
		}
	}
	lit := func(l boolLit, text string) {
		if !l.value {
			text = "not " + text
		}
		parts = append(parts, text)
	}
	for _, l := range c.valid {
		lit(l, "valid("+l.name+")")
	}
	for _, l := range c.symbols {
		lit(l, l.name)
	}
	if len(parts) == 0 {
		return "any packet"
	}
	return strings.Join(parts, ", ")
}

// class turns bit-level assignments into a Class.
func (s *Space) class(cube []assignment) Class {
	var c Class
	fields := map[string]*FieldClass{}
	for _, a := range cube {
		v := s.vars[a.level]
		switch v.kind {
		case varField:
			fc := fields[v.name]
			if fc == nil {
				fc = &FieldClass{Field: Field{v.name, s.fields[v.name].width}}
				fields[v.name] = fc
			}
			fc.Mask = fc.Mask.SetBit(v.bit, true)
			fc.Value = fc.Value.SetBit(v.bit, a.value)
		case varValid:
			c.valid = append(c.valid, boolLit{v.name, a.value})
		default:
			c.symbols = append(c.symbols, boolLit{v.name, a.value})
		}
	}
	for _, fc := range fields {
		c.fields = append(c.fields, *fc)
	}
	slices.SortFunc(c.fields, func(a, b FieldClass) int { return strings.Compare(a.Field.Name, b.Field.Name) })
	byName := func(a, b boolLit) int { return strings.Compare(a.name, b.name) }
	slices.SortFunc(c.valid, byName)
	slices.SortFunc(c.symbols, byName)
	return c
}

// Counterexample returns a packet class whose packets all satisfy a but not
// b, choosing the class with the fewest constraints; ok is false when a
// implies b. For equivalence, call it both ways. Predicates of different
// Spaces cannot be compared: ok is true with the class of all packets, so
// the misuse never passes for a proof (it is also reported by Err).
func Counterexample(a, b Pred) (c Class, ok bool) {
	s, same := common(a, b)
	if !same {
		return Class{}, true
	}
	if s == nil {
		return Class{}, false
	}
	d := s.bits.and(a.bit, s.bits.not(b.bit))
	if d == falseNode {
		return Class{}, false
	}
	return s.class(s.bits.shortestCube(d)), true
}

// Sample returns a random packet class satisfying p, drawn uniformly over
// the assignments of p's inputs: every bit of each field p depends on, and
// each header validity and symbol p depends on, is fixed. Fields p does not
// depend on are left free. ok is false when p is unsatisfiable. A nil rnd
// uses a fixed seed.
func (s *Space) Sample(p Pred, rnd *rand.Rand) (Class, bool) {
	if p.s != s {
		if p.s != nil {
			mixed(s, p.s)
		}
		return Class{}, false
	}
	if p.bit == falseNode {
		return Class{}, false
	}
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(1, 2))
	}
	dens := s.bits.density(p.bit)
	fixed := map[int32]bool{}
	var cube []assignment
	for n := p.bit; n != trueNode; {
		d := s.bits.nodes[n]
		lo, hi := dens[d.lo], dens[d.hi]
		// Densities can underflow to 0 for predicates fixing over ~1000
		// bits; then any non-false branch is still a correct choice.
		up := d.lo == falseNode || (d.hi != falseNode && rnd.Float64()*(lo+hi) < hi)
		cube = append(cube, assignment{d.level, up})
		fixed[d.level] = true
		if up {
			n = d.hi
		} else {
			n = d.lo
		}
	}
	fill := func(l int32) {
		if !fixed[l] {
			fixed[l] = true
			cube = append(cube, assignment{l, rnd.IntN(2) == 1})
		}
	}
	for _, l := range s.bits.support(p.bit) { // ascending: deterministic draws
		v := s.vars[l]
		if v.kind != varField {
			fill(l)
			continue
		}
		fv := s.fields[v.name]
		for i := fv.width - 1; i >= 0; i-- {
			fill(fv.level(i))
		}
	}
	return s.class(cube), true
}
