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
// symbols, with existential quantifiers, evaluated by brute force over all
// 2^15 inputs (as truth tables), independently of the package.

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

// flip returns the comparison that holds exactly when a does not, for a
// cmp atom.
func (a atomSpec) flip() atomSpec {
	a.op = map[string]string{"==": "!=", "!=": "==", "<": ">=", ">=": "<", "<=": ">", ">": "<="}[a.op]
	return a
}

// text is how a cmp atom prints.
func (a atomSpec) text() string {
	return oracleFields[a.field].Name + " " + a.op + " " + packet.V(a.v).String()
}

// reads reports whether atom a reads the input variable v quantifies.
func (a atomSpec) reads(v forgetSpec) bool {
	switch v.kind {
	case "field":
		return a.field == v.index && a.kind != "valid" && a.kind != "symbol"
	case "valid":
		return a.kind == "valid"
	}
	return a.kind == "symbol" && a.sym == v.index
}

// forgetSpec names an input variable to quantify: field index, the
// validity of h, or symbol index.
type forgetSpec struct {
	kind  string // field valid symbol
	index int
}

// bits returns the input bits (of inputOf's index) of v.
func (v forgetSpec) bits() int {
	switch v.kind {
	case "field":
		return [...]int{0x7, 0x78, 0xf80}[v.index]
	case "valid":
		return 1 << 12
	}
	return 1 << (13 + v.index)
}

func (v forgetSpec) String() string {
	switch v.kind {
	case "field":
		return oracleFields[v.index].Name
	case "valid":
		return "valid(h)"
	}
	return fmt.Sprintf("s%d", v.index)
}

type formula struct {
	op     string // atom and or not forget
	atom   atomSpec
	forget forgetSpec
	kids   []*formula
}

// atomTables memoises the truth tables of atoms, which do not depend on the
// Space. (The oracle tests do not run in parallel.)
var atomTables = map[atomSpec]*table{}

// table is f's truth table; ∃ takes the Or over all values of the variable.
func (f *formula) table() *table {
	switch f.op {
	case "atom":
		if t, ok := atomTables[f.atom]; ok {
			return t
		}
		t := tableOf(f.atom.eval)
		atomTables[f.atom] = t
		return t
	case "not":
		t := *f.kids[0].table()
		for i := range t {
			t[i] = ^t[i]
		}
		return &t
	case "forget":
		k := f.kids[0].table()
		m := f.forget.bits()
		var t table
		for base := range nInputs {
			if base&m != 0 {
				continue
			}
			any := false
			for sub := 0; ; sub = (sub - m) & m { // every subset of m
				if k.has(base | sub) {
					any = true
					break
				}
				if (sub-m)&m == 0 {
					break
				}
			}
			if any {
				for sub := 0; ; sub = (sub - m) & m {
					t[(base|sub)/64] |= 1 << ((base | sub) % 64)
					if (sub-m)&m == 0 {
						break
					}
				}
			}
		}
		return &t
	}
	t := *f.kids[0].table()
	for _, k := range f.kids[1:] {
		u := k.table()
		for i := range t {
			if f.op == "and" {
				t[i] &= u[i]
			} else {
				t[i] |= u[i]
			}
		}
	}
	return &t
}

func (f *formula) build(s *Space) Pred {
	switch f.op {
	case "atom":
		return f.atom.build(s)
	case "not":
		return f.kids[0].build(s).Not()
	case "forget":
		p := f.kids[0].build(s)
		switch f.forget.kind {
		case "field":
			return p.ForgetField(oracleFields[f.forget.index])
		case "valid":
			return p.ForgetValid("h")
		}
		return p.ForgetSymbol(fmt.Sprintf("s%d", f.forget.index))
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
	case "forget": // ∃ is opaque to De Morgan: rebuild its body only
		g := &formula{op: "forget", forget: f.forget, kids: []*formula{f.kids[0].nnf(false)}}
		if neg {
			return &formula{op: "not", kids: []*formula{g}}
		}
		return g
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

func randAtom(r *rand.Rand) atomSpec { return randAtomOn(r, r.IntN(len(oracleFields))) }

// randAtomOn returns a random atom; a field atom reads field fi.
func randAtomOn(r *rand.Rand, fi int) atomSpec {
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

func randForget(r *rand.Rand) forgetSpec {
	switch k := r.IntN(6); {
	case k < 3:
		return forgetSpec{kind: "field", index: k}
	case k < 4:
		return forgetSpec{kind: "valid"}
	}
	return forgetSpec{kind: "symbol", index: r.IntN(oracleSymbols)}
}

// randForgetOf mostly picks a variable f reads, which is where ∃ has
// something to do.
func randForgetOf(r *rand.Rand, f *formula) forgetSpec {
	var read []forgetSpec
	var walk func(*formula)
	walk = func(f *formula) {
		if f.op == "atom" {
			for _, v := range []forgetSpec{{"field", 0}, {"field", 1}, {"field", 2}, {"valid", 0}, {"symbol", 0}, {"symbol", 1}} {
				if f.atom.reads(v) {
					read = append(read, v)
				}
			}
		}
		for _, k := range f.kids {
			walk(k)
		}
	}
	walk(f)
	if len(read) == 0 || r.IntN(4) == 0 {
		return randForget(r)
	}
	return read[r.IntN(len(read))] // weighted by the number of atoms reading it
}

// randFormula returns a random formula of at most depth levels of
// operators; forget > 0 makes about one operator in forget an ∃.
func randFormula(r *rand.Rand, depth, forget int) *formula {
	if depth == 0 || r.IntN(4) == 0 {
		return &formula{op: "atom", atom: randAtom(r)}
	}
	if forget > 0 && r.IntN(forget) == 0 {
		kid := randFormula(r, depth-1, forget)
		return &formula{op: "forget", forget: randForgetOf(r, kid), kids: []*formula{kid}}
	}
	switch r.IntN(5) {
	case 0:
		return &formula{op: "not", kids: []*formula{randFormula(r, depth-1, forget)}}
	case 1, 2:
		f := &formula{op: "and"}
		for range 1 + r.IntN(3) {
			f.kids = append(f.kids, randFormula(r, depth-1, forget))
		}
		return f
	}
	f := &formula{op: "or"}
	for range 1 + r.IntN(3) {
		f.kids = append(f.kids, randFormula(r, depth-1, forget))
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

// inClass returns the test whether input i lies in class c.
func inClass(c Class) func(i int) bool {
	var mask, value int
	for _, fc := range c.Fields() {
		shift := map[string]int{"a": 0, "b": 3, "c": 7}[fc.Field.Name]
		mask |= int(fc.Mask.Lo) << shift
		value |= int(fc.Value.Lo) << shift
	}
	bit := func(b int, v, ok bool) {
		if ok {
			mask |= 1 << b
			if v {
				value |= 1 << b
			}
		}
	}
	v, ok := c.Valid("h")
	bit(12, v, ok)
	for k := range oracleSymbols {
		v, ok := c.Symbol(fmt.Sprintf("s%d", k))
		bit(13+k, v, ok)
	}
	return func(i int) bool { return i&mask == value }
}

// checkClass verifies that every input of class c lies in want, and that c
// mentions only known inputs.
func checkClass(t *testing.T, what string, c Class, want *table) {
	t.Helper()
	n := 0
	in := inClass(c)
	for i := range nInputs {
		if in(i) {
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
	for iter := range 150 {
		checkOracle(t, r, iter, func() *formula { return randFormula(r, 4, 0) })
	}
}

// TestOracleForget interleaves ∃ with And, Or and Not: at random places in
// random formulas and, every other formula, at the top, where the DNF must
// also have lost the quantified atoms; and as the embedder does, in chains
// of transformers over a port predicate (set: ∃v. P ∧ atom on v; branch:
// P ∧ test or P ∧ ¬test; merge: P ∨ Q).
func TestOracleForget(t *testing.T) {
	r := rand.New(rand.NewPCG(2025, 11))
	for iter := range 400 {
		checkOracle(t, r, iter, func() *formula {
			f := randFormula(r, 5, 3)
			if iter%2 == 0 {
				f = &formula{op: "forget", forget: randForgetOf(r, f), kids: []*formula{f}}
			}
			return f
		})
	}
	for iter := range 400 {
		checkOracle(t, r, iter, func() *formula { return randChain(r, 2+r.IntN(8)) })
	}
}

// randChain returns a chain of steps transforming a random predicate.
func randChain(r *rand.Rand, steps int) *formula {
	f := randFormula(r, 3, 0)
	for range steps {
		switch k := r.IntN(8); {
		case k < 3: // set: mostly a variable f reads, then constrain it again
			v := randForgetOf(r, f)
			f = &formula{op: "forget", forget: v, kids: []*formula{f}}
			if r.IntN(4) > 0 {
				var a atomSpec
				switch v.kind {
				case "field":
					for a.kind == "" || a.kind == "valid" || a.kind == "symbol" {
						a = randAtomOn(r, v.index)
					}
				case "valid":
					a = atomSpec{kind: "valid"}
				default:
					a = atomSpec{kind: "symbol", sym: v.index}
				}
				f = &formula{op: "and", kids: []*formula{f, {op: "atom", atom: a}}}
			}
		case k < 6: // branch on a test
			test := randFormula(r, 1, 0)
			if r.IntN(2) == 0 {
				test = &formula{op: "not", kids: []*formula{test}}
			}
			f = &formula{op: "and", kids: []*formula{f, test}}
		case k < 7: // merge with another path
			f = &formula{op: "or", kids: []*formula{f, randFormula(r, 3, 0)}}
		default:
			f = &formula{op: "not", kids: []*formula{f}}
		}
	}
	return f
}

// checkOracle compares every answer about a random formula f and a second
// formula g (equivalent to f, unrelated, or f ∧ atom) with brute force, and
// checks that f's DNF means f.
func checkOracle(t *testing.T, r *rand.Rand, iter int, gen func() *formula) {
	t.Helper()
	s := NewSpace()
	f := gen()
	var g *formula
	switch iter % 3 {
	case 0:
		g = f.nnf(false) // equivalent
	case 1:
		g = gen() // unrelated
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
	tf, tg := f.table(), g.table()
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
	// The printed DNF must mean p: evaluate it through the atoms' texts. A
	// negated comparison prints as the flipped comparison.
	atoms := map[string]atomSpec{}
	var collect func(*formula)
	collect = func(f *formula) {
		if f.op == "atom" {
			atoms[f.atom.build(s).String()] = f.atom
			if f.atom.kind == "cmp" {
				atoms[f.atom.flip().text()] = f.atom.flip()
			}
		}
		for _, k := range f.kids {
			collect(k)
		}
	}
	collect(f)
	dnf := p.DNF()
	for _, term := range dnf {
		for _, l := range term {
			a, ok := atoms[l.Atom]
			if !ok {
				t.Fatalf("iter %d: DNF literal %q is not an atom of p", iter, l.Atom)
			}
			if l.Neg && a.kind == "cmp" {
				t.Fatalf("iter %d: DNF literal %s: a negated comparison prints flipped", iter, l)
			}
			if f.op == "forget" && a.reads(f.forget) {
				t.Fatalf("iter %d: DNF %v of ∃%s mentions %s", iter, dnf, f.forget, l.Atom)
			}
		}
	}
	td := tableOf(func(in input) bool {
		for _, term := range dnf {
			holds := true
			for _, l := range term {
				if atoms[l.Atom].eval(in) == l.Neg {
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
