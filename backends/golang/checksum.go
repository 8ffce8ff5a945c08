package golang

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// This file prints `set … update` (lowered by lower.LowerSet) with the
// checksum arithmetic unrolled (and the patches that pops, in layout.go,
// leave pending): each
// field change adds its RFC 1624 delta to a sum per checksum, with the
// byte window fixed at generation time wherever the layout fixes it, and
// each checksum is patched once at the end of the node.
// packet.ApplyChecksumDelta documents why that equals the interpreter's
// patch after every change.

// A summed set (lower.SetSyntax): the windows fixed by the layout lie
// within the field's header and are the same for every checksum (the
// field's words, from its header's start), so they are summed once
// (statics), from the field's old and new values where the window is the
// field (exact); the others are summed per checksum (wins).
type setOld struct {
	b        string // the field's header's bytes
	wins     []win
	statics  []int // checksums whose window is the static one
	oldPart  string
	exact    bool
	slo, shi int
}

type win struct {
	w               lower.Window
	ok, lo, hi, old string
}

func (c *gen) Delta(u int) string {
	d := c.newTmp("d")
	c.emit("var %s uint64 // %s checksum", d, c.s.Headers[u].Name)
	return d
}

func (c *gen) Eval(a *lower.SetAssign) string {
	var v string
	if a.Wide {
		v = c.Value(a.Src)
	} else {
		v = c.low(a.Src)
	}
	if !a.Wide && a.Src.Kind == packet.EConst {
		v = "uint64(" + v + ")" // an untyped constant would bind as int
	}
	val := c.newTmp("v")
	c.emit("%s := %s", val, v)
	return val
}

func (c *gen) Old(a *lower.SetAssign) {
	fs := a.Field
	st := setOld{b: c.hdr(a.Dst.Header)}
	st.slo, st.shi = lower.WordWindow(fs)
	inHeader := st.shi <= c.s.Headers[a.Dst.Header].FixedBytes() && st.shi-st.slo <= flow.MaxWindow
	st.exact = fs.Offset%16 == 0 && (fs.Width == 16 || fs.Width == 32 || fs.Width == 64 || fs.Width == 128)
	for _, lw := range a.Windows {
		if lw.Kind == lower.WindowStatic && inHeader {
			st.statics = append(st.statics, lw.U)
			continue
		}
		w := win{lw, c.newTmp("w"), c.newTmp("lo"), c.newTmp("hi"), c.newTmp("o")}
		c.window(lw, a.Dst, w.ok, w.lo, w.hi)
		c.emit("var %s uint32", w.old)
		c.emit("if %s { %s = %s }", w.ok, w.old, c.sum(w.lo, w.hi, windowLen(lw)))
		st.wins = append(st.wins, w)
	}
	if len(st.statics) > 0 {
		st.oldPart = c.newTmp("os")
		if st.exact {
			c.emit("%s := %s", st.oldPart, c.wordsOf(c.readField(a.Dst, fs.Width > 64), fs.Width, fs.Width > 64, true))
		} else {
			c.emit("%s := %s", st.oldPart, complements(c.bytesSum(st.b, st.slo, st.shi), strconv.Itoa((st.shi-st.slo)/2)))
		}
	}
	c.setOld = st
}

func (c *gen) Store(a *lower.SetAssign, v string) { c.put(c.setOld.b, a.Field, v, a.Wide) }

func (c *gen) Accumulate(a *lower.SetAssign, v string, delta map[int]string) {
	st := c.setOld
	if len(st.statics) > 0 {
		newPart := "uint64(" + c.bytesSum(st.b, st.slo, st.shi) + ")"
		if st.exact {
			newPart = c.wordsOf(v, a.Field.Width, a.Wide, false)
		}
		dl := c.newTmp("dl")
		c.emit("%s := %s + %s", dl, st.oldPart, newPart)
		for _, u := range st.statics {
			if c.there(u) {
				c.emit("%s += %s", delta[u], dl)
			} else {
				c.emit("if %s { %s += %s }", c.hPresent(u), delta[u], dl)
			}
		}
	}
	for _, w := range st.wins {
		n := windowLen(w.w)
		words := strconv.Itoa(n / 2)
		if n == 0 || n > flow.MaxWindow {
			words = fmt.Sprintf("(%s-%s+1)/2", w.hi, w.lo)
		}
		c.emit("if %s { %s += %s + uint64(%s) }", w.ok, delta[w.w.U], complements(w.old, words), c.sum(w.lo, w.hi, n))
	}
}

// Apply patches checksum u now, or leaves the patch pending where pops
// leave theirs (flow.PopChains).
func (c *gen) Apply(u int, d string) {
	if slices.Contains(c.w.Pops.Pending, u) {
		c.pend(u, d)
	} else {
		c.applyDelta(u, d)
	}
}

// pend leaves the checksum patch in d for header u pending (patchPending),
// where applyDelta would apply it now.
func (c *gen) pend(u int, d string) {
	valid := ""
	if !c.there(u) {
		valid = c.hPresent(u) + " && "
	}
	c.emit("if %s%s+%s <= len(data) { pendD%d += %s; pendK%d = true }", valid, c.hOff(u), c.hLen(u), u, d, u)
}

// flushBefore reports whether node n must see the pending checksum patches
// applied first: it reads or writes a pending checksum, reads bytes it
// might cover, calls the packet runtime or sends the frame. The nodes that
// need not are those whose every access is known: tests, switches,
// lookups, extracts and summed sets that keep off the checksum fields, and
// pops, which see to the patches themselves.
func (c *gen) flushBefore(n *dataflow.Node) bool {
	if len(c.w.Pops.Pending) == 0 {
		return false
	}
	o := n.Op
	switch o.Kind {
	case packet.OpNop, packet.OpContext, packet.OpCount, packet.OpDrop, packet.OpPop:
		return false
	case packet.OpTest:
		return c.touchesPending(o.Cond)
	case packet.OpSwitch:
		return c.touchesPending(o.Expr)
	case packet.OpExtract:
		fs := c.s.Headers[o.Header].Fields
		return len(fs) > 0 && c.touchesPending(fs[len(fs)-1].Length)
	case packet.OpLookup:
		def := c.s.Tables[o.Table]
		if c.touchesPending(def.Keys...) {
			return true
		}
		for _, ai := range def.Actions {
			if c.assignsPending(c.s.Actions[ai].Body) {
				return true
			}
		}
		return false
	case packet.OpSet:
		if c.assignsPending(o.Assign) {
			return true
		}
		if len(o.Update) == 0 {
			// A patch does not depend on the bytes around the checksum, so
			// writing others first changes nothing.
			return false
		}
		if !flow.CanSumUpdates(c.s, o) {
			return true // the runtime patches as it goes
		}
		for _, a := range o.Assign {
			h := c.s.Headers[a.Dst.Header]
			if h.Metadata {
				continue
			}
			for _, u := range o.Update {
				if w, ok := lower.FieldWindow(c.s, c.w.Valid, n, u, a.Dst); ok && w.Kind == lower.WindowDynamic {
					return true // the window's bytes are read
				}
			}
			// The words around the field are read; they must not hold a
			// pending checksum.
			if slices.Contains(c.w.Pops.Pending, a.Dst.Header) {
				fs, cs := h.Fields[a.Dst.Field], h.Fields[h.Checksum]
				if fs.Offset/16*2 < cs.Offset/8+2 && cs.Offset/8 < (fs.Offset+fs.Width+15)/16*2 {
					return true
				}
			}
		}
		return false
	}
	return true
}

// isPendingChecksum reports whether f is the checksum field of a header
// whose patches may be pending.
func (c *gen) isPendingChecksum(f packet.FieldRef) bool {
	return slices.Contains(c.w.Pops.Pending, f.Header) && c.s.Headers[f.Header].Checksum == f.Field
}

// touchesPending reports whether an expression reads a pending checksum.
func (c *gen) touchesPending(es ...*packet.Expr) bool {
	for _, e := range es {
		if e == nil {
			continue
		}
		if e.Kind == packet.EField && c.isPendingChecksum(e.Field) || c.touchesPending(e.A, e.B) {
			return true
		}
	}
	return false
}

// assignsPending reports whether assignments read or write a pending
// checksum.
func (c *gen) assignsPending(as []packet.Assign) bool {
	for _, a := range as {
		if c.isPendingChecksum(a.Dst) || c.touchesPending(a.Src) {
			return true
		}
	}
	return false
}

// window generates the interpreter's window rule (packet.Packet.window)
// for window w of field f: ok, and the absolute byte range [lo, hi) as
// variables.
func (c *gen) window(w lower.Window, f packet.FieldRef, ok, lo, hi string) {
	u := w.U
	uValid := c.hPresent(u) + " && "
	if c.there(u) {
		uValid = ""
	}
	if w.Kind == lower.WindowStatic {
		c.emit("%s, %s := %s+%d, %s+%d", lo, hi, c.hOff(f.Header), w.Lo, c.hOff(f.Header), w.Hi)
		c.emit("%s := %s%s <= len(data) && %d <= %d", ok, uValid, hi, w.Hi-w.Lo, flow.MaxWindow)
		return
	}
	// From u's start (parity known only at run time), or the
	// pseudo-header's window, which has the IP header's parity.
	fs := c.s.Headers[f.Header].Fields[f.Field]
	c.emit("%s, %s, %s := false, 0, 0", ok, lo, hi)
	c.emit("if %s%s > %s {", uValid, c.hOff(f.Header), c.hOff(u))
	c.emit("rs := %s", c.hOff(u))
	c.emit("l, h := %s+%d, %s+%d", c.hOff(f.Header), fs.Offset/8, c.hOff(f.Header), (fs.Offset+fs.Width+7)/8)
	c.emit("%s, %s = rs+(l-rs)/2*2, rs+(h-rs+1)/2*2", lo, hi)
	c.emit("%s = %s <= len(data) && %s-%s <= %d", ok, hi, hi, lo, flow.MaxWindow)
	if w.Pseudo {
		if uValid == "" {
			c.emit("} else {")
		} else {
			c.emit("} else if %s {", c.hPresent(u))
		}
		c.emit("%s, %s = %s+%d, %s+%d", lo, hi, c.hOff(f.Header), w.Lo, c.hOff(f.Header), w.Hi)
		c.emit("%s = %s <= len(data) && %s-%s <= %d", ok, hi, hi, lo, flow.MaxWindow)
	}
	c.emit("}")
}

// wordsOf stands for the 16-bit words of a w-bit value v (uint64, or
// packet.Value if wide), or for their complements: a sum with the same
// residue mod 0xffff that is zero exactly when they all are, which is all a
// one's-complement sum keeps of them. Taken whole, a value of 32 bits or
// less is that already (2^16 ≡ 1); a 64-bit one is folded to 33 bits first
// so that the sums cannot overflow.
func (c *gen) wordsOf(v string, w int, wide, complement bool) string {
	not := ""
	if complement {
		not = "^"
	}
	half := func(x string) string {
		t := c.newTmp("ws")
		c.emit("%s := %s%s", t, not, x)
		return fmt.Sprintf("(%s>>32 + uint64(uint32(%s)))", t, t)
	}
	switch {
	case wide:
		t := c.newTmp("wv")
		c.emit("%s := %s", t, v)
		return half(t+".Hi") + " + " + half(t+".Lo")
	case w == 64:
		return half(v)
	}
	return fmt.Sprintf("uint64(%suint%d(%s))", not, w, v)
}

// bytesSum is the sum of the 16-bit words of b[lo:hi] (not folded).
func (c *gen) bytesSum(b string, lo, hi int) string {
	var t []string
	for k := lo; k < hi; k += 2 {
		t = append(t, fmt.Sprintf("uint32%s", beLoad(b, k, 2)))
	}
	return strings.Join(t, " + ")
}

// complements is the sum of the complements of a window's old words, the
// old part of packet.ChecksumDelta: words (a Go expression) of them
// summing to oldSum.
func complements(oldSum, words string) string {
	return fmt.Sprintf("(uint64(%s)*0xffff - uint64(%s))", words, oldSum)
}

// windowLen is the length of window w when the layout fixes it, else 0.
func windowLen(w lower.Window) int {
	if w.Kind == lower.WindowStatic {
		return w.Hi - w.Lo
	}
	return 0
}

// sum is the one's-complement sum of data[lo:hi] (not folded), unrolled
// when the window's length n is known.
func (c *gen) sum(lo, hi string, n int) string {
	if n == 0 || n > flow.MaxWindow {
		return fmt.Sprintf("packet.SumWords(data[%s:%s])", lo, hi)
	}
	var terms []string
	for k := 0; k < n; k += 2 {
		terms = append(terms, fmt.Sprintf("(uint32(data[%s+%d])<<8 | uint32(data[%s+%d]))", lo, k, lo, k+1))
	}
	return strings.Join(terms, " + ")
}

// applyDelta patches header u's checksum with the sum in variable d (the
// patch is skipped, as packet.Packet.patch skips it, when u is not there).
func (c *gen) applyDelta(u int, d string) {
	spec := c.s.Headers[u]
	fs := spec.Fields[spec.Checksum]
	valid := ""
	if !c.there(u) {
		valid = c.hPresent(u) + " && " // a valid header's offset is not negative
	}
	c.emit("if %s%s+%s <= len(data) {", valid, c.hOff(u), c.hLen(u))
	c.emit("cb := data[%s+%d : %s+%d]", c.hOff(u), fs.Offset/8, c.hOff(u), fs.Offset/8+2)
	// packet.ApplyChecksumDelta inline: ^fold(^c + d), the fold by end-around
	// additions of the halves (a non-zero sum never folds to zero).
	c.usesBits = true
	c.emit("cv := uint16%s", beLoad("cb", 0, 2))
	if spec.ChecksumOptional {
		c.emit("if cv != 0 {")
	}
	c.emit("x := uint64(^cv) + %s", d)
	c.emit("x += bits.RotateLeft64(x, 32)")
	c.emit("y := uint32(x >> 32)")
	c.emit("y += bits.RotateLeft32(y, 16)")
	c.emit("r := ^uint16(y >> 16)")
	if spec.ChecksumOptional {
		c.emit("if r == 0 { r = 0xffff }")
	}
	c.beStore("cb", 0, 2, "r")
	if spec.ChecksumOptional {
		c.emit("}")
	}
	c.emit("}")
}

// patchPending applies the checksum patches left pending (pendDU, pendKU)
// by pops and summed sets, at the checksum's offset now: a patch does not
// depend on where the header lies. Pending patches are applied before a
// node that could see the checksum (flushBefore) and when the header itself
// is popped, not after each move, so no patch loads bytes a move has just
// stored.
func (c *gen) patchPending() {
	for _, u := range c.w.Pops.Pending {
		c.emit("if pendK%d {", u)
		c.applyDelta(u, fmt.Sprintf("pendD%d", u))
		c.emit("pendD%d, pendK%d = 0, false", u, u)
		c.emit("}")
	}
}
