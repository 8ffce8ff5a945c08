package wireshark

import (
	"slices"

	"github.com/dragonet-go/nsc/packet"
)

// span is the closed interval [lo, hi] of a field's values.
type span struct{ lo, hi uint64 }

// valueSet is a sorted list of disjoint, non-adjacent spans.
type valueSet []span

// maxOf is the largest value of a width-bit field (width <= 64).
func maxOf(width int) uint64 {
	if width >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(width) - 1
}

// size is how many values s holds (saturating).
func (s valueSet) size() uint64 {
	n := uint64(0)
	for _, x := range s {
		d := x.hi - x.lo + 1
		if d == 0 || n+d < n {
			return ^uint64(0)
		}
		n += d
	}
	return n
}

func fullSet(width int) valueSet { return valueSet{{0, maxOf(width)}} }

func (s valueSet) isFull(width int) bool {
	return len(s) == 1 && s[0].lo == 0 && s[0].hi == maxOf(width)
}

// normal sorts and merges spans.
func (s valueSet) normal() valueSet {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b span) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	var out valueSet
	for _, x := range s {
		if n := len(out); n > 0 && (x.lo <= out[n-1].hi || x.lo == out[n-1].hi+1) {
			out[n-1].hi = max(out[n-1].hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	return out
}

func (s valueSet) union(t valueSet) valueSet { return append(slices.Clone(s), t...).normal() }

func (s valueSet) intersect(t valueSet) valueSet {
	var out valueSet
	for _, a := range s {
		for _, b := range t {
			if lo, hi := max(a.lo, b.lo), min(a.hi, b.hi); lo <= hi {
				out = append(out, span{lo, hi})
			}
		}
	}
	return out.normal()
}

func (s valueSet) complement(width int) valueSet {
	var out valueSet
	next := uint64(0)
	for _, x := range s {
		if x.lo > next {
			out = append(out, span{next, x.lo - 1})
		}
		if x.hi == maxOf(width) {
			return out
		}
		next = x.hi + 1
	}
	return append(out, span{next, maxOf(width)})
}

// enumerable is the widest field whose conditions are computed by trying
// every value.
const enumerable = 16

// condSet is the set of values of field f for which condition e holds; e
// must read no other field. ok is false for a condition it cannot place.
func condSet(s *packet.Schema, e *packet.Expr, f packet.FieldRef) (valueSet, bool) {
	w := s.FieldSpec(f).Width
	if w > 64 {
		return nil, false
	}
	if w <= enumerable {
		return enumerate(e, f, w)
	}
	switch e.Kind {
	case packet.ENot:
		a, ok := condSet(s, e.A, f)
		return a.complement(w), ok
	case packet.EAnd, packet.EOr:
		a, ok1 := condSet(s, e.A, f)
		b, ok2 := condSet(s, e.B, f)
		if e.Kind == packet.EAnd {
			return a.intersect(b), ok1 && ok2
		}
		return a.union(b), ok1 && ok2
	case packet.EMasked:
		return prefixSet(e.Value.Lo, e.Mask.Lo, w, isField(e.A, f) && e.Value.Hi == 0 && e.Mask.Hi == 0)
	case packet.ERange:
		return valueSet{{e.Lo.Lo, e.Hi.Lo}}, isField(e.A, f) && e.Lo.Hi == 0 && e.Hi.Hi == 0 && e.Lo.Lo <= e.Hi.Lo
	}
	return compareSet(e, f, w)
}

// compareSet places `f OP c`, `c OP f` and `f & m == c` (m a prefix mask).
func compareSet(e *packet.Expr, f packet.FieldRef, w int) (valueSet, bool) {
	a, b, kind := e.A, e.B, e.Kind
	if a == nil || b == nil {
		return nil, false
	}
	if a.Kind == packet.EConst {
		var ok bool
		a, b = b, a
		if kind, ok = swapped[kind]; !ok {
			return nil, false
		}
	}
	if b.Kind != packet.EConst || b.Const.Hi != 0 {
		return nil, false
	}
	c := b.Const.Lo
	if a.Kind == packet.EBitAnd && (kind == packet.EEq || kind == packet.ENe) && a.B.Kind == packet.EConst && isField(a.A, f) {
		set, ok := prefixSet(c, a.B.Const.Lo, w, a.B.Const.Hi == 0)
		if kind == packet.ENe {
			set = set.complement(w)
		}
		return set, ok
	}
	if !isField(a, f) {
		return nil, false
	}
	top := maxOf(w)
	switch kind {
	case packet.EEq:
		return valueSet{{c, c}}.intersect(fullSet(w)), true
	case packet.ENe:
		return valueSet{{c, c}}.intersect(fullSet(w)).complement(w), true
	case packet.ELt:
		if c == 0 {
			return nil, true
		}
		return valueSet{{0, min(c-1, top)}}, true
	case packet.ELe:
		return valueSet{{0, min(c, top)}}, true
	case packet.EGt:
		if c >= top {
			return nil, true
		}
		return valueSet{{c + 1, top}}, true
	case packet.EGe:
		if c > top {
			return nil, true
		}
		return valueSet{{c, top}}, true
	}
	return nil, false
}

// swapped is the comparison c OP f written as f OP' c.
var swapped = map[packet.ExprKind]packet.ExprKind{
	packet.EEq: packet.EEq, packet.ENe: packet.ENe,
	packet.ELt: packet.EGt, packet.ELe: packet.EGe, packet.EGt: packet.ELt, packet.EGe: packet.ELe,
}

// prefixSet is {v : v & mask == value & mask} when mask's ones are the top
// bits of a width-bit field: one span.
func prefixSet(value, mask uint64, width int, ok bool) (valueSet, bool) {
	mask &= maxOf(width)
	low := ^mask & maxOf(width)
	if !ok || low&(low+1) != 0 { // the zeros of mask are not the low bits
		return nil, false
	}
	lo := value & mask
	return valueSet{{lo, lo | low}}, true
}

func isField(e *packet.Expr, f packet.FieldRef) bool { return e.Kind == packet.EField && e.Field == f }

// enumerate tries every value of a narrow field.
func enumerate(e *packet.Expr, f packet.FieldRef, w int) (valueSet, bool) {
	var out valueSet
	for v := uint64(0); v <= maxOf(w); v++ {
		r, ok := eval(e, f, v)
		if !ok {
			return nil, false
		}
		if r != 0 {
			if n := len(out); n > 0 && out[n-1].hi == v-1 {
				out[n-1].hi = v
			} else {
				out = append(out, span{v, v})
			}
		}
	}
	return out, true
}

// eval computes e with field f set to v; ok is false if e reads anything
// else or needs more than 64 bits.
func eval(e *packet.Expr, f packet.FieldRef, v uint64) (uint64, bool) {
	if e.Width > 64 {
		return 0, false
	}
	switch e.Kind {
	case packet.EConst:
		return e.Const.Lo, e.Const.Hi == 0
	case packet.EField:
		return v, e.Field == f
	case packet.EMasked:
		a, ok := eval(e.A, f, v)
		return b2u(a&e.Mask.Lo == e.Value.Lo&e.Mask.Lo), ok && e.Mask.Hi == 0
	case packet.ERange:
		a, ok := eval(e.A, f, v)
		return b2u(a >= e.Lo.Lo && a <= e.Hi.Lo), ok && e.Lo.Hi == 0 && e.Hi.Hi == 0
	case packet.ENot, packet.EBitNot:
		a, ok := eval(e.A, f, v)
		if e.Kind == packet.ENot {
			return b2u(a == 0), ok
		}
		return ^a & maxOf(e.Width), ok
	}
	if e.A == nil || e.B == nil {
		return 0, false
	}
	a, ok1 := eval(e.A, f, v)
	b, ok2 := eval(e.B, f, v)
	if !ok1 || !ok2 {
		return 0, false
	}
	r, ok := binaryOp(e.Kind, a, b)
	return r & maxOf(e.Width), ok
}

func binaryOp(k packet.ExprKind, a, b uint64) (uint64, bool) {
	switch k {
	case packet.EAnd:
		return b2u(a != 0 && b != 0), true
	case packet.EOr:
		return b2u(a != 0 || b != 0), true
	case packet.EEq:
		return b2u(a == b), true
	case packet.ENe:
		return b2u(a != b), true
	case packet.ELt:
		return b2u(a < b), true
	case packet.ELe:
		return b2u(a <= b), true
	case packet.EGt:
		return b2u(a > b), true
	case packet.EGe:
		return b2u(a >= b), true
	case packet.EAdd:
		return a + b, true
	case packet.ESub:
		return a - b, true
	case packet.EMul:
		return a * b, true
	case packet.EBitAnd:
		return a & b, true
	case packet.EBitOr:
		return a | b, true
	case packet.EBitXor:
		return a ^ b, true
	case packet.EShl:
		if b >= 64 {
			return 0, true
		}
		return a << b, true
	case packet.EShr:
		if b >= 64 {
			return 0, true
		}
		return a >> b, true
	}
	return 0, false
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// reads lists the fields e reads; ok is false if it reads anything else
// (valid, len, parameters).
func reads(e *packet.Expr) (fs []packet.FieldRef, ok bool) {
	if e == nil {
		return nil, true
	}
	switch e.Kind {
	case packet.EConst:
		return nil, true
	case packet.EField:
		return []packet.FieldRef{e.Field}, true
	case packet.EValid, packet.ELen, packet.EParam:
		return nil, false
	}
	a, ok1 := reads(e.A)
	b, ok2 := reads(e.B)
	for _, x := range b {
		if !slices.Contains(a, x) {
			a = append(a, x)
		}
	}
	return a, ok1 && ok2
}
