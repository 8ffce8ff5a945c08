package lower

import "github.com/dragonet-go/nsc/packet"

// The binary operators of expressions, for the printers of values: which
// a kind is, and whether its result must be cut to the expression's width
// (docs/language.md 11.4). A bitwise and and a right shift cannot carry
// past it; the others can.

type binOp struct {
	word, wide string
	cut        bool
}

var binOps = map[packet.ExprKind]binOp{
	packet.EAdd: {"+", "add", true}, packet.ESub: {"-", "sub", true}, packet.EMul: {"*", "mul", true},
	packet.EBitAnd: {"&", "and", false}, packet.EBitOr: {"|", "or", true}, packet.EBitXor: {"^", "xor", true},
	packet.EShl: {"<<", "shl", true}, packet.EShr: {">>", "shr", false},
}

// WordOp is binary kind k's operator on 64-bit words, the same in Go and
// C, and whether its result is cut; ok is false for a kind that is not a
// binary operator.
func WordOp(k packet.ExprKind) (op string, cut, ok bool) {
	b, ok := binOps[k]
	return b.word, b.cut, ok
}

// WideOp names binary kind k on 128-bit values (add, sub, mul, and, or,
// xor, shl, shr), for a printer's helper of that name, and says whether
// its result is cut.
func WideOp(k packet.ExprKind) (name string, cut, ok bool) {
	b, ok := binOps[k]
	return b.wide, b.cut, ok
}
