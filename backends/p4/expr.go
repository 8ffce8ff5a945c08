package p4

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/packet"
)

// Expressions. The model computes exactly, with the widths of
// docs/language.md 11.4 (a + b is one bit wider than its operands, a - b
// and a << b are 128 bits, an assignment truncates). P4's bit<W> arithmetic
// wraps at the operands' width, so every operand is cast to the model's
// result width first, which makes the two agree bit for bit. Where the
// result is truncated anyway (an assignment, bit<N>(…), a key) and the
// operation's low bits depend only on its operands' low bits (+, -, *, <<,
// &, |, ^, ~), it is computed at the narrower width: the same bits, and
// what a P4 programmer writes.

// scope names the action parameters an expression may read.
type scope struct{ params []string }

// lit is a constant of width w (truncated to it).
func lit(v packet.Value, w int) string {
	v = v.And(packet.Mask(w))
	return fmt.Sprintf("%dw%s", w, hexw(v, w))
}

// num prints small numbers in decimal and the rest in hex.
func num(v packet.Value) string {
	switch {
	case v.Hi == 0 && v.Lo < 1024:
		return fmt.Sprint(v.Lo)
	case v.Hi == 0:
		return fmt.Sprintf("0x%x", v.Lo)
	}
	return fmt.Sprintf("0x%x%016x", v.Hi, v.Lo)
}

// hexw prints v in hex padded to width w's digits, as the models write
// EtherTypes and addresses (0x0800); small values stay decimal.
func hexw(v packet.Value, w int) string {
	s := num(v)
	if !strings.HasPrefix(s, "0x") {
		return s
	}
	for len(s)-2 < (w+3)/4 {
		s = "0x0" + s[2:]
	}
	return s
}

// atomic reports whether s needs no parentheses as an operand: it is
// parenthesized, has no spaces (binary operators are written with spaces
// around them), or is a cast or unary operator applied to such.
func atomic(s string) bool {
	switch {
	case strings.HasPrefix(s, "(") && closing(s, 0) == len(s)-1:
		return true
	case strings.HasPrefix(s, "(bit<"):
		return atomic(s[closing(s, 0)+1:])
	case strings.HasPrefix(s, "~") || strings.HasPrefix(s, "!"):
		return atomic(s[1:])
	}
	return !strings.Contains(s, " ")
}

// closing returns the index of the parenthesis closing the one at i.
func closing(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// paren wraps s unless it is atomic.
func paren(s string) string {
	if atomic(s) {
		return s
	}
	return "(" + s + ")"
}

// bare drops the parentheses around a whole expression, for statements.
func bare(s string) string {
	for strings.HasPrefix(s, "(") && closing(s, 0) == len(s)-1 {
		s = s[1 : len(s)-1]
	}
	return s
}

// cast converts text s of width from to width to.
func cast(s string, from, to int) string {
	if from == to {
		return s
	}
	return fmt.Sprintf("(bit<%d>)%s", to, paren(s))
}

// field is the P4 reference to a header or metadata field.
func (c *gen) field(f packet.FieldRef) string {
	h := c.s.Headers[f.Header]
	if h.Metadata {
		return c.metaRef[f.Header] + "." + c.fieldName[f]
	}
	return "hdr." + c.hdrName[f.Header] + "." + c.fieldName[f]
}

// valid is the P4 test that wire header h is in the frame.
func (c *gen) valid(h int) string {
	if c.s.Headers[h].Metadata {
		return "true"
	}
	return "hdr." + c.hdrName[h] + ".isValid()"
}

// isMask reports whether e is the constant all-ones of width w.
func isMask(e *packet.Expr, w int) bool {
	return e.Kind == packet.EConst && e.Const == packet.Mask(w)
}

// value is e as a P4 expression of type bit<e.Width>.
func (c *gen) value(e *packet.Expr, sc *scope) string {
	if e.Boolean() {
		return "(bit<1>)" + paren(c.cond(e, sc))
	}
	w := e.Width
	switch e.Kind {
	case packet.EConst:
		return lit(e.Const, w)
	case packet.EField:
		return c.field(e.Field)
	case packet.EParam:
		return sc.params[e.Param]
	case packet.EBitNot:
		return "~" + paren(c.as(e.A, w, sc))
	case packet.EShl, packet.EShr:
		op := map[packet.ExprKind]string{packet.EShl: "<<", packet.EShr: ">>"}[e.Kind]
		return fmt.Sprintf("(%s %s %s)", paren(c.as(e.A, w, sc)), op, c.shift(e.B, sc))
	case packet.EBitAnd:
		if isMask(e.B, w) {
			return c.as(e.A, w, sc) // bit<N>(…)
		}
	}
	op := map[packet.ExprKind]string{packet.EAdd: "+", packet.ESub: "-", packet.EMul: "*",
		packet.EBitAnd: "&", packet.EBitOr: "|", packet.EBitXor: "^"}[e.Kind]
	if op == "" {
		panic(fmt.Sprintf("p4 backend: expression kind %d", e.Kind))
	}
	return fmt.Sprintf("(%s %s %s)", paren(c.as(e.A, w, sc)), op, paren(c.as(e.B, w, sc)))
}

// shift is a shift amount: a plain number for a constant, else its value.
// The interpreter shifts by the amount's low 64 bits (packet.Expr.Eval),
// so a wider amount is cut to them.
func (c *gen) shift(e *packet.Expr, sc *scope) string {
	if e.Kind == packet.EConst {
		if e.Const.Lo > 128 {
			return "255" // every bit shifted out either way
		}
		return fmt.Sprint(e.Const.Lo)
	}
	return paren(cast(c.value(e, sc), e.Width, min(e.Width, 64)))
}

// as is e's value converted to width w: truncated (computed at width w
// where that gives the same bits) or zero-extended.
func (c *gen) as(e *packet.Expr, w int, sc *scope) string {
	if e.Kind == packet.EConst {
		return lit(e.Const, w)
	}
	if w >= e.Width || e.Boolean() || !flow.LowPreserving(e) {
		return cast(c.value(e, sc), e.Width, w)
	}
	switch e.Kind {
	case packet.EField, packet.EParam:
		return cast(c.value(e, sc), e.Width, w)
	case packet.EBitNot:
		return "~" + paren(c.as(e.A, w, sc))
	case packet.EShl:
		return fmt.Sprintf("(%s << %s)", paren(c.as(e.A, w, sc)), c.shift(e.B, sc))
	case packet.EBitAnd:
		if isMask(e.B, e.Width) {
			return c.as(e.A, w, sc)
		}
	}
	op := map[packet.ExprKind]string{packet.EAdd: "+", packet.ESub: "-", packet.EMul: "*",
		packet.EBitAnd: "&", packet.EBitOr: "|", packet.EBitXor: "^"}[e.Kind]
	return fmt.Sprintf("(%s %s %s)", paren(c.as(e.A, w, sc)), op, paren(c.as(e.B, w, sc)))
}

// cond is condition e as a P4 bool expression.
func (c *gen) cond(e *packet.Expr, sc *scope) string {
	switch e.Kind {
	case packet.EValid:
		return c.valid(e.Header)
	case packet.ENot:
		return "!" + paren(c.cond(e.A, sc))
	case packet.EAnd, packet.EOr:
		// a && b && c, left to right as the model short-circuits.
		op := map[packet.ExprKind]string{packet.EAnd: " && ", packet.EOr: " || "}[e.Kind]
		var terms []string
		var flat func(x *packet.Expr)
		flat = func(x *packet.Expr) {
			if x.Kind == e.Kind {
				flat(x.A)
				flat(x.B)
				return
			}
			terms = append(terms, paren(c.cond(x, sc)))
		}
		flat(e)
		return "(" + strings.Join(terms, op) + ")"
	case packet.EEq, packet.ENe, packet.ELt, packet.ELe, packet.EGt, packet.EGe:
		op := map[packet.ExprKind]string{packet.EEq: "==", packet.ENe: "!=", packet.ELt: "<", packet.ELe: "<=", packet.EGt: ">", packet.EGe: ">="}[e.Kind]
		w := max(e.A.Width, e.B.Width)
		if e.A.Kind == packet.EConst && e.B.Kind != packet.EConst {
			w = e.B.Width
			if !e.A.Const.Fits(w) {
				w = max(w, e.A.Const.BitLen())
			}
		}
		if e.B.Kind == packet.EConst && e.A.Kind != packet.EConst {
			w = e.A.Width
			if !e.B.Const.Fits(w) {
				w = max(w, e.B.Const.BitLen())
			}
		}
		return fmt.Sprintf("(%s %s %s)", paren(c.as(e.A, w, sc)), op, paren(c.as(e.B, w, sc)))
	case packet.EMasked:
		w := e.A.Width
		want := e.Value.And(e.Mask)
		if !want.Fits(w) {
			return "false" // the key has no bits there
		}
		m := e.Mask.And(packet.Mask(w))
		if m == packet.Mask(w) {
			return fmt.Sprintf("(%s == %s)", paren(c.value(e.A, sc)), lit(want, w))
		}
		return fmt.Sprintf("((%s & %s) == %s)", paren(c.value(e.A, sc)), lit(m, w), lit(want, w))
	case packet.ERange:
		w := e.A.Width
		if !e.Lo.Fits(w) {
			return "false"
		}
		a := paren(c.value(e.A, sc))
		var terms []string
		if !e.Lo.IsZero() {
			terms = append(terms, fmt.Sprintf("%s >= %s", a, lit(e.Lo, w)))
		}
		if e.Hi.Fits(w) && e.Hi != packet.Mask(w) {
			terms = append(terms, fmt.Sprintf("%s <= %s", a, lit(e.Hi, w)))
		}
		if len(terms) == 0 {
			return "true"
		}
		return "(" + strings.Join(terms, " && ") + ")"
	}
	return fmt.Sprintf("(%s != %s)", paren(c.value(e, sc)), lit(packet.Value{}, e.Width))
}

// Malformed frames. The interpreter drops a frame as malformed when an
// operation reads or writes a field of a header it lacks; P4 reads such a
// field as some value and goes on. So the generated code tests, before the
// operation, that every header it touches is there, unless the analysis
// knows it is (known), short-circuits included: in valid(h) && h.f == 1,
// h.f is read only when h is valid.

// guards are the headers a condition being true (or false) proves valid.
func guards(e *packet.Expr, truth bool) []int {
	switch e.Kind {
	case packet.EValid:
		if truth {
			return []int{e.Header}
		}
	case packet.ENot:
		return guards(e.A, !truth)
	case packet.EAnd, packet.EOr:
		a, b := guards(e.A, truth), guards(e.B, truth)
		if (e.Kind == packet.EAnd) == truth { // both hold
			return append(a, b...)
		}
		var both []int
		for _, h := range a {
			if slices.Contains(b, h) {
				both = append(both, h)
			}
		}
		return both
	}
	return nil
}

func with(known map[int]bool, hs []int) map[int]bool {
	if len(hs) == 0 {
		return known
	}
	out := map[int]bool{}
	for h, v := range known {
		out[h] = v
	}
	for _, h := range hs {
		out[h] = true
	}
	return out
}

// malformed is the P4 condition under which evaluating e reads a missing
// header; "" when that cannot happen.
func (c *gen) malformed(e *packet.Expr, known map[int]bool, sc *scope) string {
	if e == nil {
		return ""
	}
	switch e.Kind {
	case packet.EConst, packet.EParam, packet.EValid:
		return ""
	case packet.EField:
		if c.s.Headers[e.Field.Header].Metadata || known[e.Field.Header] {
			return ""
		}
		return "!" + c.valid(e.Field.Header)
	case packet.EAnd, packet.EOr:
		truth := e.Kind == packet.EAnd
		ma := c.malformed(e.A, known, sc)
		mb := c.malformed(e.B, with(known, guards(e.A, truth)), sc)
		if mb == "" {
			return ma
		}
		a := c.cond(e.A, sc)
		if !truth {
			a = "!" + paren(a)
		}
		return anyOf(ma, fmt.Sprintf("(%s && %s)", a, paren(mb)))
	case packet.ENot, packet.EBitNot, packet.EMasked, packet.ERange:
		return c.malformed(e.A, known, sc)
	}
	return anyOf(c.malformed(e.A, known, sc), c.malformed(e.B, known, sc))
}

// anyOf joins conditions with ||, dropping empty and repeated ones.
func anyOf(cs ...string) string {
	var out []string
	for _, s := range cs {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, " || ")
}
