package packet

import (
	"fmt"
	"math/bits"
)

// Value is an unsigned field value of up to 128 bits (an IPv6 address is the
// widest field a model has). It is a plain value type so the packet path can
// pass it around without allocating.
type Value struct{ Hi, Lo uint64 }

// V makes a Value from a 64-bit integer.
func V(x uint64) Value { return Value{Lo: x} }

// Mask returns the Value with the low width bits set.
func Mask(width int) Value {
	switch {
	case width <= 0:
		return Value{}
	case width < 64:
		return Value{Lo: 1<<uint(width) - 1}
	case width == 64:
		return Value{Lo: ^uint64(0)}
	case width < 128:
		return Value{Hi: 1<<uint(width-64) - 1, Lo: ^uint64(0)}
	default:
		return Value{Hi: ^uint64(0), Lo: ^uint64(0)}
	}
}

// Bit reports bit i (0 is the least significant).
func (v Value) Bit(i int) bool {
	if i < 64 {
		return v.Lo>>uint(i)&1 == 1
	}
	return v.Hi>>uint(i-64)&1 == 1
}

// SetBit returns v with bit i set to b.
func (v Value) SetBit(i int, b bool) Value {
	if i < 64 {
		if b {
			v.Lo |= 1 << uint(i)
		} else {
			v.Lo &^= 1 << uint(i)
		}
		return v
	}
	if b {
		v.Hi |= 1 << uint(i-64)
	} else {
		v.Hi &^= 1 << uint(i-64)
	}
	return v
}

func (v Value) And(w Value) Value { return Value{v.Hi & w.Hi, v.Lo & w.Lo} }
func (v Value) Or(w Value) Value  { return Value{v.Hi | w.Hi, v.Lo | w.Lo} }
func (v Value) Xor(w Value) Value { return Value{v.Hi ^ w.Hi, v.Lo ^ w.Lo} }
func (v Value) Not() Value        { return Value{^v.Hi, ^v.Lo} }
func (v Value) IsZero() bool      { return v.Hi == 0 && v.Lo == 0 }

// Cmp returns -1, 0 or +1.
func (v Value) Cmp(w Value) int {
	switch {
	case v.Hi < w.Hi:
		return -1
	case v.Hi > w.Hi:
		return 1
	case v.Lo < w.Lo:
		return -1
	case v.Lo > w.Lo:
		return 1
	}
	return 0
}

// Add returns v+w modulo 2^128.
func (v Value) Add(w Value) Value {
	lo, c := bits.Add64(v.Lo, w.Lo, 0)
	hi, _ := bits.Add64(v.Hi, w.Hi, c)
	return Value{hi, lo}
}

// Sub returns v-w modulo 2^128.
func (v Value) Sub(w Value) Value {
	lo, b := bits.Sub64(v.Lo, w.Lo, 0)
	hi, _ := bits.Sub64(v.Hi, w.Hi, b)
	return Value{hi, lo}
}

// Mul returns v*w modulo 2^128.
func (v Value) Mul(w Value) Value {
	hi, lo := bits.Mul64(v.Lo, w.Lo)
	hi += v.Hi*w.Lo + v.Lo*w.Hi
	return Value{hi, lo}
}

// Shl returns v<<n.
func (v Value) Shl(n uint) Value {
	switch {
	case n >= 128:
		return Value{}
	case n >= 64:
		return Value{Hi: v.Lo << (n - 64)}
	case n == 0:
		return v
	}
	return Value{Hi: v.Hi<<n | v.Lo>>(64-n), Lo: v.Lo << n}
}

// Shr returns v>>n.
func (v Value) Shr(n uint) Value {
	switch {
	case n >= 128:
		return Value{}
	case n >= 64:
		return Value{Lo: v.Hi >> (n - 64)}
	case n == 0:
		return v
	}
	return Value{Hi: v.Hi >> n, Lo: v.Lo>>n | v.Hi<<(64-n)}
}

// String prints small values in decimal and wide ones in hex.
func (v Value) String() string {
	if v.Hi == 0 {
		if v.Lo < 1<<16 {
			return fmt.Sprintf("%d", v.Lo)
		}
		return fmt.Sprintf("0x%x", v.Lo)
	}
	return fmt.Sprintf("0x%x%016x", v.Hi, v.Lo)
}
