package packet

import (
	"errors"
	"math/bits"
)

// BitLen returns the number of bits needed to hold v (0 for zero).
func (v Value) BitLen() int {
	if v.Hi != 0 {
		return 64 + bits.Len64(v.Hi)
	}
	return bits.Len64(v.Lo)
}

// OnesCount returns the number of 1 bits of v.
func (v Value) OnesCount() int { return bits.OnesCount64(v.Hi) + bits.OnesCount64(v.Lo) }

// Fits reports whether v fits in an unsigned field of width bits.
func (v Value) Fits(width int) bool { return v.BitLen() <= width }

// PrefixMask returns a width-bit mask with its top n bits set, the mask an LPM
// key of prefix length n stands for. n is clamped to 0..width.
func PrefixMask(width, n int) Value {
	n = max(0, min(n, width))
	return Mask(width).Xor(Mask(width - n))
}

var (
	errSyntax   = errors.New("not a number")
	errOverflow = errors.New("wider than 128 bits")
)

// ParseValue reads an unsigned number of up to 128 bits, hex with a 0x prefix
// or decimal, the two forms control-plane scripts use.
func ParseValue(s string) (Value, error) {
	var v Value
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		h := s[2:]
		for i := 0; i < len(h); i++ {
			d, ok := hexDigit(h[i])
			if !ok {
				return Value{}, errSyntax
			}
			if v.Hi>>60 != 0 {
				return Value{}, errOverflow
			}
			v = v.Shl(4)
			v.Lo |= uint64(d)
		}
		return v, nil
	}
	if s == "" {
		return Value{}, errSyntax
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return Value{}, errSyntax
		}
		// v = v*10 + d, refusing any carry out of the top word.
		hh, hl := bits.Mul64(v.Hi, 10)
		lh, lo := bits.Mul64(v.Lo, 10)
		hi, c1 := bits.Add64(hl, lh, 0)
		lo, c2 := bits.Add64(lo, uint64(c-'0'), 0)
		hi, c3 := bits.Add64(hi, 0, c2)
		if hh != 0 || c1 != 0 || c3 != 0 {
			return Value{}, errOverflow
		}
		v = Value{hi, lo}
	}
	return v, nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// appendHex writes v as 0x followed by at least digits hex digits, so a
// field's printed width tells its declared width.
func (v Value) appendHex(dst []byte, digits int) []byte {
	const hex = "0123456789abcdef"
	n := max((v.BitLen()+3)/4, digits, 1)
	dst = append(dst, '0', 'x')
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, hex[v.Shr(uint(4*i)).Lo&0xf])
	}
	return dst
}
