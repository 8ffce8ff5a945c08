package golang

import (
	"fmt"
	"strings"
)

// Process is far larger than the compiler's limit for inlining calls of
// any size into a function (inlineBigFunctionNodes), so encoding/binary's
// Uint32, Uint64 and Put* would stay calls, and every call spills the
// packet state held in registers. The generated code spells big-endian
// accesses out byte by byte instead; the compiler merges them into one
// load or store (plus a byte swap) where the slice's length makes the
// indices provably in range, which hdr arranges with constant-length
// header slices.

// beLoad is the n-byte big-endian value at b[k] as a uint64 expression.
func beLoad(b string, k, n int) string {
	if n == 1 {
		return fmt.Sprintf("uint64(%s[%d])", b, k)
	}
	terms := make([]string, n)
	for i := range n {
		terms[i] = fmt.Sprintf("uint64(%s[%d])", b, k+i)
		if sh := 8 * (n - 1 - i); sh > 0 {
			terms[i] += fmt.Sprintf("<<%d", sh)
		}
	}
	return "(" + strings.Join(terms, " | ") + ")"
}

// beStore generates the n-byte big-endian store of the integer expression v
// at b[k]; v is evaluated once.
func (c *gen) beStore(b string, k, n int, v string) {
	if n == 1 {
		c.emit("%s[%d] = byte(%s)", b, k, v)
		return
	}
	t := c.newTmp("s")
	switch n {
	case 2, 4:
		// As the type's width, the bytes are one value's to the
		// compiler's store merging; a uint64 cut to the width by a mask
		// was not always (a zero extension in between left three stores).
		c.emit("%s := uint%d(%s)", t, 8*n, v)
	default:
		// uint64: a constant past int64 bound untyped would not compile
		// (seed 20261203, model 57).
		c.emit("%s := uint64(%s)", t, v)
	}
	for i := range n {
		if sh := 8 * (n - 1 - i); sh > 0 {
			c.emit("%s[%d] = byte(%s >> %d)", b, k+i, t, sh)
		} else {
			c.emit("%s[%d] = byte(%s)", b, k+i, t)
		}
	}
}
