package lower

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/packet"
)

// Kind of a variable a condition declares.
type VarKind uint8

const (
	BoolVar VarKind = iota
	WideVar         // 128 bits
	WordVar         // 64 bits
)

// CondSyntax is how a printer writes a condition's parts; Cond decides
// the rest: the branches of a short-circuit, and for each comparison
// 128-bit or 64-bit arithmetic (flow.IsWide).
type CondSyntax interface {
	// Bad refuses e (nil: a missing operand) and returns a stand-in.
	Bad(e *packet.Expr) string
	// Present is "header e.Header is there", known to be k there.
	Present(e *packet.Expr, k Known) string
	// Value is e as a 128-bit value, U64 in 64 bits.
	Value(e *packet.Expr) string
	U64(e *packet.Expr) string
	// NewVar names a fresh variable; Declare declares it holding v, Set
	// assigns it.
	NewVar(prefix string) string
	Declare(name string, kind VarKind, v string)
	Set(name, v string)
	// If opens a block run when cond holds; EndIf closes it. Within,
	// PushScope and PopScope bracket what the block learns (headers
	// checked), which holds only there.
	If(cond string)
	EndIf()
	PushScope()
	PopScope()
	// 128-bit tests: a op b (op a comparison), a&mask == value, lo <= a
	// <= hi, a != 0.
	WideCompare(op packet.ExprKind, a, b string) string
	Masked(a string, mask, value packet.Value, wide bool) string
	InRange(a string, lo, hi packet.Value, wide bool) string
	WideNonZero(a string) string
}

// CompareOp is comparison k's operator, the same in Go and C.
func CompareOp(k packet.ExprKind) string { return compareOp[k] }

var compareOp = map[packet.ExprKind]string{packet.EEq: "==", packet.ENe: "!=", packet.ELt: "<", packet.ELe: "<=", packet.EGt: ">", packet.EGe: ">="}

// Cond prints condition e through s as an expression; the statements it
// needs (a short-circuit's branches, range operands) go before it.
func (w *Walker) Cond(e *packet.Expr) string {
	s := w.D
	if e == nil {
		return s.Bad(e)
	}
	switch e.Kind {
	case packet.EValid:
		return s.Present(e, w.Known(e.Header))
	case packet.ENot:
		return "!(" + w.Cond(e.A) + ")"
	case packet.EAnd, packet.EOr:
		// The second operand runs only when the first leaves it open.
		t := s.NewVar("c")
		s.Declare(t, BoolVar, w.Cond(e.A))
		if e.Kind == packet.EAnd {
			s.If(t)
		} else {
			s.If("!" + t)
		}
		s.PushScope()
		s.Set(t, w.Cond(e.B))
		s.PopScope()
		s.EndIf()
		return t
	case packet.EEq, packet.ENe, packet.ELt, packet.ELe, packet.EGt, packet.EGe:
		if e.A == nil || e.B == nil {
			return s.Bad(nil)
		}
		if flow.IsWide(e.A) || flow.IsWide(e.B) {
			return s.WideCompare(e.Kind, s.Value(e.A), s.Value(e.B))
		}
		a, b := s.U64(e.A), s.U64(e.B)
		return "(" + a + " " + compareOp[e.Kind] + " " + b + ")"
	case packet.EMasked:
		if e.A == nil {
			return s.Bad(nil)
		}
		if flow.IsWide(e) {
			return s.Masked(s.Value(e.A), e.Mask, e.Value.And(e.Mask), true)
		}
		return s.Masked(s.U64(e.A), e.Mask, e.Value.And(e.Mask), false)
	case packet.ERange:
		if e.A == nil {
			return s.Bad(nil)
		}
		a := s.NewVar("r")
		if flow.IsWide(e) {
			s.Declare(a, WideVar, s.Value(e.A))
			return s.InRange(a, e.Lo, e.Hi, true)
		}
		s.Declare(a, WordVar, s.U64(e.A))
		return s.InRange(a, e.Lo, e.Hi, false)
	}
	if flow.IsWide(e) {
		return s.WideNonZero(s.Value(e))
	}
	return "(" + s.U64(e) + " != 0)"
}

// Var declares a fresh variable (named from prefix) holding e's value,
// 128-bit or a word as e needs, and returns its name and whether it is
// wide: a switch's value, compared case by case.
func (w *Walker) Var(prefix string, e *packet.Expr) (name string, wide bool) {
	s := w.D
	name, wide = s.NewVar(prefix), flow.IsWide(e)
	if wide {
		s.Declare(name, WideVar, s.Value(e))
	} else {
		s.Declare(name, WordVar, s.U64(e))
	}
	return name, wide
}
