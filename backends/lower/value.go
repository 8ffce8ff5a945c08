package lower

import (
	"fmt"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/packet"
)

// Expression values: Word, Low and Wide decide which part of an
// expression prints how (a condition's value, a leaf, a bitwise not, the
// arithmetic each needs), and a printer's ValueSyntax prints the parts;
// its binary operators (WordOp, WideOp) it prints itself, the operands
// through its own U64, low and Value, which call these.

// Arith is the arithmetic an expression's value is printed in.
type Arith uint8

const (
	ArithWord Arith = iota // a value of at most 64 bits (flow.IsWide false)
	ArithLow               // the low 64 bits of a wider one (flow.LowPreserving)
	ArithWide              // 128 bits
)

// ValueSyntax prints an expression value's parts in one target's syntax.
type ValueSyntax interface {
	CondSyntax
	// Leaves: a constant, an action's parameter, a field.
	Const(v packet.Value, a Arith) string
	Param(i int, a Arith) string
	Field(f packet.FieldRef, a Arith) string
	// Len is the bytes from header e.Header to the frame's end, a word.
	Len(e *packet.Expr) string
	// Spelling is the parts printed by one format each.
	Spelling() *Spelling
	// Binary is e's binary operator in arithmetic a (or a refusal).
	Binary(e *packet.Expr, a Arith) string
}

// Spelling is a target's formats for the value parts that are one
// operation on one operand (the %s).
type Spelling struct {
	// Bool is a condition's value as a word, 0 or 1.
	Bool string
	// Widen is a word as a 128-bit value.
	Widen string
	// Not is a word's bitwise not, a second %s the cut to its width
	// (MaskSuffix); NotWide a 128-bit value's, the second %s the mask
	// (Const of packet.Mask in ArithWide).
	Not, NotWide string
	// PopCount is the number of 1 bits of a word as a word, PopCountWide
	// of a 128-bit value.
	PopCount, PopCountWide string
}

// MaskSuffix is the operator and constant that cut a word to its low w
// bits ("" for 64 and more).
func MaskSuffix(s ValueSyntax, w int) string {
	if w >= 64 {
		return ""
	}
	return " & " + s.Const(packet.Value{Lo: 1<<w - 1}, ArithWord)
}

// Word prints e, a value of at most 64 bits (flow.IsWide false).
func (w *Walker) Word(e *packet.Expr) string {
	s := w.D
	switch {
	case e == nil:
		return s.Bad(nil)
	case e.Boolean():
		return fmt.Sprintf(s.Spelling().Bool, w.Cond(e))
	}
	if x, ok := w.leaf(e, ArithWord); ok {
		return x
	}
	switch e.Kind {
	case packet.ELen:
		return s.Len(e)
	case packet.EBitNot:
		return not(s, w.Word(e.A), e.Width)
	case packet.EPopCount:
		return w.popCount(e)
	}
	return s.Binary(e, ArithWord)
}

// Low prints the low 64 bits of e's value.
func (w *Walker) Low(e *packet.Expr) string { return w.wider(e, ArithLow) }

// Wide prints e as a 128-bit value.
func (w *Walker) Wide(e *packet.Expr) string { return w.wider(e, ArithWide) }

// wider prints e in arithmetic a, ArithLow or ArithWide.
func (w *Walker) wider(e *packet.Expr, a Arith) string {
	s := w.D
	switch {
	case e == nil:
		return s.Bad(nil)
	case !flow.IsWide(e) && a == ArithLow:
		return w.Word(e)
	case !flow.IsWide(e):
		return fmt.Sprintf(s.Spelling().Widen, w.Word(e))
	}
	if x, ok := w.leaf(e, a); ok {
		return x
	}
	switch {
	case e.Kind == packet.EBitNot && a == ArithLow:
		return not(s, w.Low(e.A), e.Width)
	case e.Kind == packet.EBitNot:
		return fmt.Sprintf(s.Spelling().NotWide, w.Wide(e.A), s.Const(packet.Mask(e.Width), ArithWide))
	case e.Boolean() && a == ArithWide: // a comparison of wide operands
		return fmt.Sprintf(s.Spelling().Widen, fmt.Sprintf(s.Spelling().Bool, w.Cond(e)))
	case e.Kind == packet.EPopCount && a == ArithLow:
		return w.popCount(e)
	case e.Kind == packet.EPopCount:
		return fmt.Sprintf(s.Spelling().Widen, w.popCount(e))
	}
	return s.Binary(e, a)
}

// popCount prints e's count of the 1 bits of its operand, a word.
func (w *Walker) popCount(e *packet.Expr) string {
	s := w.D
	if e.A == nil {
		return s.Bad(nil)
	}
	if flow.IsWide(e.A) {
		return fmt.Sprintf(s.Spelling().PopCountWide, w.Wide(e.A))
	}
	return fmt.Sprintf(s.Spelling().PopCount, w.Word(e.A))
}

// not prints word x's bitwise not, cut to width.
func not(s ValueSyntax, x string, width int) string {
	return fmt.Sprintf(s.Spelling().Not, x, MaskSuffix(s, width))
}

// leaf prints e through s in arithmetic a if e is a leaf.
func (w *Walker) leaf(e *packet.Expr, a Arith) (string, bool) {
	s := w.D
	switch e.Kind {
	case packet.EConst:
		return s.Const(e.Const, a), true
	case packet.EParam:
		return s.Param(e.Param, a), true
	case packet.EField:
		return s.Field(e.Field, a), true
	}
	return "", false
}
