package xdp

import (
	"fmt"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/packet"
)

// Expressions compile as in the Go backend: values of at most 64 bits as
// __u64 arithmetic, wider ones as nsc_v128 (two words) through the helper
// functions of the runtime part (file.go). The arithmetic is exact as
// docs/language.md 11.4 says: a result is cut to its width.

func (c *gen) bad(e *packet.Expr) string {
	if e == nil {
		c.fail("missing operand")
	} else {
		c.fail("expression %q: operator %d is not supported", e.Text, e.Kind)
	}
	return "0"
}

// cond generates a condition as a C int expression; statements it needs
// (header checks, short-circuit branches) go before it.
func (c *gen) cond(e *packet.Expr) string {
	if e == nil {
		return c.bad(e)
	}
	switch e.Kind {
	case packet.EValid:
		if e.Header < 0 || e.Header >= len(c.s.Headers) {
			return c.bad(e)
		}
		if c.s.Headers[e.Header].Metadata {
			return "1"
		}
		return c.isValid(e.Header)
	case packet.ENot:
		return "!(" + c.cond(e.A) + ")"
	case packet.EAnd, packet.EOr:
		t := c.newTmp("c")
		c.emit("int %s = %s;", t, c.cond(e.A))
		if e.Kind == packet.EAnd {
			c.emit("if (%s) {", t)
		} else {
			c.emit("if (!%s) {", t)
		}
		c.pushScope()
		c.emit("%s = %s;", t, c.cond(e.B))
		c.popScope()
		c.emit("}")
		return t
	case packet.EEq, packet.ENe, packet.ELt, packet.ELe, packet.EGt, packet.EGe:
		op := map[packet.ExprKind]string{packet.EEq: "==", packet.ENe: "!=", packet.ELt: "<", packet.ELe: "<=", packet.EGt: ">", packet.EGe: ">="}[e.Kind]
		if e.A == nil || e.B == nil {
			return c.bad(nil)
		}
		if flow.IsWide(e.A) || flow.IsWide(e.B) {
			a, b := c.value(e.A), c.value(e.B)
			switch e.Kind {
			case packet.EEq:
				return fmt.Sprintf("nsc_veq(%s, %s)", a, b)
			case packet.ENe:
				return fmt.Sprintf("!nsc_veq(%s, %s)", a, b)
			}
			return fmt.Sprintf("(nsc_vcmp(%s, %s) %s 0)", a, b, op)
		}
		a, b := c.u64(e.A), c.u64(e.B)
		return fmt.Sprintf("(%s %s %s)", a, op, b)
	case packet.EMasked:
		if e.A == nil {
			return c.bad(nil)
		}
		if flow.IsWide(e) {
			return fmt.Sprintf("nsc_veq(nsc_vand(%s, %s), %s)", c.value(e.A), vlit(e.Mask), vlit(e.Value.And(e.Mask)))
		}
		return fmt.Sprintf("((%s & %s) == %s)", c.u64(e.A), ulit(e.Mask.Lo), ulit(e.Value.Lo&e.Mask.Lo))
	case packet.ERange:
		if e.A == nil {
			return c.bad(nil)
		}
		a := c.newTmp("r")
		if flow.IsWide(e) {
			c.emit("nsc_v128 %s = %s;", a, c.value(e.A))
			return fmt.Sprintf("(nsc_vcmp(%s, %s) >= 0 && nsc_vcmp(%s, %s) <= 0)", a, vlit(e.Lo), a, vlit(e.Hi))
		}
		c.emit("__u64 %s = %s;", a, c.u64(e.A))
		return fmt.Sprintf("(%s >= %s && %s <= %s)", a, ulit(e.Lo.Lo), a, ulit(e.Hi.Lo))
	}
	if flow.IsWide(e) {
		return "!nsc_vzero(" + c.value(e) + ")"
	}
	return "(" + c.u64(e) + " != 0)"
}

// u64 generates a value of at most 64 bits (flow.IsWide(e) is false).
func (c *gen) u64(e *packet.Expr) string {
	if e == nil {
		return c.bad(e)
	}
	if e.Boolean() {
		return "(__u64)(" + c.cond(e) + ")"
	}
	switch e.Kind {
	case packet.EConst:
		return ulit(e.Const.Lo)
	case packet.EParam:
		return c.param(e.Param, false, true)
	case packet.EField:
		return c.readField(e.Field, false)
	case packet.ELen:
		if e.Header < 0 || e.Header >= len(c.s.Headers) {
			return c.bad(e)
		}
		c.emit("if (!%s) %s", c.isValid(e.Header), c.malformed())
		return fmt.Sprintf("(__u64)((__s64)NSC_LEN - (__s64)st->off[%d])", e.Header)
	case packet.EBitNot:
		return fmt.Sprintf("(~%s%s)", c.u64(e.A), maskSuffix(e.Width))
	}
	if e.A == nil || e.B == nil {
		return c.bad(nil)
	}
	a := c.u64(e.A)
	b := c.u64(e.B)
	switch e.Kind {
	case packet.EAdd:
		return fmt.Sprintf("((%s + %s)%s)", a, b, maskSuffix(e.Width))
	case packet.ESub:
		return fmt.Sprintf("((%s - %s)%s)", a, b, maskSuffix(e.Width))
	case packet.EMul:
		return fmt.Sprintf("((%s * %s)%s)", a, b, maskSuffix(e.Width))
	case packet.EBitAnd:
		return fmt.Sprintf("(%s & %s)", a, b)
	case packet.EBitOr:
		return fmt.Sprintf("((%s | %s)%s)", a, b, maskSuffix(e.Width))
	case packet.EBitXor:
		return fmt.Sprintf("((%s ^ %s)%s)", a, b, maskSuffix(e.Width))
	case packet.EShl:
		return fmt.Sprintf("(nsc_shl64(%s, %s)%s)", a, b, maskSuffix(e.Width))
	case packet.EShr:
		return fmt.Sprintf("nsc_shr64(%s, %s)", a, b)
	}
	return c.bad(e)
}

// param is the current action's parameter i: its low word, or (wide) the
// whole value.
func (c *gen) param(i int, wide, low bool) string {
	if c.entry == "" || i < 0 || i >= len(c.paramOff) {
		c.fail("parameter %d outside an action", i)
		return "0"
	}
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

// low generates the low 64 bits of a value (for a lowPreserving e).
func (c *gen) low(e *packet.Expr) string {
	if e == nil {
		return c.bad(e)
	}
	if !flow.IsWide(e) {
		return c.u64(e)
	}
	mask := maskSuffix(e.Width)
	switch e.Kind {
	case packet.EConst:
		return ulit(e.Const.Lo)
	case packet.EParam:
		return c.param(e.Param, false, true)
	case packet.EField:
		return c.readField(e.Field, false)
	case packet.EBitNot:
		return fmt.Sprintf("(~%s%s)", c.low(e.A), mask)
	}
	if !flow.LowPreserving(e) || e.A == nil || e.B == nil {
		return c.value(e) + ".lo"
	}
	if e.Kind == packet.EShl {
		return fmt.Sprintf("(nsc_shl64(%s, %s)%s)", c.low(e.A), c.u64(e.B), mask)
	}
	a, b := c.low(e.A), c.low(e.B)
	op := map[packet.ExprKind]string{packet.EAdd: "+", packet.ESub: "-", packet.EMul: "*", packet.EBitAnd: "&", packet.EBitOr: "|", packet.EBitXor: "^"}[e.Kind]
	if op == "" {
		return c.bad(e)
	}
	return fmt.Sprintf("((%s %s %s)%s)", a, op, b, mask)
}

// value generates an nsc_v128.
func (c *gen) value(e *packet.Expr) string {
	if e == nil {
		return c.bad(e)
	}
	if !flow.IsWide(e) {
		return "nsc_v(0, " + c.u64(e) + ")"
	}
	switch e.Kind {
	case packet.EConst:
		return vlit(e.Const)
	case packet.EParam:
		return c.param(e.Param, true, false)
	case packet.EField:
		return c.readField(e.Field, true)
	case packet.EBitNot:
		return fmt.Sprintf("nsc_vand(nsc_vnot(%s), %s)", c.value(e.A), vlit(packet.Mask(e.Width)))
	}
	if e.Boolean() {
		return "nsc_v(0, (__u64)(" + c.cond(e) + "))"
	}
	if e.A == nil || e.B == nil {
		return c.bad(nil)
	}
	f, ok := wideOps[e.Kind]
	if !ok {
		return c.bad(e)
	}
	return fmt.Sprintf(f, c.value(e.A), c.value(e.B), vlit(packet.Mask(e.Width)))
}

// wideOps print the 128-bit operators: %[1]s and %[2]s are the operands,
// %[3]s the mask of the result's width (results are cut to it).
var wideOps = map[packet.ExprKind]string{
	packet.EAdd:    "nsc_vand(nsc_vadd(%[1]s, %[2]s), %[3]s)",
	packet.ESub:    "nsc_vand(nsc_vsub(%[1]s, %[2]s), %[3]s)",
	packet.EMul:    "nsc_vand(nsc_vmul(%[1]s, %[2]s), %[3]s)",
	packet.EBitAnd: "nsc_vand(%[1]s, %[2]s)",
	packet.EBitOr:  "nsc_vand(nsc_vor(%[1]s, %[2]s), %[3]s)",
	packet.EBitXor: "nsc_vand(nsc_vxor(%[1]s, %[2]s), %[3]s)",
	packet.EShl:    "nsc_vand(nsc_vshlv(%[1]s, %[2]s), %[3]s)",
	packet.EShr:    "nsc_vshrv(%[1]s, %[2]s)",
}
