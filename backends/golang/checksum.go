package golang

import (
	"fmt"
	"strings"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/packet"
)

// This file generates `set … update` and `pop … update` with the checksum
// arithmetic unrolled: each field change adds its RFC 1624 delta to a sum
// per checksum, with the byte window fixed at generation time wherever the
// layout fixes it, and each checksum is patched once at the end of the
// node. packet.ApplyChecksumDelta documents why that equals the
// interpreter's patch after every change.

// setAccumulating generates a set with updates.
func (c *gen) setAccumulating(o *packet.Op) {
	var us []int
	for _, u := range o.Update {
		if c.s.Headers[u].Checksum >= 0 {
			us = append(us, u)
		}
	}
	delta := map[int]string{}
	for _, u := range us {
		delta[u] = c.newTmp("d")
		c.emit("var %s uint64 // %s checksum", delta[u], c.s.Headers[u].Name)
	}
	for _, a := range o.Assign {
		h := c.s.Headers[a.Dst.Header]
		if h.Metadata {
			c.assign(a, nil, nil)
			continue
		}
		fs := h.Fields[a.Dst.Field]
		wide := fs.Width > 64 || (flow.IsWide(a.Src) && !flow.LowPreserving(a.Src))
		var v string
		if wide {
			v = c.value(a.Src)
		} else {
			v = c.low(a.Src)
		}
		val := c.newTmp("v")
		c.emit("%s := %s", val, v)
		b := c.hdr(a.Dst.Header)
		type win struct{ ok, lo, hi, old string }
		var wins []win
		var wus []int
		for _, u := range us {
			w := win{c.newTmp("w"), c.newTmp("lo"), c.newTmp("hi"), c.newTmp("o")}
			if !c.window(u, a.Dst, w.ok, w.lo, w.hi) {
				continue
			}
			c.emit("var %s uint32", w.old)
			c.emit("if %s { %s = %s }", w.ok, w.old, c.sum(w.lo, w.hi, c.windowLen(u, a.Dst)))
			wins = append(wins, w)
			wus = append(wus, u)
		}
		c.put(b, fs, val, wide)
		for i, w := range wins {
			c.emit("if %s { %s += packet.ChecksumDelta(%s, %s) }", w.ok, delta[wus[i]], w.old, c.sum(w.lo, w.hi, c.windowLen(wus[i], a.Dst)))
		}
	}
	for _, u := range us {
		c.applyDelta(u, delta[u])
	}
}

// window generates the interpreter's window rule (packet.Packet.window) for
// checksum u and field f: ok, and the absolute byte range [lo, hi) as
// variables. It returns false when u's checksum can never cover f.
func (c *gen) window(u int, f packet.FieldRef, ok, lo, hi string) bool {
	spec := c.s.Headers[u]
	fs := c.s.Headers[f.Header].Fields[f.Field]
	// Byte range of the field in its header, widened to 16-bit words of a
	// region starting at the header's start (static parity) ...
	flo, fhi := fs.Offset/8, (fs.Offset+fs.Width+7)/8
	slo, shi := flo/2*2, (fhi+1)/2*2
	static := func(base string) {
		c.emit("%s, %s := %s+%d, %s+%d", lo, hi, base, slo, base, shi)
		c.emit("%s := p.Hdr[%d].Valid && %s <= len(p.Data) && %d <= %d", ok, u, hi, shi-slo, flow.MaxWindow)
	}
	switch {
	case f.Header == u:
		static(fmt.Sprintf("p.Hdr[%d].Off", u))
		return true
	case spec.ChecksumKind == packet.ChecksumHeader:
		return false
	}
	// ... or of a region starting at u (parity known only at run time),
	// or the pseudo-header's, which has the IP header's parity.
	c.emit("%s, %s, %s := false, 0, 0", ok, lo, hi)
	c.emit("if p.Hdr[%d].Valid && p.Hdr[%d].Off > p.Hdr[%d].Off {", u, f.Header, u)
	c.emit("rs := p.Hdr[%d].Off", u)
	c.emit("l, h := p.Hdr[%d].Off+%d, p.Hdr[%d].Off+%d", f.Header, flo, f.Header, fhi)
	c.emit("%s, %s = rs+(l-rs)/2*2, rs+(h-rs+1)/2*2", lo, hi)
	c.emit("%s = %s <= len(p.Data) && %s-%s <= %d", ok, hi, hi, lo, flow.MaxWindow)
	if spec.ChecksumKind == packet.ChecksumL4 && c.s.PseudoHeaderField(f) {
		c.emit("} else if p.Hdr[%d].Valid {", u)
		c.emit("%s, %s = p.Hdr[%d].Off+%d, p.Hdr[%d].Off+%d", lo, hi, f.Header, slo, f.Header, shi)
		c.emit("%s = %s <= len(p.Data) && %s-%s <= %d", ok, hi, hi, lo, flow.MaxWindow)
	}
	c.emit("}")
	return true
}

// windowLen is the length of field f's window in checksum u's region when
// it is fixed by the layout (the field's header is u itself, or an IP
// header whose pseudo-header fields u covers), else 0.
func (c *gen) windowLen(u int, f packet.FieldRef) int {
	fs := c.s.Headers[f.Header].Fields[f.Field]
	flo, fhi := fs.Offset/8, (fs.Offset+fs.Width+7)/8
	if f.Header == u {
		return (fhi+1)/2*2 - flo/2*2
	}
	return 0
}

// sum is the one's-complement sum of p.Data[lo:hi] (not folded), unrolled
// when the window's length n is known.
func (c *gen) sum(lo, hi string, n int) string {
	if n == 0 || n > flow.MaxWindow {
		return fmt.Sprintf("packet.SumWords(p.Data[%s:%s])", lo, hi)
	}
	c.usesBE = true
	var terms []string
	for k := 0; k < n; k += 2 {
		terms = append(terms, fmt.Sprintf("uint32(binary.BigEndian.Uint16(p.Data[%s+%d:]))", lo, k))
	}
	return strings.Join(terms, " + ")
}

// applyDelta patches header u's checksum with the sum in variable d.
func (c *gen) applyDelta(u int, d string) {
	spec := c.s.Headers[u]
	fs := spec.Fields[spec.Checksum]
	b := c.newTmp("cb")
	ok := c.newTmp("ok")
	c.usesBE = true
	c.emit("if %s, %s := p.Bytes(%d); %s {", b, ok, u, ok)
	c.emit("binary.BigEndian.PutUint16(%s[%d:], packet.ApplyChecksumDelta(binary.BigEndian.Uint16(%s[%d:]), %s, %v))", b, fs.Offset/8, b, fs.Offset/8, d, spec.ChecksumOptional)
	c.emit("}")
}

// pop generates `pop H [update …]`.
func (c *gen) pop(o *packet.Op) {
	if len(o.Update) == 0 {
		c.emit("if !p.Pop(%d) { %s }", o.Header, c.malformed())
		return
	}
	hb := c.newTmp("pb")
	ok := c.newTmp("ok")
	c.emit("%s, %s := p.Bytes(%d) // %s", hb, ok, o.Header, c.s.Headers[o.Header].Name)
	c.emit("if !%s { %s }", ok, c.malformed())
	for _, u := range o.Update {
		spec := c.s.Headers[u]
		if spec.ChecksumKind == packet.ChecksumHeader || spec.Checksum < 0 {
			continue
		}
		c.emit("if p.Hdr[%d].Valid && p.Hdr[%d].Off > p.Hdr[%d].Off && len(%s)%%2 == 0 && (p.Hdr[%d].Off-p.Hdr[%d].Off)%%2 == 0 {", u, o.Header, u, hb, o.Header, u)
		c.applyDelta(u, fmt.Sprintf("packet.PopDelta(%s)", hb))
		c.emit("}")
	}
	c.emit("p.Pop(%d)", o.Header)
}

// extract generates `extract H` as a condition; a fixed-size header is
// extracted inline.
func (c *gen) extract(h int) string {
	spec := c.s.Headers[h]
	if spec.Metadata {
		return "true"
	}
	last := spec.Fields[len(spec.Fields)-1]
	n := spec.FixedBytes()
	ok := c.newTmp("x")
	c.emit("%s := p.Hdr[%d].Valid // already there: nothing to do", ok, h)
	c.emit("if !%s {", ok)
	defer c.emit("}")
	if last.Variable() {
		// The length is read with the header provisionally in place, as
		// packet.Packet.Extract does.
		c.emit("if off := p.Cursor; off >= 0 && off+%d <= len(p.Data) {", n)
		c.emit("p.Hdr[%d] = packet.HeaderState{Off: off, Len: %d, Valid: true}", h, n)
		c.hdrs = append(c.hdrs, map[int]string{})
		ext := c.newTmp("ext")
		if flow.IsWide(last.Length) {
			c.emit("%s := %s", ext, c.value(last.Length))
			c.emit("%s = %s.Hi == 0 && %s.Lo <= uint64(len(p.Data)) && off+%d+int(%s.Lo) <= len(p.Data)", ok, ext, ext, n, ext)
			ext += ".Lo"
		} else {
			c.emit("%s := %s", ext, c.u64(last.Length))
			c.emit("%s = %s <= uint64(len(p.Data)) && off+%d+int(%s) <= len(p.Data)", ok, ext, n, ext)
		}
		c.hdrs = c.hdrs[:len(c.hdrs)-1]
		c.emit("if %s { p.Hdr[%d].Len += int(%s); p.Cursor = off + p.Hdr[%d].Len }", ok, h, ext, h)
		c.emit("}")
		c.emit("if !%s { p.Hdr[%d] = packet.HeaderState{} } // %s", ok, h, spec.Name)
		return ok
	}
	c.emit("%s = p.Cursor >= 0 && p.Cursor+%d <= len(p.Data)", ok, n)
	c.emit("if %s { p.Hdr[%d] = packet.HeaderState{Off: p.Cursor, Len: %d, Valid: true}; p.Cursor += %d } else { p.Hdr[%d] = packet.HeaderState{} } // %s", ok, h, n, n, h, spec.Name)
	return ok
}
