package flow

import "github.com/dragonet-go/nsc/packet"

// Analyses of operations and expressions that every code generator makes
// the same way.

// The interpreter patches at most MaxWindows checksums per changed field,
// over windows of at most MaxWindow bytes; generated code mirrors that.
const (
	MaxWindows = packet.MaxWindows
	MaxWindow  = packet.MaxWindow
)

// Checksummed are the headers a `set … update` node updates that have a
// checksum, in the node's order.
func Checksummed(s *packet.Schema, o *packet.Op) []int {
	var us []int
	for _, u := range o.Update {
		if s.Headers[u].Checksum >= 0 {
			us = append(us, u)
		}
	}
	return us
}

// CanSumUpdates reports whether a `set … update` node's checksum patches
// can be summed per checksum and applied once at the end of the node
// (packet.ApplyChecksumDelta): its assignments neither read nor write a
// checksum they update, which would see the intermediate values.
func CanSumUpdates(s *packet.Schema, o *packet.Op) bool {
	if len(o.Update) == 0 || len(o.Update) > MaxWindows {
		return false
	}
	isCsum := func(f packet.FieldRef) bool {
		for _, u := range o.Update {
			if f.Header == u && f.Field == s.Headers[u].Checksum {
				return true
			}
		}
		return false
	}
	var reads func(e *packet.Expr) bool
	reads = func(e *packet.Expr) bool {
		if e == nil {
			return false
		}
		return (e.Kind == packet.EField && isCsum(e.Field)) || reads(e.A) || reads(e.B)
	}
	for _, a := range o.Assign {
		if isCsum(a.Dst) || reads(a.Src) {
			return false
		}
	}
	return true
}

// IsWide reports whether e needs 128-bit arithmetic somewhere.
func IsWide(e *packet.Expr) bool {
	if e == nil {
		return false
	}
	if e.Width > 64 || e.Const.Hi != 0 || e.Value.Hi != 0 || e.Mask.Hi != 0 || e.Lo.Hi != 0 || e.Hi.Hi != 0 {
		return true
	}
	return IsWide(e.A) || IsWide(e.B)
}

// LowPreserving reports whether the low 64 bits of e follow from the low
// 64 bits of its operands (+, -, *, &, |, ^, ~, << by a narrow amount, and
// leaves), so that a destination of at most 64 bits can be computed in 64.
func LowPreserving(e *packet.Expr) bool {
	if e == nil {
		return false
	}
	switch e.Kind {
	case packet.EConst, packet.EField, packet.EParam:
		return true
	case packet.EAdd, packet.ESub, packet.EMul, packet.EBitAnd, packet.EBitOr, packet.EBitXor:
		return LowPreserving(e.A) && LowPreserving(e.B)
	case packet.EShl:
		return LowPreserving(e.A) && !IsWide(e.B)
	case packet.EBitNot:
		return LowPreserving(e.A)
	}
	return false
}

// SmallRange reports the range of e's value as an integer when e is made
// of constants, fields of at most 32 bits, +, - and * whose every value
// stays within ±2^62, and every operation either keeps 128 bits or never
// leaves [0, 2^width): then e's value modulo 2^128 (what the interpreter
// computes) is its integer value, and signed 64-bit arithmetic finds it.
func SmallRange(s *packet.Schema, e *packet.Expr) (lo, hi int64, ok bool) {
	const limit = 1 << 62
	if e == nil {
		return 0, 0, false
	}
	switch e.Kind {
	case packet.EConst:
		if e.Const.Hi != 0 || e.Const.Lo >= limit {
			return 0, 0, false
		}
		return int64(e.Const.Lo), int64(e.Const.Lo), true
	case packet.EField:
		w := s.Headers[e.Field.Header].Fields[e.Field.Field].Width
		if w > 32 {
			return 0, 0, false
		}
		return 0, 1<<w - 1, true
	case packet.EAdd, packet.ESub, packet.EMul:
	default:
		return 0, 0, false
	}
	alo, ahi, aok := SmallRange(s, e.A)
	blo, bhi, bok := SmallRange(s, e.B)
	if !aok || !bok {
		return 0, 0, false
	}
	switch e.Kind {
	case packet.EAdd:
		lo, hi = alo+blo, ahi+bhi
	case packet.ESub:
		lo, hi = alo-bhi, ahi-blo
	default:
		for _, x := range []int64{alo, ahi} {
			for _, y := range []int64{blo, bhi} {
				if x != 0 && (x > limit/max(y, -y, 1) || -x > limit/max(y, -y, 1)) {
					return 0, 0, false
				}
			}
		}
		p := []int64{alo * blo, alo * bhi, ahi * blo, ahi * bhi}
		lo, hi = min(p[0], p[1], p[2], p[3]), max(p[0], p[1], p[2], p[3])
	}
	if lo <= -limit || hi >= limit {
		return 0, 0, false
	}
	if e.Width < 128 && (lo < 0 || e.Width < 63 && hi >= 1<<e.Width) {
		return 0, 0, false
	}
	return lo, hi, true
}
