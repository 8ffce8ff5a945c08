package predicate

// This file implements existential quantification, the predicate
// transformer of operations that overwrite packet state: after
// "set ipv4.ttl = 64" a port carries (∃ ipv4.ttl. P) ∧ ipv4.ttl == 64.
//
// A Pred keeps two BDDs, and both must be quantified.
//
// The bit level is the meaning: ∃ over the field's bits (or the validity or
// symbol variable) is a standard memoised exists.
//
// The atom level is only for printing, and DNF relies on one invariant:
// substituting every atom variable by the atom's bit-level BDD gives the bit
// level exactly (And, Or and Not commute with substitution). Then every path
// of the atom BDD, read as a conjunction of atoms, implies p, and the paths
// together cover p, so DNF need only drop the paths that are contradictory
// at bit level. Quantifying the atom variables of a field as if they were
// independent booleans would break the invariant: for
// P = (f == 1 ∧ f == 2) ∨ x the bit level gives ∃f. P = x, but
// ∃ over the two atoms as free booleans gives true, and no amount of pruning
// at print time can recover x from true.
//
// So the atom variables of field f are quantified together with their
// consistency C_f, the set of truth-value vectors that some value of f
// realises: atom' = ∃A_f. (atom ∧ C_f). Since the atoms of f read only f,
// and every other atom reads no bit of f,
//
//	(∃A_f. atom ∧ C_f)[atoms := bits] = ∃f. atom[atoms := bits] = ∃f. bit,
//
// which is the invariant again, over atoms that no longer mention f. C_f is
// never built: forgetFieldAtoms walks the atom BDD carrying the bit-level
// set S ⊆ values of f still consistent with the f-atoms decided on the way
// (a Shannon expansion over those atoms with bit-level checks); at an f-atom
// it takes the Or of the two branches with S narrowed by the atom and by its
// negation, dropping a branch whose S is empty, and at any other atom it
// keeps the test. The walk is memoised on (node, S) and stops below the last
// atom of f, so its cost is that of the part of the atom BDD above f's last
// atom times the number of distinct S reached, small for the comparisons,
// ranges and masks of packet predicates. A validity or a symbol is one atom
// variable that no other atom reads, and is quantified as it is.
//
// Printing therefore stays exact after any sequence of And, Or, Not and
// Forget*.

// ForgetField returns ∃f. p: p with every bit of f unconstrained, i.e. the
// packets that satisfy p once f is overwritten with some value. The result
// no longer mentions f's atoms. A field never used in p's Space leaves p
// unchanged; an invalid field (empty name, width outside 1..128, a width
// other than the one the name was first used with) is a misuse: the result
// is False and Space.Err reports it.
func (p Pred) ForgetField(f Field) Pred {
	s := p.s
	if s == nil {
		return p
	}
	if f.Name == "" {
		return s.fail("forget of a field with empty name")
	}
	if f.Width < 1 || f.Width > 128 {
		return s.fail("field %s has width %d, want 1..128", f.Name, f.Width)
	}
	fv, ok := s.fields[f.Name]
	if !ok {
		return p
	}
	if fv.width != f.Width {
		return s.fail("field %s used with width %d and %d", f.Name, fv.width, f.Width)
	}
	levels := make([]int32, fv.width)
	for i := range levels {
		levels[i] = fv.base + int32(i)
	}
	return Pred{s, s.bits.exists(p.bit, levels), s.forgetFieldAtoms(p.atom, f.Name)}
}

// ForgetValid returns ∃ valid(header). p. A header never used in p's Space
// leaves p unchanged; an empty header name is a misuse (False, reported by
// Space.Err).
func (p Pred) ForgetValid(header string) Pred {
	if p.s == nil {
		return p
	}
	if header == "" {
		return p.s.fail("forget of valid() of empty header name")
	}
	return p.forgetVar(p.s.headers[header], "v\x00"+header)
}

// ForgetSymbol returns ∃ name. p, e.g. for "checksum compute udp":
// (∃ csum_ok(udp). P) ∧ csum_ok(udp). A symbol never used in p's Space
// leaves p unchanged; an empty name is a misuse (False, reported by
// Space.Err).
func (p Pred) ForgetSymbol(name string) Pred {
	if p.s == nil {
		return p
	}
	if name == "" {
		return p.s.fail("forget of symbol with empty name")
	}
	return p.forgetVar(p.s.symbols[name], "s\x00"+name)
}

// forgetVar quantifies a validity or symbol: one bit variable (level), one
// atom (key), created together by Valid or Symbol.
func (p Pred) forgetVar(level int32, key string) Pred {
	s := p.s
	id, ok := s.atomIDs[key]
	if !ok { // never used: no variable to quantify
		return p
	}
	return Pred{s, s.bits.exists(p.bit, []int32{level}), s.atoms.exists(p.atom, []int32{id})}
}

// forgetFieldAtoms returns ∃A_f. (n ∧ C_f) over the atom variables of field
// name; see the comment at the top of this file.
func (s *Space) forgetFieldAtoms(n node, name string) node {
	ids := s.fieldAtoms[name]
	if len(ids) == 0 {
		return n
	}
	last := ids[len(ids)-1]
	type key struct{ n, set node }
	memo := map[key]node{}
	var walk func(n, set node) node
	walk = func(n, set node) node {
		if set == falseNode {
			return falseNode // no value of f agrees with the atoms on this path
		}
		if n <= trueNode {
			return n
		}
		d := s.atoms.nodes[n]
		if d.level > last { // no atom of f below
			return n
		}
		k := key{n, set}
		if r, ok := memo[k]; ok {
			return r
		}
		var r node
		if a := s.atomList[d.level]; a.field == name {
			r = walk(d.hi, s.bits.and(set, a.bit))
			if r != trueNode {
				r = s.atoms.or(r, walk(d.lo, s.bits.and(set, s.bits.not(a.bit))))
			}
		} else {
			r = s.atoms.mk(d.level, walk(d.lo, set), walk(d.hi, set))
		}
		memo[k] = r
		return r
	}
	return walk(n, trueNode)
}
