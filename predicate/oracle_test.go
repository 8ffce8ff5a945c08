package predicate_test

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/dragonet-go/nsc/packet"
	. "github.com/dragonet-go/nsc/predicate"
)

// The oracle: formulas over three small fields, a header validity and two
// symbols, evaluated by brute force over all 2^15 inputs, independently of
// the package.

var oracleFields = []Field{{"a", 3}, {"b", 4}, {"c", 5}}

const oracleSymbols = 2

// input is one packet: field values, validity of header "h", symbols s0, s1.
type input struct {
	f     [3]uint64
	valid bool
	sym   [oracleSymbols]bool
}

const nInputs = 1 << 15

func inputOf(i int) input {
	var in input
	in.f[0] = uint64(i) & 7
	in.f[1] = uint64(i>>3) & 15
	in.f[2] = uint64(i>>7) & 31
	in.valid = i>>12&1 == 1
	in.sym[0] = i>>13&1 == 1
	in.sym[1] = i>>14&1 == 1
	return in
}

type atomSpec struct {
	kind   string // cmp masked range prefix valid symbol
	field  int
	op     string
	v, m   uint64 // value; mask or range high end
	length int
	sym    int
}

func (a atomSpec) eval(in input) bool {
	f := in.f[a.field]
	switch a.kind {
	case "cmp":
		switch a.op {
		case "==":
			return f == a.v
		case "!=":
			return f != a.v
		case "<":
			return f < a.v
		case "<=":
			return f <= a.v
		case ">":
			return f > a.v
		default:
			return f >= a.v
		}
	case "masked":
		return f&a.m == a.v&a.m
	case "range":
		return a.v <= f && f <= a.m
	case "prefix":
		w := oracleFields[a.field].Width
		return f>>(w-a.length) == (a.v&(1<<w-1))>>(w-a.length)
	case "valid":
		return in.valid
	}
	return in.sym[a.sym]
}

func (a atomSpec) build(s *Space) Pred {
	f := oracleFields[a.field]
	switch a.kind {
	case "cmp":
		return s.Cmp(f, a.op, packet.V(a.v))
	case "masked":
		return s.Masked(f, packet.V(a.v), packet.V(a.m))
	case "range":
		return s.Range(f, packet.V(a.v), packet.V(a.m))
	case "prefix":
		return s.Prefix(f, packet.V(a.v), a.length)
	case "valid":
		return s.Valid("h")
	}
	return s.Symbol(fmt.Sprintf("s%d", a.sym))
}

type formula struct {
	op   string // atom and or not
	atom atomSpec
	kids []*formula
}

func (f *formula) eval(in input) bool {
	switch f.op {
	case "atom":
		return f.atom.eval(in)
	case "not":
		return !f.kids[0].eval(in)
	case "and":
		for _, k := range f.kids {
			if !k.eval(in) {
				return false
			}
		}
		return true
	}
	for _, k := range f.kids {
		if k.eval(in) {
			return true
		}
	}
	return false
}

func (f *formula) build(s *Space) Pred {
	switch f.op {
	case "atom":
		return f.atom.build(s)
	case "not":
		return f.kids[0].build(s).Not()
	}
	ps := make([]Pred, len(f.kids))
	for i, k := range f.kids {
		ps[i] = k.build(s)
	}
	if f.op == "and" {
		return s.And(ps...)
	}
	return s.Or(ps...)
}

// nnf rewrites f into negation normal form by De Morgan: a differently built
// but equivalent formula.
func (f *formula) nnf(neg bool) *formula {
	switch f.op {
	case "atom":
		if neg {
			return &formula{op: "not", kids: []*formula{f}}
		}
		return f
	case "not":
		return f.kids[0].nnf(!neg)
	}
	op := f.op
	if neg {
		op = map[string]string{"and": "or", "or": "and"}[op]
	}
	g := &formula{op: op}
	for i := len(f.kids) - 1; i >= 0; i-- { // reversed, to vary the build order too
		g.kids = append(g.kids, f.kids[i].nnf(neg))
	}
	return g
}

func randAtom(r *rand.Rand) atomSpec {
	fi := r.IntN(len(oracleFields))
	w := oracleFields[fi].Width
	val := func() uint64 { return r.Uint64N(1<<w + 2) } // sometimes beyond the width
	switch k := r.IntN(10); {
	case k < 3:
		return atomSpec{kind: "cmp", field: fi, op: []string{"==", "!=", "<", "<=", ">", ">="}[r.IntN(6)], v: val()}
	case k < 5:
		return atomSpec{kind: "masked", field: fi, v: val(), m: r.Uint64N(1 << (w + 1))}
	case k < 7:
		return atomSpec{kind: "range", field: fi, v: val(), m: val()}
	case k < 8:
		return atomSpec{kind: "prefix", field: fi, v: val(), length: r.IntN(w + 1)}
	case k < 9:
		return atomSpec{kind: "valid"}
	}
	return atomSpec{kind: "symbol", sym: r.IntN(oracleSymbols)}
}

func randFormula(r *rand.Rand, depth int) *formula {
	if depth == 0 || r.IntN(4) == 0 {
		return &formula{op: "atom", atom: randAtom(r)}
	}
	switch r.IntN(5) {
	case 0:
		return &formula{op: "not", kids: []*formula{randFormula(r, depth-1)}}
	case 1, 2:
		f := &formula{op: "and"}
		for range 1 + r.IntN(3) {
			f.kids = append(f.kids, randFormula(r, depth-1))
		}
		return f
	}
	f := &formula{op: "or"}
	for range 1 + r.IntN(3) {
		f.kids = append(f.kids, randFormula(r, depth-1))
	}
	return f
}

// table is a truth table over all inputs.
type table [nInputs / 64]uint64

func tableOf(eval func(input) bool) *table {
	var t table
	for i := range nInputs {
		if eval(inputOf(i)) {
			t[i/64] |= 1 << (i % 64)
		}
	}
	return &t
}

func (t *table) count() int {
	n := 0
	for _, w := range t {
		n += bits.OnesCount64(w)
	}
	return n
}

func (t *table) has(i int) bool { return t[i/64]>>(i%64)&1 == 1 }

// minus returns t ∧ ¬u.
func (t *table) minus(u *table) *table {
	var d table
	for i := range t {
		d[i] = t[i] &^ u[i]
	}
	return &d
}

// inClass reports whether input i lies in class c.
func inClass(c Class, i int) bool {
	in := inputOf(i)
	for _, fc := range c.Fields() {
		fi := map[string]int{"a": 0, "b": 1, "c": 2}[fc.Field.Name]
		if in.f[fi]&fc.Mask.Lo != fc.Value.Lo {
			return false
		}
	}
	if v, ok := c.Valid("h"); ok && v != in.valid {
		return false
	}
	for k := range oracleSymbols {
		if v, ok := c.Symbol(fmt.Sprintf("s%d", k)); ok && v != in.sym[k] {
			return false
		}
	}
	return true
}

// checkClass verifies that every input of class c lies in want, and that c
// mentions only known inputs.
func checkClass(t *testing.T, what string, c Class, want *table) {
	t.Helper()
	n := 0
	for i := range nInputs {
		if inClass(c, i) {
			n++
			if !want.has(i) {
				t.Fatalf("%s: class %s contains input %+v outside the wanted set", what, c, inputOf(i))
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s: class %s is empty", what, c)
	}
}

func TestOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(2024, 7))
	const n = 150
	for iter := range n {
		s := NewSpace()
		f := randFormula(r, 4)
		var g *formula
		switch iter % 3 {
		case 0:
			g = f.nnf(false) // equivalent
		case 1:
			g = randFormula(r, 4) // unrelated
		default:
			g = &formula{op: "and", kids: []*formula{f, {op: "atom", atom: randAtom(r)}}} // f ∧ atom ⇒ f
		}
		// Build g first half of the time so variable orders differ.
		var p, q Pred
		if iter%2 == 0 {
			p, q = f.build(s), g.build(s)
		} else {
			q, p = g.build(s), f.build(s)
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		tf, tg := tableOf(f.eval), tableOf(g.eval)
		fMinusG, gMinusF := tf.minus(tg), tg.minus(tf)
		type answers struct {
			SatP, TrueP, Equiv, PImpliesQ, QImpliesP bool
		}
		want := answers{tf.count() > 0, tf.count() == nInputs, fMinusG.count() == 0 && gMinusF.count() == 0, fMinusG.count() == 0, gMinusF.count() == 0}
		got := answers{Satisfiable(p), p.IsTrue(), Equivalent(p, q), Implies(p, q), Implies(q, p)}
		if want != got {
			t.Fatalf("iter %d: p=%s q=%s\nwant %+v\ngot  %+v", iter, p, q, want, got)
		}
		for _, dir := range []struct {
			name string
			a, b Pred
			diff *table
		}{{"p-q", p, q, fMinusG}, {"q-p", q, p, gMinusF}} {
			c, ok := Counterexample(dir.a, dir.b)
			if ok != (dir.diff.count() > 0) {
				t.Fatalf("iter %d %s: Counterexample ok=%v, brute force finds %d", iter, dir.name, ok, dir.diff.count())
			}
			if ok {
				checkClass(t, fmt.Sprintf("iter %d counterexample %s", iter, dir.name), c, dir.diff)
			}
		}
		if c, ok := s.Sample(p, r); ok != want.SatP {
			t.Fatalf("iter %d: Sample ok=%v", iter, ok)
		} else if ok {
			checkClass(t, fmt.Sprintf("iter %d sample", iter), c, tf)
		}
		// The printed DNF must mean p: evaluate it through the atoms' texts.
		atoms := map[string]atomSpec{}
		var collect func(*formula)
		collect = func(f *formula) {
			if f.op == "atom" {
				atoms[f.atom.build(s).String()] = f.atom
			}
			for _, k := range f.kids {
				collect(k)
			}
		}
		collect(f)
		dnf := p.DNF()
		td := tableOf(func(in input) bool {
			for _, term := range dnf {
				holds := true
				for _, l := range term {
					a, ok := atoms[l.Atom]
					if !ok {
						t.Fatalf("iter %d: DNF literal %q is not an atom of p", iter, l.Atom)
					}
					if a.eval(in) == l.Neg {
						holds = false
						break
					}
				}
				if holds {
					return true
				}
			}
			return false
		})
		if *td != *tf {
			t.Fatalf("iter %d: DNF %v differs from p", iter, dnf)
		}
	}
}
