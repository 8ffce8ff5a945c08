package packet

// ExprKind is the operator of an expression node.
type ExprKind uint8

const (
	EConst ExprKind = iota
	EField          // a header or metadata field
	EParam          // an action parameter
	EValid          // valid(header)
	ENot            // !a (boolean)
	EAnd            // a && b
	EOr             // a || b
	EEq
	ENe
	ELt
	ELe
	EGt
	EGe
	EMasked // a & B.Mask == B.Value & B.Mask, written `a in v&&&m` or `a in v/len`
	ERange  // B.Lo <= a <= B.Hi, written `a in [lo, hi]`
	EAdd
	ESub
	EMul
	EBitAnd
	EBitOr
	EBitXor
	EShl
	EShr
	EBitNot
	ELen      // bytes from Header's start to the end of the frame
	EPopCount // the number of 1 bits of A
)

// FieldRef names a field by header and field index.
type FieldRef struct{ Header, Field int }

// Expr is a typed expression tree, resolved against a Schema. Width is the
// result width in bits (1 for booleans); arithmetic wraps at that width.
type Expr struct {
	Kind  ExprKind
	Width int
	Const Value    // EConst
	Field FieldRef // EField
	Param int      // EParam
	// Header is the header of EValid.
	Header int
	A, B   *Expr
	// Value/Mask of EMasked; Lo/Hi of ERange.
	Value, Mask, Lo, Hi Value
	// Text is the source form, used for symbolic atoms and messages.
	Text string
}

// Boolean reports whether the expression is a condition.
func (e *Expr) Boolean() bool {
	switch e.Kind {
	case EValid, ENot, EAnd, EOr, EEq, ENe, ELt, ELe, EGt, EGe, EMasked, ERange:
		return true
	}
	return false
}

// Eval computes e on p. Params are the action parameters in scope. ok is
// false when a field of an invalid header, or outside the packet, is read:
// the caller drops the packet as malformed.
func (e *Expr) Eval(p *Packet, params []Value) (v Value, ok bool) {
	switch e.Kind {
	case EConst:
		return e.Const, true
	case EField:
		return p.Get(e.Field)
	case EParam:
		if e.Param >= len(params) {
			return Value{}, false
		}
		return params[e.Param], true
	case EValid:
		return boolValue(p.Valid(e.Header)), true
	case ELen:
		if !p.Valid(e.Header) {
			return Value{}, false
		}
		return V(uint64(len(p.Data) - p.Hdr[e.Header].Off)), true
	case ENot:
		a, ok := e.A.Eval(p, params)
		return boolValue(a.IsZero()), ok
	case EAnd: // short-circuit: the right side may read a header the left one tests
		a, ok := e.A.Eval(p, params)
		if !ok || a.IsZero() {
			return Value{}, ok
		}
		return e.B.Eval(p, params)
	case EOr:
		a, ok := e.A.Eval(p, params)
		if !ok || !a.IsZero() {
			return a, ok
		}
		return e.B.Eval(p, params)
	case EBitNot:
		a, ok := e.A.Eval(p, params)
		return a.Not().And(Mask(e.Width)), ok
	case EPopCount:
		a, ok := e.A.Eval(p, params)
		return V(uint64(a.OnesCount())), ok
	case EMasked:
		a, ok := e.A.Eval(p, params)
		return boolValue(a.And(e.Mask) == e.Value.And(e.Mask)), ok
	case ERange:
		a, ok := e.A.Eval(p, params)
		return boolValue(a.Cmp(e.Lo) >= 0 && a.Cmp(e.Hi) <= 0), ok
	}
	a, ok := e.A.Eval(p, params)
	if !ok {
		return Value{}, false
	}
	b, ok := e.B.Eval(p, params)
	if !ok {
		return Value{}, false
	}
	switch e.Kind {
	case EEq:
		return boolValue(a == b), true
	case ENe:
		return boolValue(a != b), true
	case ELt:
		return boolValue(a.Cmp(b) < 0), true
	case ELe:
		return boolValue(a.Cmp(b) <= 0), true
	case EGt:
		return boolValue(a.Cmp(b) > 0), true
	case EGe:
		return boolValue(a.Cmp(b) >= 0), true
	case EAdd:
		return a.Add(b).And(Mask(e.Width)), true
	case ESub:
		return a.Sub(b).And(Mask(e.Width)), true
	case EMul:
		return a.Mul(b).And(Mask(e.Width)), true
	case EBitAnd:
		return a.And(b), true
	case EBitOr:
		return a.Or(b).And(Mask(e.Width)), true
	case EBitXor:
		return a.Xor(b).And(Mask(e.Width)), true
	case EShl:
		return a.Shl(uint(min(b.Lo, 128))).And(Mask(e.Width)), true
	case EShr:
		return a.Shr(uint(min(b.Lo, 128))), true
	}
	return Value{}, false
}

func boolValue(b bool) Value {
	if b {
		return Value{Lo: 1}
	}
	return Value{}
}
