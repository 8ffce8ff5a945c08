package p4

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Checksums, as the interpreter computes them (packet/checksumop.go), in
// one's-complement arithmetic written out in P4 (csum_add), as seed 000's
// hand-written v1 pipeline does. Every sum is folded as the interpreter
// folds it: a 16-bit end-around-carry sum is 0 only when every word was 0,
// and otherwise the one value in 1..0xffff congruent to the total, which is
// exactly packet.Sum.
//
//   - set … update U: for each assignment, U's sum gets the complement of
//     every 16-bit word of the window around the field (as the checksum
//     sees it) before the write and every word after it (RFC 1624 eq. 3,
//     word by word: packet.ChecksumDelta). The patches of one node go
//     into one sum per header, written back once: ~(~c + Σ), the same
//     16 bits as patching after every field (packet.ApplyChecksumDelta).
//   - pop H update U: U's sum gets the complements of H's words.
//   - checksum compute H: the pseudo-header and every word of the covered
//     headers, the checksum field left out; only when the covered bytes are
//     provably headers (a constant IP length that ends at the last one).
//   - checksum verify H: over a header's own bytes only.
//
// Which windows a header's checksum covers depends on where its headers
// are, which the layouts at the node say; where they disagree, or a window
// would straddle two headers, the node is refused.

// word is the 16-bit word of wire header h at byte offset k (even), as a P4
// expression over h's fields.
func (c *gen) word(h, k int) (string, error) {
	spec := c.s.Headers[h]
	lo, hi := 8*k, 8*k+16
	var parts []string
	got := 0
	for i, f := range spec.Fields {
		if f.Variable() {
			continue
		}
		a, b := max(lo, f.Offset), min(hi, f.Offset+f.Width)
		if a >= b {
			continue
		}
		ref := c.field(packet.FieldRef{Header: h, Field: i})
		got += b - a
		if a == f.Offset && b == f.Offset+f.Width {
			parts = append(parts, ref)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s[%d:%d]", ref, f.Width-1-(a-f.Offset), f.Width-(b-f.Offset)))
	}
	if got != 16 {
		return "", fmt.Errorf("bytes %d-%d of %s are not all fields of it", k, k+1, spec.Name)
	}
	return strings.Join(parts, " ++ "), nil
}

// words are the words of header h from byte lo to hi, leaving out the
// checksum field if skip.
func (c *gen) words(h, lo, hi int, skip bool) ([]string, error) {
	spec := c.s.Headers[h]
	var out []string
	for k := lo; k < hi; k += 2 {
		if skip && spec.Checksum >= 0 && spec.Fields[spec.Checksum].Offset == 8*k {
			continue
		}
		w, err := c.word(h, k)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// headerLen is a wire header's length in bytes, -1 when it varies.
func (c *gen) headerLen(h int) int {
	spec := c.s.Headers[h]
	if spec.Fields[len(spec.Fields)-1].Variable() {
		return -1
	}
	return spec.FixedBytes()
}

// between is the number of bytes from the start of header a to the start
// of header b in layout l (a before b), -1 when a header between varies.
func (c *gen) between(l layout, a, b int) int {
	n := 0
	for i := slices.Index(l, a); i < len(l) && l[i] != b; i++ {
		hl := c.headerLen(l[i])
		if hl < 0 {
			return -1
		}
		n += hl
	}
	return n
}

// window is the byte range, in field f's own header, of the words a
// checksum patch of f reads.
func (c *gen) window(f packet.FieldRef) (lo, hi int, err error) {
	lo, hi = lower.WordWindow(*c.s.FieldSpec(f))
	if hi > c.s.Headers[f.Header].FixedBytes() {
		return 0, 0, fmt.Errorf("the checksum word of %s reaches past the end of %s", c.s.FieldName(f), c.s.Headers[f.Header].Name)
	}
	return lo, hi, nil
}

// covers says whether header u's checksum covers field f in layout l, as
// packet's window does: a field of u, of a header after u (message and L4
// checksums, at an even distance), or of the IP pseudo-header (L4).
func (c *gen) covers(u int, f packet.FieldRef, l layout) (bool, error) {
	spec := c.s.Headers[u]
	if f.Header == u {
		return f.Field != spec.Checksum, nil
	}
	iu, ix := slices.Index(l, u), slices.Index(l, f.Header)
	if spec.ChecksumKind != packet.ChecksumHeader && ix > iu {
		d := c.between(l, u, f.Header)
		switch {
		case d < 0:
			return false, fmt.Errorf("a variable-length header between %s and %s leaves the word alignment unknown", spec.Name, c.s.Headers[f.Header].Name)
		case d%2 != 0:
			return false, fmt.Errorf("%s starts an odd number of bytes after %s, so its words straddle two headers", c.s.Headers[f.Header].Name, spec.Name)
		}
		return true, nil
	}
	return spec.ChecksumKind == packet.ChecksumL4 && c.s.PseudoHeaderField(f), nil
}

// sumVar names the running sum of header u's checksum in a node's block.
func (c *gen) sumVar(u int) string { return "sum_" + c.hdrName[u] }

// set writes a set node: the assignments, and for `update` the checksum
// patches of every window an assignment changes.
func (b *ctl) set(n *dataflow.Node) error {
	c := b.c
	o := n.Op
	sc := &scope{}
	assign := func(a packet.Assign) {
		b.line("%s = %s;", c.field(a.Dst), bare(c.as(a.Src, c.s.FieldSpec(a.Dst).Width, sc)))
	}
	if len(o.Update) == 0 {
		for _, a := range o.Assign {
			assign(a)
		}
		return nil
	}
	in := c.info[n]
	// Which headers' checksums each assignment patches.
	patches := make([][]int, len(o.Assign))
	guard := map[int]bool{}
	touched := map[int]bool{}
	for i, a := range o.Assign {
		for _, u := range o.Update {
			if c.s.Headers[u].Checksum < 0 {
				return c.refuse(n, "update %s: it has no checksum field", c.s.Headers[u].Name)
			}
			if c.s.Headers[a.Dst.Header].Metadata {
				continue
			}
			for _, x := range o.Update {
				if a.Dst == (packet.FieldRef{Header: x, Field: c.s.Headers[x].Checksum}) {
					return c.refuse(n, "it assigns %s while updating checksums; set it in a node of its own", c.s.FieldName(a.Dst))
				}
			}
			seen, cov := false, false
			for _, l := range in.layouts {
				if !l.has(u) || !l.has(a.Dst.Header) {
					continue
				}
				ok, err := c.covers(u, a.Dst, l)
				if err != nil {
					return c.refuse(n, "updating %s for %s: %v", c.s.Headers[u].Name, c.s.FieldName(a.Dst), err)
				}
				if seen && ok != cov {
					return c.refuse(n, "whether %s's checksum covers %s depends on the frame's headers", c.s.Headers[u].Name, c.s.FieldName(a.Dst))
				}
				seen, cov = true, ok
			}
			if cov {
				patches[i] = append(patches[i], u)
				touched[u] = true
				if !in.always[u] {
					guard[u] = true
				}
			}
		}
	}
	if len(touched) == 0 {
		for _, a := range o.Assign {
			assign(a)
		}
		return nil
	}
	var us []int
	for _, u := range o.Update {
		if touched[u] && !slices.Contains(us, u) {
			us = append(us, u)
		}
	}
	b.line("{")
	b.line("// the sums the checksums stand for, patched field by field")
	for _, u := range us {
		b.sumStart(u, guard[u])
	}
	multi := false
	for i, a := range o.Assign {
		if len(patches[i]) == 0 {
			continue
		}
		lo, hi, err := c.window(a.Dst)
		if err != nil {
			return c.refuse(n, "%v", err)
		}
		if hi-lo > 2 && !multi {
			b.line("bit<16> before;")
			b.line("bit<16> after;")
			multi = true
		}
	}
	for i, a := range o.Assign {
		if len(patches[i]) == 0 {
			assign(a)
			continue
		}
		lo, hi, _ := c.window(a.Dst)
		ws, err := c.words(a.Dst.Header, lo, hi, false)
		if err != nil {
			return c.refuse(n, "%v", err)
		}
		if len(ws) == 1 {
			for _, u := range patches[i] {
				b.line("csum_add(%s, ~%s);", c.sumVar(u), paren(ws[0]))
			}
			assign(a)
			for _, u := range patches[i] {
				b.line("csum_add(%s, %s);", c.sumVar(u), ws[0])
			}
			continue
		}
		b.line("before = 0;") // the old words' complements, each an operand
		for _, w := range ws {
			b.line("csum_add(before, ~%s);", paren(w))
		}
		assign(a)
		b.line("after = 0;")
		for _, w := range ws {
			b.line("csum_add(after, %s);", w)
		}
		for _, u := range patches[i] {
			b.line("csum_add(%s, before);", c.sumVar(u))
			b.line("csum_add(%s, after);", c.sumVar(u))
		}
	}
	for _, u := range us {
		b.writeBack(u, guard[u])
	}
	b.line("}")
	return nil
}

// sumStart declares the running sum of header u's checksum, the
// complement of the field: when u is there, if guard (the write back is
// guarded the same way), else 0.
func (b *ctl) sumStart(u int, guard bool) {
	c := b.c
	f := c.field(packet.FieldRef{Header: u, Field: c.s.Headers[u].Checksum})
	if !guard {
		b.line("bit<16> %s = ~%s;", c.sumVar(u), f)
		return
	}
	b.line("bit<16> %s = 0;", c.sumVar(u))
	b.line("if (%s) {", c.valid(u))
	b.line("%s = ~%s;", c.sumVar(u), f)
	b.line("}")
}

// writeBack stores ~sum into header u's checksum field: not for a zero
// optional checksum (UDP's "none"), and a result of zero as 0xffff there.
func (b *ctl) writeBack(u int, guard bool) {
	c := b.c
	spec := c.s.Headers[u]
	f := c.field(packet.FieldRef{Header: u, Field: spec.Checksum})
	if guard {
		b.line("if (%s) {", c.valid(u))
	}
	if spec.ChecksumOptional {
		b.line("if (%s != 0) {", f)
		b.line("%s = ~%s;", f, c.sumVar(u))
		b.line("if (%s == 0) {", f)
		b.line("%s = 0xffff;", f)
		b.line("}")
		b.line("}")
	} else {
		b.line("%s = ~%s;", f, c.sumVar(u))
	}
	if guard {
		b.line("}")
	}
}

// pop writes a pop node: the popped bytes out of the checksums it updates,
// then the header made invalid.
func (b *ctl) pop(n *dataflow.Node) error {
	c := b.c
	o := n.Op
	h := o.Header
	in := c.info[n]
	var us []int
	guard := map[int]bool{}
	for _, u := range o.Update {
		spec := c.s.Headers[u]
		if spec.Checksum < 0 {
			return c.refuse(n, "update %s: it has no checksum field", spec.Name)
		}
		seen, do := false, false
		for _, l := range in.layouts {
			if !l.has(u) || !l.has(h) {
				continue
			}
			// packet's popUpdating: u before h, not a header checksum, an
			// even length at an even distance.
			ok := spec.ChecksumKind != packet.ChecksumHeader && slices.Index(l, h) > slices.Index(l, u)
			if ok {
				hl, d := c.headerLen(h), c.between(l, u, h)
				if hl < 0 || d < 0 {
					return c.refuse(n, "pop %s update %s: a variable-length header leaves the bytes removed unknown", c.s.Headers[h].Name, spec.Name)
				}
				ok = hl%2 == 0 && d%2 == 0
			}
			if seen && ok != do {
				return c.refuse(n, "whether popping %s patches %s's checksum depends on the frame's headers", c.s.Headers[h].Name, spec.Name)
			}
			seen, do = true, ok
		}
		if do && !slices.Contains(us, u) {
			us = append(us, u)
			guard[u] = !in.always[u]
		}
	}
	if len(us) > 0 {
		b.line("{")
		b.line("// %s's bytes out of the checksum, 64 bytes at a time", c.s.Headers[h].Name)
		hl := c.headerLen(h)
		for _, u := range us {
			b.sumStart(u, guard[u])
		}
		b.line("bit<16> popped;")
		for off := 0; off < hl; off += 64 {
			ws, err := c.words(h, off, min(off+64, hl), false)
			if err != nil {
				return c.refuse(n, "%v", err)
			}
			b.line("popped = 0;") // the words' complements, each an operand
			for _, w := range ws {
				b.line("csum_add(popped, ~%s);", paren(w))
			}
			for _, u := range us {
				b.line("csum_add(%s, popped);", c.sumVar(u))
			}
		}
		for _, u := range us {
			b.writeBack(u, guard[u])
		}
		b.line("}")
	}
	b.line("hdr.%s.setInvalid();", c.hdrName[h])
	if v, ok := c.varName[h]; ok {
		b.line("hdr.%s.setInvalid();", v)
	}
	b.invalidated[h] = true
	return nil
}

// covered works out the bytes checksum compute or verify of h sums at node
// n: the IP header for the pseudo-header (nil for none), the covered
// length, and per layout the headers from h on. The IP header is the
// region's (lower.IPHeaders: the first in front of h, IPv4 before IPv6);
// P4 has no offsets to compare at run time, so it is taken per layout,
// and every layout must agree on it and the length, and the covered
// bytes must be exactly headers.
func (c *gen) covered(n *dataflow.Node, h int) (ip *lower.IPHeader, length int, hs [][]int, err error) {
	spec := c.s.Headers[h]
	in := c.info[n]
	ips := lower.IPHeaders(c.s)
	length = -1
	first := true
	for _, l := range in.layouts {
		if !l.has(h) {
			continue
		}
		if spec.ChecksumKind == packet.ChecksumHeader {
			if c.headerLen(h) < 0 {
				return nil, 0, nil, c.refuse(n, "the checksum of %s covers its variable-length field, whose bytes a P4 program cannot read", spec.Name)
			}
			return nil, c.headerLen(h), [][]int{{h}}, nil
		}
		i := slices.Index(l, h)
		rest := l[i:]
		var x *lower.IPHeader
		for j := range ips {
			if k := slices.Index(l, ips[j].H); k >= 0 && k < i {
				x = &ips[j]
				break
			}
		}
		if x == nil {
			return nil, 0, nil, c.refuse(n, "the checksum of %s covers everything after it to the end of the frame: that needs payload access", spec.Name)
		}
		xs := c.s.Headers[x.H]
		k, ok := in.consts[packet.FieldRef{Header: x.H, Field: x.Length}]
		if !ok {
			return nil, 0, nil, c.refuse(n, "the checksum of %s covers bytes up to the end of the IP payload, and %s.%s is not a constant here, so they may reach into the payload (no payload access)", spec.Name, xs.Name, xs.Fields[x.Length].Name)
		}
		// The IP payload ends at ipv4's start + total_len, ipv6's end +
		// payload_len; where h starts, relative to that origin.
		start := c.between(l, x.H, h)
		if x.V6 {
			start -= c.headerLen(x.H)
		}
		if start < 0 || c.between(l, x.H, h) < 0 {
			return nil, 0, nil, c.refuse(n, "a variable-length header before %s leaves the covered bytes unknown", spec.Name)
		}
		total := 0
		for j, r := range rest {
			hl := c.headerLen(r)
			if hl < 0 {
				return nil, 0, nil, c.refuse(n, "the checksum of %s covers %s, whose variable-length bytes a P4 program cannot read", spec.Name, c.s.Headers[r].Name)
			}
			if hl%2 != 0 && j < len(rest)-1 {
				return nil, 0, nil, c.refuse(n, "%s is an odd number of bytes long, so the words after it straddle two headers", c.s.Headers[r].Name)
			}
			total += hl
		}
		cov := int(k.Lo) - start
		if k.Hi != 0 || cov != total {
			return nil, 0, nil, c.refuse(n, "the checksum of %s covers %d bytes here, the headers from %s on are %d: that would need payload access", spec.Name, cov, spec.Name, total)
		}
		if !first && (ip.H != x.H || length != cov) {
			return nil, 0, nil, c.refuse(n, "the bytes the checksum of %s covers depend on the frame's headers", spec.Name)
		}
		ip, length, first = x, cov, false
		hs = append(hs, slices.Clone(rest))
	}
	if spec.ChecksumKind != packet.ChecksumL4 {
		ip = nil
	}
	return ip, length, hs, nil
}

// sumCovered writes into sum the pseudo-header and the covered headers'
// words, the checksum field of h left out.
func (b *ctl) sumCovered(n *dataflow.Node, h int, sum string, skip bool) error {
	c := b.c
	ip, length, hs, err := c.covered(n, h)
	if err != nil {
		return err
	}
	if ip != nil {
		x := c.s.Headers[ip.H]
		ref := func(f int) packet.FieldRef { return packet.FieldRef{Header: ip.H, Field: f} }
		b.line("// pseudo-header: %s addresses, protocol, length %d", x.Name, length)
		// The addresses' words as P4 reads fields: bits of the header
		// (lower's IPHeader.Words are byte offsets, for targets reading
		// bytes).
		for _, f := range []int{ip.Src, ip.Dst} {
			lo, hi, err := c.window(ref(f))
			if err != nil {
				return c.refuse(n, "%v", err)
			}
			ws, err := c.words(ip.H, lo, hi, false)
			if err != nil {
				return c.refuse(n, "%v", err)
			}
			for _, w := range ws {
				b.line("csum_add(%s, %s);", sum, w)
			}
		}
		b.line("csum_add(%s, %s);", sum, cast(c.field(ref(ip.Proto)), c.s.FieldSpec(ref(ip.Proto)).Width, 16))
		if ip.V6 && length>>16 != 0 {
			b.line("csum_add(%s, 16w%d);", sum, length>>16)
		}
		b.line("csum_add(%s, 16w%d);", sum, length&0xffff)
	}
	// The headers from h on; those not in every layout only when valid.
	var all []int
	in := map[int]int{}
	for _, l := range hs {
		for _, x := range l {
			if !slices.Contains(all, x) {
				all = append(all, x)
			}
			in[x]++
		}
	}
	for _, x := range all {
		ws, err := c.words(x, 0, c.headerLen(x), skip && x == h)
		if err != nil {
			return c.refuse(n, "%v", err)
		}
		if in[x] < len(hs) {
			b.line("if (%s) {", c.valid(x))
		}
		b.line("// %s", c.s.Headers[x].Name)
		for _, w := range ws {
			b.line("csum_add(%s, %s);", sum, w)
		}
		if in[x] < len(hs) {
			b.line("}")
		}
	}
	return nil
}

// compute writes checksum compute H.
func (b *ctl) compute(n *dataflow.Node) error {
	c := b.c
	h := n.Op.Header
	spec := c.s.Headers[h]
	if spec.Checksum < 0 {
		return c.refuse(n, "%s has no checksum field", spec.Name)
	}
	f := c.field(packet.FieldRef{Header: h, Field: spec.Checksum})
	b.line("{")
	b.line("bit<16> sum = 0;")
	if err := b.sumCovered(n, h, "sum", true); err != nil {
		return err
	}
	b.line("%s = ~sum;", f)
	if spec.ChecksumOptional {
		b.line("if (%s == 0) {", f)
		b.line("%s = 0xffff;", f)
		b.line("}")
	}
	b.line("}")
	return nil
}

// verify writes the sum checksum verify H tests and returns the condition.
func (b *ctl) verify(n *dataflow.Node) (string, error) {
	c := b.c
	h := n.Op.Header
	spec := c.s.Headers[h]
	if spec.ChecksumKind != packet.ChecksumHeader {
		return "", c.refuse(n, "verifying the checksum of %s reads the payload it covers: no payload access", spec.Name)
	}
	if spec.ChecksumOptional {
		return "", c.refuse(n, "an optional header checksum has no P4 translation here")
	}
	sum := c.ctlNames.take("sum_" + c.nodeName[n])
	b.line("bit<16> %s = 0;", sum)
	maybe := !c.info[n].always[h]
	if maybe { // a missing header's checksum is wrong: only the test reads its validity
		b.line("if (%s) {", c.valid(h))
	}
	if err := b.sumCovered(n, h, sum, false); err != nil {
		return "", err
	}
	if maybe {
		b.line("}")
	}
	return fmt.Sprintf("%s && %s == 0xffff", c.valid(h), sum), nil
}
