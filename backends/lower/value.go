package lower

import (
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
	// Bool is a condition's value as a word, 0 or 1.
	Bool(cond string) string
	// Widen is a word as a 128-bit value.
	Widen(word string) string
	// Not is word x's bitwise not, cut to width; NotWide a 128-bit x's.
	Not(x string, width int) string
	NotWide(x string, width int) string
	// PopCount is the number of 1 bits of x, a word, or a 128-bit value
	// (wide), as a word.
	PopCount(x string, wide bool) string
	// Binary is e's binary operator in arithmetic a (or a refusal).
	Binary(e *packet.Expr, a Arith) string
}

// Word prints e, a value of at most 64 bits (flow.IsWide false).
func Word(s ValueSyntax, e *packet.Expr) string {
	switch {
	case e == nil:
		return s.Bad(nil)
	case e.Boolean():
		return s.Bool(Cond(s, e))
	}
	if x, ok := leaf(s, e, ArithWord); ok {
		return x
	}
	switch e.Kind {
	case packet.ELen:
		return s.Len(e)
	case packet.EBitNot:
		return s.Not(Word(s, e.A), e.Width)
	case packet.EPopCount:
		return popCount(s, e)
	}
	return s.Binary(e, ArithWord)
}

// Low prints the low 64 bits of e's value.
func Low(s ValueSyntax, e *packet.Expr) string { return wider(s, e, ArithLow) }

// Wide prints e as a 128-bit value.
func Wide(s ValueSyntax, e *packet.Expr) string { return wider(s, e, ArithWide) }

// wider prints e in arithmetic a, ArithLow or ArithWide.
func wider(s ValueSyntax, e *packet.Expr, a Arith) string {
	switch {
	case e == nil:
		return s.Bad(nil)
	case !flow.IsWide(e) && a == ArithLow:
		return Word(s, e)
	case !flow.IsWide(e):
		return s.Widen(Word(s, e))
	}
	if x, ok := leaf(s, e, a); ok {
		return x
	}
	switch {
	case e.Kind == packet.EBitNot && a == ArithLow:
		return s.Not(Low(s, e.A), e.Width)
	case e.Kind == packet.EBitNot:
		return s.NotWide(Wide(s, e.A), e.Width)
	case e.Boolean() && a == ArithWide: // a comparison of wide operands
		return s.Widen(s.Bool(Cond(s, e)))
	case e.Kind == packet.EPopCount && a == ArithLow:
		return popCount(s, e)
	case e.Kind == packet.EPopCount:
		return s.Widen(popCount(s, e))
	}
	return s.Binary(e, a)
}

// popCount prints e's count of the 1 bits of its operand, a word.
func popCount(s ValueSyntax, e *packet.Expr) string {
	if e.A == nil {
		return s.Bad(nil)
	}
	if flow.IsWide(e.A) {
		return s.PopCount(Wide(s, e.A), true)
	}
	return s.PopCount(Word(s, e.A), false)
}

// leaf prints e through s in arithmetic a if e is a leaf.
func leaf(s ValueSyntax, e *packet.Expr, a Arith) (string, bool) {
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
