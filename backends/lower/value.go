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
	// Bool is a condition's value, 0 or 1: a word, or wide.
	Bool(cond string, a Arith) string
	// Widen is a word as a 128-bit value.
	Widen(word string) string
	// Not is x's bitwise not, cut to width.
	Not(x string, width int, a Arith) string
	// Binary is e's binary operator in arithmetic a (or a refusal).
	Binary(e *packet.Expr, a Arith) string
}

// Word prints e, a value of at most 64 bits (flow.IsWide false).
func Word(s ValueSyntax, e *packet.Expr) string {
	switch {
	case e == nil:
		return s.Bad(nil)
	case e.Boolean():
		return s.Bool(Cond(s, e), ArithWord)
	}
	if x, ok := leaf(s, e, ArithWord); ok {
		return x
	}
	switch e.Kind {
	case packet.ELen:
		return s.Len(e)
	case packet.EBitNot:
		return s.Not(Word(s, e.A), e.Width, ArithWord)
	}
	return s.Binary(e, ArithWord)
}

// Low prints the low 64 bits of e's value.
func Low(s ValueSyntax, e *packet.Expr) string {
	switch {
	case e == nil:
		return s.Bad(nil)
	case !flow.IsWide(e):
		return Word(s, e)
	}
	if x, ok := leaf(s, e, ArithLow); ok {
		return x
	}
	if e.Kind == packet.EBitNot {
		return s.Not(Low(s, e.A), e.Width, ArithLow)
	}
	return s.Binary(e, ArithLow)
}

// Wide prints e as a 128-bit value.
func Wide(s ValueSyntax, e *packet.Expr) string {
	switch {
	case e == nil:
		return s.Bad(nil)
	case !flow.IsWide(e):
		return s.Widen(Word(s, e))
	}
	if x, ok := leaf(s, e, ArithWide); ok {
		return x
	}
	switch {
	case e.Kind == packet.EBitNot:
		return s.Not(Wide(s, e.A), e.Width, ArithWide)
	case e.Boolean(): // a comparison of wide operands
		return s.Bool(Cond(s, e), ArithWide)
	}
	return s.Binary(e, ArithWide)
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
