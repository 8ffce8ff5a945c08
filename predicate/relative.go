package predicate

import "slices"

// Relative returns the class without the constraints that context already
// implies: what sets the class apart among the packets of context. A
// counterexample printed this way names the few fields that matter, not
// every field the packets share.
func (c Class) Relative(context Pred) Class {
	s := context.s
	if s == nil {
		return c
	}
	implied := func(p Pred) bool { return Implies(context, p) }
	out := Class{}
	for _, f := range c.fields {
		if !implied(s.Masked(f.Field, f.Value, f.Mask)) {
			out.fields = append(out.fields, f)
		}
	}
	keep := func(ls []boolLit, atom func(string) Pred) []boolLit {
		return slices.DeleteFunc(slices.Clone(ls), func(l boolLit) bool {
			p := atom(l.name)
			if !l.value {
				p = p.Not()
			}
			return implied(p)
		})
	}
	out.valid = keep(c.valid, s.Valid)
	out.symbols = keep(c.symbols, s.Symbol)
	return out
}
