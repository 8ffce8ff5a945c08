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
