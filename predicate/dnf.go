package predicate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Literal is an atom as the user wrote it, possibly negated. A negated
// comparison (Eq or Cmp) is given as the comparison that holds exactly when
// it does not, unnegated: not(ipv4.ihl <= 5) is {Atom: "ipv4.ihl > 5"} and
// not(x == 3) is {Atom: "x != 3"}. Other atoms negate as {Atom, Neg: true}.
type Literal struct {
	Atom string
	Neg  bool
}

// literal returns how atom id prints, negated or not.
func (s *Space) literal(id int32, neg bool) Literal {
	a := s.atomList[id]
	if neg && a.negText != "" {
		return Literal{a.negText, false}
	}
	return Literal{a.text, neg}
}

// String prints the literal as prPred does: "atom" or "not(atom)".
func (l Literal) String() string {
	if l.Neg {
		return "not(" + l.Atom + ")"
	}
	return l.Atom
}

func compareLiterals(a, b Literal) int {
	if c := strings.Compare(a.Atom, b.Atom); c != 0 {
		return c
	}
	switch {
	case a.Neg == b.Neg:
		return 0
	case b.Neg:
		return -1
	}
	return 1
}

func compareTerms(a, b []Literal) int {
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return slices.CompareFunc(a, b, compareLiterals)
}

// DNF returns p as a disjunction of conjunctions of literals over the atoms
// as written (not over bits), for printing only. It reads off the paths of
// the atom-level BDD, drops terms that are unsatisfiable once atoms mean
// their packet fields, drops literals the rest of their term implies (so
// "proto == 17 ∧ ¬(proto == 6)" becomes "proto == 17") and negated literals
// without which the term still implies p, then removes duplicate and
// absorbed terms. Literals in a term are sorted by printed text,
// terms by length then text. An unsatisfiable p gives no terms, a
// tautology one empty term. The result is equivalent to p, also after
// ForgetField, ForgetValid and ForgetSymbol (see forget.go), and mentions no
// forgotten atom unless a later And brought it back; it need not be
// minimal, and can be exponentially long in the number of atoms.
func (p Pred) DNF() [][]Literal {
	switch p.bit {
	case falseNode:
		return nil
	case trueNode:
		return [][]Literal{{}}
	}
	s := p.s
	type lit struct {
		id  int32
		neg bool
	}
	bitOf := func(l lit) node {
		b := s.atomList[l.id].bit
		if l.neg {
			return s.bits.not(b)
		}
		return b
	}
	seen := map[string]bool{}
	var terms [][]Literal
	var path []lit
	var walk func(n node)
	walk = func(n node) {
		if n == falseNode {
			return
		}
		if n != trueNode {
			d := s.atoms.nodes[n]
			path = append(path, lit{d.level, true})
			walk(d.lo)
			path[len(path)-1].neg = false
			walk(d.hi)
			path = path[:len(path)-1]
			return
		}
		// Try negated literals first: they are the ones worth losing.
		order := slices.Clone(path)
		slices.SortFunc(order, func(a, b lit) int {
			if a.neg != b.neg {
				if a.neg {
					return -1
				}
				return 1
			}
			return strings.Compare(s.atomList[a.id].text, s.atomList[b.id].text)
		})
		// The literals' bit-level meanings are cheap to combine field by
		// field: atoms on different fields, validities and symbols read
		// disjoint variables, and a path tests each atom once, so no two
		// of its literals share a validity or symbol. The term is thus
		// satisfiable iff the literals on each field are, and so is any
		// part of a satisfiable term.
		byField := map[string][]int{} // field → indices into order
		for i, l := range order {
			if f := s.atomList[l.id].field; f != "" {
				byField[f] = append(byField[f], i)
			}
		}
		for _, is := range byField {
			c := trueNode
			for _, i := range is {
				c = s.bits.and(c, bitOf(order[i]))
			}
			if c == falseNode { // contradictory once atoms mean bits
				return
			}
		}
		// Greedy, in order: literals before i are settled, those after i
		// are all still in; in[j] says whether literal j is (still) in.
		// rest(i) is the conjunction of the literals in other than i.
		in := make([]bool, len(order))
		for i := range in {
			in[i] = true
		}
		// restImpliesLit reports rest(i) ⇒ order[i]. rest(i) is
		// satisfiable, and only literals on the same field read the
		// variables of order[i], so only they can imply it.
		restImpliesLit := func(i int) bool {
			f := s.atomList[order[i].id].field
			if f == "" {
				return false
			}
			c := trueNode
			for _, j := range byField[f] {
				if j != i && in[j] {
					c = s.bits.and(c, bitOf(order[j]))
				}
			}
			return s.bits.implies(c, bitOf(order[i]))
		}
		// restImpliesP reports rest(i) ⇒ p. Implication over atoms as
		// independent booleans carries over to bits (substitute the atoms'
		// meanings), so the small atom-level check goes first; the
		// bit-level one decides when it fails.
		restImpliesP := func(i int) bool {
			var atoms []lit
			for j, l := range order {
				if j != i && in[j] {
					atoms = append(atoms, l)
				}
			}
			slices.SortFunc(atoms, func(a, b lit) int { return cmp.Compare(b.id, a.id) })
			cube := trueNode
			for _, l := range atoms { // bottom-up: deepest level first
				if l.neg {
					cube = s.atoms.mk(l.id, cube, falseNode)
				} else {
					cube = s.atoms.mk(l.id, falseNode, cube)
				}
			}
			if s.atoms.implies(cube, p.atom) {
				return true
			}
			rest := trueNode
			for _, l := range atoms {
				rest = s.bits.and(rest, bitOf(l))
			}
			return s.bits.implies(rest, p.bit)
		}
		var term []Literal
		for i, l := range order {
			// A positive literal goes only if the rest implies it. A negated
			// one also goes if the rest alone stays inside p: BDD paths
			// repeat the negation of every atom tested earlier, and this
			// turns "a or (not(a) and b)" into "a or b". (Throughout, the
			// literals in imply p: rest ⇒ l gives rest ⇒ p, as rest ∧ l ⇒ p.)
			if restImpliesLit(i) || l.neg && restImpliesP(i) {
				in[i] = false
			} else {
				term = append(term, s.literal(l.id, l.neg))
			}
		}
		slices.SortFunc(term, compareLiterals)
		key := termKey(term)
		if !seen[key] {
			seen[key] = true
			terms = append(terms, term)
		}
	}
	walk(p.atom)
	slices.SortFunc(terms, compareTerms)
	return absorb(terms)
}

func termKey(t []Literal) string {
	var b strings.Builder
	for _, l := range t {
		b.WriteString(l.String())
		b.WriteByte(0)
	}
	return b.String()
}

// absorb drops every term that contains a shorter kept term (x ∨ x∧y = x).
// terms must be sorted by length. Kept terms go into a trie of their sorted
// literals; a term's subsets are then the trie paths spelled by
// subsequences of the term.
func absorb(terms [][]Literal) [][]Literal {
	root := &trie{}
	var out [][]Literal
	for _, t := range terms {
		if root.hasSubsetOf(t) {
			continue
		}
		out = append(out, t)
		root.insert(t)
	}
	return out
}

type trie struct {
	next map[Literal]*trie
	end  bool // a term ends here
}

func (n *trie) insert(t []Literal) {
	for _, l := range t {
		if n.next == nil {
			n.next = map[Literal]*trie{}
		}
		c := n.next[l]
		if c == nil {
			c = &trie{}
			n.next[l] = c
		}
		n = c
	}
	n.end = true
}

func (n *trie) hasSubsetOf(t []Literal) bool {
	if n.end {
		return true
	}
	for i, l := range t {
		if c := n.next[l]; c != nil && c.hasSubsetOf(t[i+1:]) {
			return true
		}
	}
	return false
}

// Format prints p in DNF as Dragonet's prPred does: a "name:" line (omitted
// when name is empty), then "OR" over "AND" blocks, two spaces of
// indentation per level. A single term prints as its AND block alone, a
// single literal as the literal; constants print as "true" and "false".
func (p Pred) Format(name string) string {
	var lines []string
	if name != "" {
		lines = append(lines, name+":")
	}
	term := func(t []Literal, indent string) {
		if len(t) == 1 {
			lines = append(lines, indent+t[0].String())
			return
		}
		lines = append(lines, indent+"AND")
		for _, l := range t {
			lines = append(lines, indent+"  "+l.String())
		}
	}
	switch terms := p.DNF(); {
	case p.IsFalse():
		lines = append(lines, "false")
	case p.IsTrue():
		lines = append(lines, "true")
	case len(terms) == 1:
		term(terms[0], "")
	default:
		lines = append(lines, "OR")
		for _, t := range terms {
			term(t, "  ")
		}
	}
	return strings.Join(lines, "\n")
}

// stringMaxPaths bounds the DNF that String computes: String is called
// implicitly by fmt, e.g. in error messages, and must not stall on a
// predicate whose DNF has millions of terms.
const stringMaxPaths = 256

// String prints p's DNF on one line, e.g.
// "(pred(TxQueue,out) and not(pred(prot,p))) or pred(x)". When the DNF
// would come from more than 256 paths it prints a summary instead, such as
// "<predicate over 40 atoms, DNF from 256+ paths>"; DNF and Format always
// print in full.
func (p Pred) String() string {
	switch {
	case p.IsFalse():
		return "false"
	case p.IsTrue():
		return "true"
	}
	if n := p.s.atoms.paths(p.atom, stringMaxPaths+1); n > stringMaxPaths {
		return fmt.Sprintf("<predicate over %d atoms, DNF from %d+ paths>", len(p.s.atoms.support(p.atom)), stringMaxPaths)
	}
	terms := p.DNF()
	parts := make([]string, len(terms))
	for i, t := range terms {
		lits := make([]string, len(t))
		for j, l := range t {
			lits[j] = l.String()
		}
		parts[i] = strings.Join(lits, " and ")
		if len(terms) > 1 && len(t) > 1 {
			parts[i] = "(" + parts[i] + ")"
		}
	}
	return strings.Join(parts, " or ")
}
