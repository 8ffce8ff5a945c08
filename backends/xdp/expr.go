package xdp

import (
	"fmt"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/packet"
)

// Expressions compile as in the Go backend: values of at most 64 bits as
// __u64 arithmetic, wider ones as nsc_v128 (two words) through the helper
// functions of the runtime part (file.go). The arithmetic is exact as
// docs/language.md 11.4 says: a result is cut to its width.

func (c *gen) Bad(e *packet.Expr) string {
	if e == nil {
		c.fail("missing operand")
	} else {
		c.fail("expression %q: operator %d is not supported", e.Text, e.Kind)
	}
	return "0"
}

// Conditions: lower.Cond decides, these print C (lower.CondSyntax).

func (c *gen) Present(e *packet.Expr, k lower.Known) string {
	if e.Header < 0 || e.Header >= len(c.s.Headers) {
		return c.Bad(e)
	}
	return c.present(e.Header, k)
}

func (c *gen) NewVar(prefix string) string { return c.newTmp(prefix) }

func (c *gen) Declare(name string, kind lower.VarKind, v string) {
	typ := map[lower.VarKind]string{lower.BoolVar: "int", lower.WideVar: "nsc_v128", lower.WordVar: "__u64"}[kind]
	c.emit("%s %s = %s;", typ, name, v)
}

func (c *gen) Set(name, v string) { c.emit("%s = %s;", name, v) }
func (c *gen) PushScope()         { c.hdrs = append(c.hdrs, nil) }
func (c *gen) PopScope()          { c.hdrs = c.hdrs[:len(c.hdrs)-1] }

func (c *gen) WideCompare(op packet.ExprKind, a, b string) string {
	switch op {
	case packet.EEq:
		return fmt.Sprintf("nsc_veq(%s, %s)", a, b)
	case packet.ENe:
		return fmt.Sprintf("!nsc_veq(%s, %s)", a, b)
	}
	return fmt.Sprintf("(nsc_vcmp(%s, %s) %s 0)", a, b, lower.CompareOp(op))
}

func (c *gen) Masked(a string, mask, value packet.Value, wide bool) string {
	if wide {
		return fmt.Sprintf("nsc_veq(nsc_vand(%s, %s), %s)", a, vlit(mask), vlit(value))
	}
	return fmt.Sprintf("((%s & %s) == %s)", a, ulit(mask.Lo), ulit(value.Lo))
}

func (c *gen) InRange(a string, lo, hi packet.Value, wide bool) string {
	if wide {
		return fmt.Sprintf("(nsc_vcmp(%s, %s) >= 0 && nsc_vcmp(%s, %s) <= 0)", a, vlit(lo), a, vlit(hi))
	}
	return fmt.Sprintf("(%s >= %s && %s <= %s)", a, ulit(lo.Lo), a, ulit(hi.Lo))
}

func (c *gen) WideNonZero(a string) string { return "!nsc_vzero(" + a + ")" }

// Values (lower.ValueSyntax): a word is a __u64, a wide value an
// nsc_v128.

func (c *gen) Const(v packet.Value, a lower.Arith) string {
	if a == lower.ArithWide {
		return vlit(v)
	}
	return ulit(v.Lo)
}

// Param is the current action's parameter i: its low word, or (wide) the
// whole value.
func (c *gen) Param(i int, a lower.Arith) string {
	if c.entry == "" || i < 0 || i >= len(c.paramOff) {
		c.fail("parameter %d outside an action", i)
		return "0"
	}
	wide := a == lower.ArithWide
	off := c.paramOff[i]
	if c.paramWide[i] {
		if wide {
			return fmt.Sprintf("nsc_v(%s->p[%d], %s->p[%d])", c.entry, off, c.entry, off+1)
		}
		return fmt.Sprintf("%s->p[%d]", c.entry, off+1)
	}
	if wide {
		return fmt.Sprintf("nsc_v(0, %s->p[%d])", c.entry, off)
	}
	return fmt.Sprintf("%s->p[%d]", c.entry, off)
}

func (c *gen) Field(f packet.FieldRef, a lower.Arith) string {
	return c.readField(f, a == lower.ArithWide)
}

// U64 generates a value of at most 64 bits (flow.IsWide(e) is false).
func (c *gen) U64(e *packet.Expr) string { return c.w.Word(e) }

// low generates the low 64 bits of a value.
func (c *gen) low(e *packet.Expr) string { return c.w.Low(e) }

// Value generates an nsc_v128.
func (c *gen) Value(e *packet.Expr) string { return c.w.Wide(e) }

func (c *gen) Len(e *packet.Expr) string {
	if e.Header < 0 || e.Header >= len(c.s.Headers) {
		return c.Bad(e)
	}
	c.emit("if (!%s) %s", c.valid(e.Header), c.malformed())
	return fmt.Sprintf("(__u64)((__s64)NSC_LEN - (__s64)st->off[%d])", e.Header)
}

// cSpelling is C's: a word is a __u64, a wide value an nsc_v128. BPF
// has no instruction for a popcount, and clang expands the builtin into
// shifts and masks; a 128-bit operand is a statement expression, so that
// it is evaluated once.
var cSpelling = lower.Spelling{
	Bool: "(__u64)(%s)", Widen: "nsc_v(0, %s)",
	Not: "(~%s%s)", NotWide: "nsc_vand(nsc_vnot(%s), %s)",
	PopCount:     "(__u64)__builtin_popcountll(%s)",
	PopCountWide: "({ nsc_v128 nsc_pc = %s; (__u64)(__builtin_popcountll(nsc_pc.hi) + __builtin_popcountll(nsc_pc.lo)); })",
}

func (c *gen) Spelling() *lower.Spelling { return &cSpelling }

func (c *gen) Binary(e *packet.Expr, a lower.Arith) string {
	if a == lower.ArithLow {
		return c.lowBinary(e)
	}
	if e.A == nil || e.B == nil {
		return c.Bad(nil)
	}
	if a == lower.ArithWide {
		name, cut, ok := lower.WideOp(e.Kind)
		if !ok {
			return c.Bad(e)
		}
		// The runtime's nsc_v<name>; shifts by a value, nsc_v<name>v.
		if e.Kind == packet.EShl || e.Kind == packet.EShr {
			name += "v"
		}
		x := fmt.Sprintf("nsc_v%s(%s, %s)", name, c.Value(e.A), c.Value(e.B))
		if cut {
			x = fmt.Sprintf("nsc_vand(%s, %s)", x, vlit(packet.Mask(e.Width)))
		}
		return x
	}
	x, y := c.U64(e.A), c.U64(e.B)
	op, cut, ok := lower.WordOp(e.Kind)
	if !ok {
		return c.Bad(e)
	}
	// A shift by 64 or more is the interpreter's (nsc_shl64, nsc_shr64).
	v := fmt.Sprintf("(%s %s %s)", x, op, y)
	switch e.Kind {
	case packet.EShl:
		v = fmt.Sprintf("nsc_shl64(%s, %s)", x, y)
	case packet.EShr:
		v = fmt.Sprintf("nsc_shr64(%s, %s)", x, y)
	}
	if !cut {
		return v
	}
	return "(" + v + maskSuffix(e.Width) + ")"
}

// lowBinary is the low 64 bits of a binary operator's value: from its
// operands' low bits where they follow from them (flow.LowPreserving),
// else the 128-bit value's.
func (c *gen) lowBinary(e *packet.Expr) string {
	mask := maskSuffix(e.Width)
	if !flow.LowPreserving(e) || e.A == nil || e.B == nil {
		return c.Value(e) + ".lo"
	}
	if e.Kind == packet.EShl {
		return fmt.Sprintf("(nsc_shl64(%s, %s)%s)", c.low(e.A), c.U64(e.B), mask)
	}
	x, y := c.low(e.A), c.low(e.B)
	op, _, ok := lower.WordOp(e.Kind)
	if !ok || e.Kind == packet.EShr {
		return c.Bad(e)
	}
	return fmt.Sprintf("((%s %s %s)%s)", x, op, y, mask)
}
