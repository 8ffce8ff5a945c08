package flow

import (
	"testing"

	"github.com/dragonet-go/nsc/packet"
)

func TestSmallRange(t *testing.T) {
	s := &packet.Schema{Headers: []*packet.HeaderSpec{{Name: "h", Fields: []packet.FieldSpec{
		{Name: "n4", Width: 4}, {Name: "n32", Offset: 4, Width: 32}, {Name: "n48", Offset: 36, Width: 48},
	}}}}
	field := func(i int) *packet.Expr {
		return &packet.Expr{Kind: packet.EField, Field: packet.FieldRef{Field: i}, Width: s.Headers[0].Fields[i].Width}
	}
	num := func(v uint64) *packet.Expr {
		return &packet.Expr{Kind: packet.EConst, Const: packet.Value{Lo: v}, Width: 128}
	}
	op := func(k packet.ExprKind, w int, a, b *packet.Expr) *packet.Expr {
		return &packet.Expr{Kind: k, Width: w, A: a, B: b}
	}
	for _, tc := range []struct {
		name   string
		e      *packet.Expr
		lo, hi int64
		ok     bool
	}{
		{"IPv4 options: (ihl - 5) * 4", op(packet.EMul, 128, op(packet.ESub, 128, field(0), num(5)), num(4)), -20, 40, true},
		{"a 32-bit field plus one", op(packet.EAdd, 128, field(1), num(1)), 1, 1 << 32, true},
		{"a 48-bit field", field(2), 0, 0, false},
		{"a narrow subtraction wraps", op(packet.ESub, 16, field(0), num(5)), 0, 0, false},
		{"a narrow sum that stays in range", op(packet.EAdd, 16, field(0), num(5)), 5, 20, true},
		{"a product past 2^62", op(packet.EMul, 128, field(1), num(1<<40)), 0, 0, false},
		{"a constant past 2^62", num(1 << 63), 0, 0, false},
		{"a shift", op(packet.EShl, 128, field(0), num(1)), 0, 0, false},
	} {
		lo, hi, ok := SmallRange(s, tc.e)
		if ok != tc.ok || ok && (lo != tc.lo || hi != tc.hi) {
			t.Errorf("%s: got [%d, %d] %v, want [%d, %d] %v", tc.name, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}
