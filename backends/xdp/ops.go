package xdp

import (
	"fmt"
	"strings"

	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/packet"
)

// This file generates the operations that move bytes or keep checksums:
// extract and an unrolled parse (lower.Parse), set … update (lowered by lower.LowerSet, the
// arithmetic packet.ApplyChecksumDelta's), push and pop (lower.LowerPop;
// bpf_xdp_adjust_head, the bytes in front moved by a bounded copy),
// checksum verify and compute (a bounded loop over the covered bytes).

// extract generates `extract H` as a condition; the header's state is set
// as packet.Packet.Extract does.
func (c *gen) extract(x *lower.Extract) string {
	if x.Meta {
		return "1"
	}
	ok := c.newTmp("x")
	c.emit("int %s = %s; /* already there: nothing to do */", ok, c.present(x.H, x.Known))
	c.emit("if (!%s) {", ok)
	c.extractAt(x, ok)
	c.emit("}")
	return ok
}

// extractAt extracts header x.H at the cursor into variable ok (true when
// it fits), advancing the cursor; the header is left invalid when it does
// not fit.
func (c *gen) extractAt(x *lower.Extract, ok string) {
	h, n := x.H, x.Fixed
	name := c.s.Headers[h].Name
	cur := c.newTmp("cur")
	c.emit("__u32 %s = st->cursor;", cur)
	c.hpUsed[h] = true
	setPtr := func() {
		c.emit("hp%d = (unsigned char *)data + (%s & NSC_OM);", h, cur)
		c.emit("NSC_HIDE(hp%d);", h)
		c.emit("if ((void *)(hp%d + %d) > data_end) %s /* within NSC_LEN: checked */", h, n, c.beyondHead())
	}
	if x.Length == nil {
		c.emit("%s = %s + %d <= NSC_LEN;", ok, cur, n)
		c.emit("if (%s) {", ok)
		c.emit("st->off[%d] = %s; st->len[%d] = %d; NSC_SETV(%d); st->cursor = %s + %d;", h, cur, h, n, h, cur, n)
		setPtr()
		c.emit("} else NSC_CLRV(%d); /* %s */", h, name)
		return
	}
	c.emit("%s = 0;", ok)
	c.emit("if (%s + %d <= NSC_LEN) {", cur, n)
	c.emit("st->off[%d] = %s; st->len[%d] = %d; NSC_SETV(%d);", h, cur, h, n, h)
	c.PushScope()
	ext := c.newTmp("ext")
	if x.Wide {
		v := c.newTmp("xv")
		c.emit("nsc_v128 %s = %s;", v, c.Value(x.Length))
		c.emit("__u64 %s = %s.lo;", ext, v)
		c.emit("%s = %s.hi == 0 && %s <= NSC_LEN && %s + %d + %s <= NSC_LEN;", ok, v, ext, cur, n, ext)
	} else {
		c.emit("__u64 %s = %s;", ext, c.U64(x.Length))
		c.emit("%s = %s <= NSC_LEN && %s + %d + %s <= NSC_LEN;", ok, ext, cur, n, ext)
	}
	c.PopScope()
	c.emit("if (%s) {", ok)
	c.emit("st->len[%d] = %d + %s; st->cursor = %s + %d + %s;", h, n, ext, cur, n, ext)
	setPtr()
	c.emit("}")
	c.emit("}")
	c.emit("if (!%s) NSC_CLRV(%d); /* %s */", ok, h, name)
}

// An unrolled parse (lower.ParseSyntax): a block per header, a goto to
// the parse's end where it ends.

// ParseBegin forgets the wire headers; the parses of a program unroll
// into at most lower.MaxParseSites extractions together.
func (c *gen) ParseBegin(pg *lower.ParseGraph) (string, bool) {
	if c.parseSites += pg.Sites; c.parseSites > lower.MaxParseSites {
		c.fail("the parse graph from here unrolls into more than %d extractions (limit parse graph size)", lower.MaxParseSites)
		return "0", false
	}
	c.parsed, c.parseDone = c.newTmp("parsed"), c.newTmp("parse_done_")
	c.emit("int %s = 0;", c.parsed)
	c.emit("{")
	for w := 0; w < c.validWords; w++ {
		c.emit("st->valid[%d] = 0;", w)
	}
	c.emit("st->cursor = 0;")
	return c.parsed, true
}

func (c *gen) ParseHeader(x *lower.Extract) {
	c.emit("{")
	if x.Meta {
		return
	}
	ok := c.newTmp("x")
	c.emit("int %s;", ok)
	c.extractAt(x, ok)
	c.emit("if (!%s) { %s = 0; goto %s; }", ok, c.parsed, c.parseDone)
}

func (c *gen) ParseNext(h int, e *packet.ParseEdge, _ []int) {
	c.PushScope()
	f := packet.FieldRef{Header: h, Field: e.Field}
	if c.s.Headers[h].Fields[e.Field].Width > 64 || e.Mask.Hi != 0 {
		c.emit("if (nsc_veq(nsc_vand(%s, %s), %s)) {", c.readField(f, true), vlit(e.Mask), vlit(e.Value.And(e.Mask)))
	} else {
		c.emit("if (((%s & %s) == %s)) {", c.readField(f, false), ulit(e.Mask.Lo), ulit(e.Value.Lo&e.Mask.Lo))
	}
}

func (c *gen) EndParseNext() {
	c.emit("}")
	c.PopScope()
}

func (c *gen) ParseDone()         { c.emit("%s = 1; goto %s;", c.parsed, c.parseDone) }
func (c *gen) EndParseHeader(int) { c.emit("}") }

// ParseEnd: every header pointer and fact of this node is stale now.
func (c *gen) ParseEnd(*lower.ParseGraph) {
	c.emit("}")
	c.emit("%s:;", c.parseDone)
	c.forget()
}

// A window is the 16-bit aligned byte range around a field that a
// checksum's incremental update sums before and after the write
// (lower.Window). Relative to the field's header its place is fixed by
// the layout, except for a field behind the checksummed header, where it
// depends on the parity of their distance: variant 1 or 2, chosen at run
// time.
type window struct {
	u        int
	fh       int
	ok, old  string // C: the window exists and lies in the frame; its old words' complements, summed
	kind     string // C: the variant (1 or 2); "" when only variant 1 can apply
	lo, hi   [3]int // per variant, relative to the field's header
	possible [3]bool
}

// A set's parts (lower.SetSyntax): the windows' old sums before the
// write, their new sums after it.

func (c *gen) Delta(u int) string {
	d := c.newTmp("d")
	c.emit("__u64 %s = 0; /* %s checksum */", d, c.s.Headers[u].Name)
	return d
}

func (c *gen) Eval(a *lower.SetAssign) string {
	val := c.newTmp("v")
	if a.Wide {
		c.emit("nsc_v128 %s = %s;", val, c.Value(a.Src))
	} else {
		c.emit("__u64 %s = %s;", val, c.low(a.Src))
	}
	return val
}

func (c *gen) Old(a *lower.SetAssign) {
	b := c.hdr(a.Dst.Header)
	c.wins = c.wins[:0]
	for _, lw := range a.Windows {
		c.wins = append(c.wins, c.window(lw, a.Dst, b))
	}
}

func (c *gen) Store(a *lower.SetAssign, v string) { c.put(c.hdr(a.Dst.Header), a.Field, v, a.Wide) }

func (c *gen) Accumulate(a *lower.SetAssign, v string, delta map[int]string) {
	b := c.hdr(a.Dst.Header)
	for _, w := range c.wins {
		nw := c.winNew(b, w, a.Field, v, a.Wide)
		c.emit("if (%s) %s += (__u64)%s + %s;", w.ok, delta[w.u], w.old, nw)
	}
}

func (c *gen) Apply(u int, d string) { c.applyDelta(u, d) }

// Assign prints an assignment of a set whose patches are not summed:
// packet.Packet.SetUpdating where it updates checksums (the windows' old
// sums, the field set, each checksum patched in turn).
func (c *gen) Assign(a *lower.SetAssign, update []int) {
	if len(update) == 0 || a.Meta {
		c.assign(a.Assign)
		return
	}
	v := c.Eval(a)
	c.Old(a)
	c.Store(a, v)
	b := c.hdr(a.Dst.Header)
	for _, w := range c.wins {
		nw := c.winNew(b, w, a.Field, v, a.Wide)
		d := c.newTmp("d")
		c.emit("if (%s) {", w.ok)
		c.emit("__u64 %s = (__u64)%s + %s;", d, w.old, nw)
		c.applyDelta(w.u, d)
		c.emit("}")
	}
}

// window generates the old sum of window lw around field f (whose header
// is at pointer b).
func (c *gen) window(lw lower.Window, f packet.FieldRef, b string) window {
	u := lw.U
	w := window{u: u, fh: f.Header, lo: [3]int{0, lw.Lo, lw.OddLo}, hi: [3]int{0, lw.Hi, lw.OddHi}, possible: [3]bool{false, lw.Fits, lw.OddFits}}
	w.ok, w.old = c.newTmp("w"), c.newTmp("old")
	c.emit("int %s = 0; __u32 %s = 0;", w.ok, w.old)
	if f.Header == u {
		c.winOld(b, w, 1)
		return w
	}
	w.kind = c.newTmp("k")
	c.emit("int %s = 0;", w.kind)
	if lw.Kind == lower.WindowDynamic {
		c.emit("if (%s && st->off[%d] > st->off[%d]) %s = ((st->off[%d] - st->off[%d]) & 1) ? 2 : 1;", c.valid(u), f.Header, u, w.kind, f.Header, u)
		if lw.Pseudo {
			c.emit("else if (%s) %s = 1;", c.valid(u), w.kind)
		}
	} else {
		// The field's header cannot lie behind u (flow/valid.go): only the
		// pseudo-header's window applies.
		c.emit("if (%s) %s = 1;", c.valid(u), w.kind)
	}
	for v := 1; v <= 2; v++ {
		if !w.possible[v] {
			continue
		}
		c.emit("if (%s == %d) {", w.kind, v)
		c.winOld(b, w, v)
		c.emit("}")
	}
	return w
}

// winOld sums the complements of variant v of window w's words into w.old
// (packet.ChecksumDelta's old part) and sets w.ok when it lies in the frame.
func (c *gen) winOld(b string, w window, v int) {
	lo, hi := w.lo[v], w.hi[v]
	if lo >= 0 && hi <= c.s.Headers[w.fh].FixedBytes() {
		c.emit("%s = 1; %s = %d - (%s);", w.ok, w.old, (hi-lo)/2*0xffff, sumAt(b, lo, hi))
		return
	}
	p := c.winPtr(w.fh, lo)
	c.emit("if ((void *)(%s + %d) <= data_end) { %s = 1; %s = %d - (%s); }", p, hi-lo, w.ok, w.old, (hi-lo)/2*0xffff, sumAt(p, 0, hi-lo))
}

// winNew emits the sum of window w after the write into a new variable,
// and returns it (valid where w.ok).
func (c *gen) winNew(b string, w window, fs packet.FieldSpec, val string, wide bool) string {
	s := c.newTmp("new")
	c.emit("__u32 %s = 0;", s)
	for v := 1; v <= 2; v++ {
		if !w.possible[v] || (v == 2 && w.kind == "") {
			continue
		}
		if w.kind != "" {
			c.emit("if (%s == %d) {", w.kind, v)
		}
		lo, hi := w.lo[v], w.hi[v]
		if !wide && fs.Offset%16 == 0 && fs.Width%16 == 0 && fs.Width <= 64 && lo == fs.Offset/8 && hi == (fs.Offset+fs.Width)/8 {
			// The window is the field: its words are the value's, as
			// just stored.
			var terms []string
			for k := fs.Width - 16; k >= 0; k -= 16 {
				terms = append(terms, fmt.Sprintf("(__u32)((%s >> %d) & 0xffff)", val, k))
			}
			c.emit("%s = %s;", s, strings.Join(terms, " + "))
		} else if lo >= 0 && hi <= c.s.Headers[w.fh].FixedBytes() {
			c.emit("%s = %s;", s, sumAt(b, lo, hi))
		} else {
			p := c.winPtr(w.fh, lo)
			c.emit("if ((void *)(%s + %d) <= data_end) %s = %s;", p, hi-lo, s, sumAt(p, 0, hi-lo))
		}
		if w.kind != "" {
			c.emit("}")
		}
	}
	return s
}

// winPtr emits a pointer to byte lo of header h (lo may be -1).
func (c *gen) winPtr(h, lo int) string {
	p := c.newTmp("wp")
	if lo < 0 {
		c.emit("unsigned char *%s = (unsigned char *)data + (((__u32)st->off[%d] - %d) & NSC_OM);", p, h, -lo)
	} else {
		c.emit("unsigned char *%s = (unsigned char *)data + (((__u32)st->off[%d] + %d) & NSC_OM);", p, h, lo)
	}
	c.emit("NSC_HIDE(%s);", p)
	return p
}

// sumAt is the sum of the 16-bit words of bytes [lo, hi) at pointer p.
func sumAt(p string, lo, hi int) string {
	var terms []string
	for k := lo; k+1 < hi; k += 2 {
		terms = append(terms, fmt.Sprintf("bpf_ntohs(*(__u16 *)(%s + %d))", p, k))
	}
	if len(terms) == 0 {
		return "0"
	}
	return "(__u32)" + strings.Join(terms, " + (__u32)")
}

// applyDelta patches header u's checksum with the sum in variable d (not
// malformed when u's bytes are gone: packet.Packet.patch skips them).
func (c *gen) applyDelta(u int, d string) {
	spec := c.s.Headers[u]
	fs := spec.Fields[spec.Checksum]
	p := c.newTmp("cb")
	o := c.newTmp("co")
	opt := 0
	if spec.ChecksumOptional {
		opt = 1
	}
	if b, ok := c.cachedHdr(u); ok {
		c.emit("*(__u16 *)(%s + %d) = bpf_htons(nsc_apply(bpf_ntohs(*(__u16 *)(%s + %d)), %s, %d));", b, fs.Offset/8, b, fs.Offset/8, d, opt)
		return
	}
	c.emit("if (%s && (__u32)st->off[%d] + st->len[%d] <= NSC_LEN) {", c.valid(u), u, u)
	c.emit("__u32 %s = st->off[%d] & NSC_OM;", o, u)
	c.emit("unsigned char *%s = (unsigned char *)data + %s + %d;", p, o, fs.Offset/8)
	c.emit("NSC_HIDE(%s);", p)
	c.emit("if ((void *)(%s + 2) <= data_end) {", p)
	c.emit("*(__u16 *)%s = bpf_htons(nsc_apply(bpf_ntohs(*(__u16 *)%s), %s, %d));", p, p, d, opt)
	c.emit("}")
	c.emit("}")
}

// A pop (lower.PopSyntax): the bytes in front of H move forward over it
// and the frame's head follows (the result is packet.Packet.Pop's
// whichever side it moves).

func (c *gen) PopMeta(*lower.Pop) { c.emit("%s /* pop of metadata */", c.malformed()) }

func (c *gen) PopStart(p *lower.Pop) {
	h := p.H
	c.usesMove = true
	c.popShort = c.dropStmt(c.node.ID, c.mal, TooShort)
	if p.Receives {
		// A pop just before left its bytes in place (pend_off, pend_n):
		// unless this header ends where that one began, move them now.
		c.emit("if (pend_n && !(%s && (__u32)st->off[%d] + st->len[%d] == pend_off)) {", c.valid(h), h, h)
		c.move("pend_off", "pend_n", c.popShort)
		c.emit("pend_n = 0;")
		c.patchPending()
		c.emit("}")
		if p.OwnPending {
			// This header's checksum may wait for a patch: its bytes are
			// summed below.
			c.patchPending()
		}
	}
}

func (c *gen) PopRange(p *lower.Pop) (off, n string) {
	h := p.H
	off, n = c.newTmp("po"), c.newTmp("pn")
	c.popHdr = ""
	if p.Fixed >= 0 {
		c.popHdr = c.hdr(h) // valid and inside the frame, else malformed
		c.emit("__u32 %s = st->off[%d], %s = %d;", off, h, n, p.Fixed)
		return off, n
	}
	c.emit("if (!%s) %s /* %s */", c.valid(h), c.malformed(), c.s.Headers[h].Name)
	c.emit("__u32 %s = st->off[%d], %s = st->len[%d];", off, h, n, h)
	c.emit("if (%s + %s > NSC_LEN) %s", off, n, c.malformed())
	return off, n
}

func (c *gen) TakeOut(p *lower.Pop, pu lower.PopUpdate, off, n string) {
	u := pu.U
	d := c.newTmp("d")
	c.emit("if (%s && %s > st->off[%d] && %s %% 2 == 0 && (%s - st->off[%d]) %% 2 == 0) {", c.valid(u), off, u, n, off, u)
	if c.popHdr != "" && p.Fixed <= 64 {
		c.emit("__u64 %s = %d - (__u64)(%s);", d, p.Fixed/2*0xffff, sumAt(c.popHdr, 0, p.Fixed))
	} else {
		c.usesPopSum = true
		c.emit("__u64 %s = nsc_popdelta(ctx, %s, %s);", d, off, n)
	}
	if pu.Pending {
		// Patched after the move (see patchPending).
		c.emit("if (%s && (__u32)st->off[%d] + st->len[%d] <= NSC_LEN) { pend_d%d += %s; pend_k%d = 1; }", c.valid(u), u, u, u, d, u)
	} else {
		c.applyDelta(u, d)
	}
	c.emit("}")
}

// Hold: the next node pops too; the bytes stay, it moves both at once.
func (c *gen) Hold(p *lower.Pop, off, n string) {
	c.popRoom(p, n)
	c.emit("pend_off = %s;", off)
	c.emit("pend_n %s %s;", p.HoldOp(), n)
}

func (c *gen) MoveHeld(p *lower.Pop, off, n string) {
	c.popRoom(p, n)
	c.emit("pend_n += %s;", n)
	c.move(off, "pend_n", c.popShort)
	c.emit("pend_n = 0;")
	c.patchPending()
}

func (c *gen) Move(p *lower.Pop, off, n string) {
	c.popRoom(p, n)
	c.move(off, n, c.popShort)
	c.patchPending()
}

// popRoom ends a frame that would be shorter than an Ethernet header
// once the bytes held and these are gone.
func (c *gen) popRoom(p *lower.Pop, n string) {
	held := "0"
	if p.Receives {
		held = "pend_n"
	}
	c.emit("if (NSC_LEN - %s - %s < 14) %s", held, n, c.popShort)
}

// PopOffsets updates the header states as packet.Packet.Pop does.
func (c *gen) Forget(p *lower.Pop) {
	c.forget()
	c.emit("NSC_CLRV(%d);", p.H)
}

func (c *gen) PopOffsets(p *lower.Pop, off, n string) {
	c.forget()
	c.emit("NSC_CLRV(%d);", p.H)
	for _, i := range p.Behind {
		c.emit("if (%s && st->off[%d] > %s) st->off[%d] -= %s;", c.valid(i), i, off, i, n)
	}
	c.emit("if (st->cursor > %s) st->cursor = st->cursor - %s > %s ? st->cursor - %s : %s;", off, off, n, n, off)
}

// patchPending applies the checksum patches pops have left for after the
// move (pend_dU, pend_kU): the checksummed headers lie in front of the
// popped ones, at the same offsets before and after. The patches of a chain
// of pops are summed, which for a checksum that is not optional is the
// same as applying them in turn (packet.ApplyChecksumDelta: ~fold(fold(a)
// + b) is ~fold(a + b)); patching after the move leaves the move no bytes
// just stored to load.
func (c *gen) patchPending() {
	for _, u := range c.w.Pops.Pending {
		fs := c.s.Headers[u].Fields[c.s.Headers[u].Checksum]
		p := c.newTmp("cb")
		c.emit("if (pend_k%d) {", u)
		c.emit("unsigned char *%s = (unsigned char *)data + (st->off[%d] & NSC_OM) + %d;", p, u, fs.Offset/8)
		c.emit("NSC_HIDE(%s);", p)
		c.emit("if ((void *)(%s + 2) <= data_end) *(__u16 *)%s = bpf_htons(nsc_apply(bpf_ntohs(*(__u16 *)%s), pend_d%d, 0));", p, p, p, u)
		c.emit("pend_d%d = 0; pend_k%d = 0;", u, u)
		c.emit("}")
	}
}

// move generates the move of the frame's bytes [0, off) forward by n and
// the head's after them.
func (c *gen) move(off, n, short string) {
	c.emit("if (%s <= 64) {", off)
	c.emit("if (nsc_fwd64(data, data_end, %s, %s) || bpf_xdp_adjust_head(ctx, (int)%s)) return XDP_ABORTED;", off, n, n)
	c.emit("} else if (nsc_pop_move(ctx, %s, %s)) %s", off, n, short)
	c.emit("data = (void *)(long)ctx->data; data_end = (void *)(long)ctx->data_end; flen -= %s;", n)
}

// Push generates `push H [after G]`: the frame's head moves back and the
// bytes in front of the insertion point with it, the header zeroed.
func (c *gen) Push(p *lower.Push) {
	h := p.H
	c.usesMove = true
	off := c.newTmp("pu")
	if p.After >= 0 {
		c.DropUnless(c.valid(p.After))
		c.emit("__u32 %s = (__u32)st->off[%d] + st->len[%d];", off, p.After, p.After)
	} else {
		c.emit("__u32 %s = 0;", off)
	}
	n := p.N
	c.emit("if (%s || %s > NSC_LEN) %s", c.valid(h), off, c.malformed())
	c.emit("if (%s < 64) { /* the zeroing below masks with 63 */", off)
	c.emit("if (bpf_xdp_adjust_head(ctx, -%d)) %s", n, c.malformed())
	c.emit("data = (void *)(long)ctx->data; data_end = (void *)(long)ctx->data_end;")
	c.emit("if (nsc_back64(data, data_end, %s, %d)) return XDP_ABORTED;", off, n)
	z := c.newTmp("z")
	c.emit("unsigned char *%s = (unsigned char *)data + (%s & 63);", z, off)
	c.emit("NSC_HIDE(%s);", z)
	c.emit("if ((void *)(%s + %d) > data_end) return XDP_ABORTED;", z, n)
	c.emit("__builtin_memset(%s, 0, %d);", z, n)
	c.emit("} else if (nsc_push_move(ctx, %s, %d)) %s", off, n, c.malformed())
	c.emit("data = (void *)(long)ctx->data; data_end = (void *)(long)ctx->data_end; flen += %d;", n)
	c.forget()
	for _, i := range p.Moved {
		c.emit("if (%s && st->off[%d] >= %s) st->off[%d] += %d;", c.valid(i), i, off, i, n)
	}
	c.emit("if (st->cursor >= %s) st->cursor += %d;", off, n)
	c.emit("st->off[%d] = %s; st->len[%d] = %d; NSC_SETV(%d);", h, off, h, n, h)
}

// region generates packet.Packet.region as lowered (lower.Checksum): ok,
// the covered bytes [start, end) and the pseudo-header's sum.
func (c *gen) region(x *lower.Checksum, ok, start, end, pseudo string) {
	h := x.H
	c.emit("int %s = 0; __u32 %s = 0, %s = 0; __u64 %s = 0;", ok, start, end, pseudo)
	c.emit("if (%s) {", c.valid(h))
	c.emit("%s = st->off[%d];", start, h)
	if x.Own {
		c.emit("%s = %s + st->len[%d];", end, start, h)
		c.emit("%s = %s <= NSC_LEN;", ok, end)
		c.emit("}")
		return
	}
	c.emit("__u32 proto = 0, e = NSC_LEN; int ip = 0;")
	for _, ip := range x.IPs {
		c.emit("if (%s && st->off[%d] < %s) {", c.valid(ip.H), ip.H, start)
		c.emit("ip = %d; __u32 ho = st->off[%d] & NSC_OM; __u32 l = 0;", ipVersion(ip), ip.H)
		c.emit("if (ho + st->len[%d] <= NSC_LEN) {", ip.H)
		c.ipBytes(ip)
		c.emit("l = %s; proto = %s;", getField(c.s, "ib", ip.H, ip.Length), getField(c.s, "ib", ip.H, ip.Proto))
		c.emit("}")
		if ip.V6 {
			c.emit("e = ho + st->len[%d] + l;", ip.H)
		} else {
			c.emit("e = ho + l;")
		}
		c.emit("} else")
	}
	c.emit("{}")
	c.emit("%s = e;", end)
	c.emit("%s = %s <= NSC_LEN && %s >= %s + st->len[%d];", ok, end, end, start, h)
	if x.Pseudo {
		c.emit("if (%s && ip) {", ok)
		c.emit("__u32 cov = %s - %s;", end, start)
		for _, ip := range x.IPs {
			if ip.Unaligned >= 0 {
				c.fail("%s.%s is not byte-aligned: the pseudo-header cannot use it", c.s.Headers[ip.H].Name, c.s.Headers[ip.H].Fields[ip.Unaligned].Name)
				return
			}
			c.emit("if (ip == %d) {", ipVersion(ip))
			c.emit("__u32 ho = st->off[%d] & NSC_OM;", ip.H)
			c.emit("if (ho + st->len[%d] > NSC_LEN) %s = 0;", ip.H, ok)
			c.emit("unsigned char *ib = (unsigned char *)data + ho; NSC_HIDE(ib);")
			c.emit("if (%s && (void *)(ib + %d) <= data_end) {", ok, c.s.Headers[ip.H].FixedBytes())
			var terms []string
			for i, k := range ip.Words {
				if ip.Lone[i] {
					terms = append(terms, fmt.Sprintf("((__u64)ib[%d] << 8)", k))
				} else {
					terms = append(terms, fmt.Sprintf("((__u64)ib[%d] << 8 | ib[%d])", k, k+1))
				}
			}
			terms = append(terms, "proto")
			if ip.V6 {
				terms = append(terms, "(cov >> 16)")
			}
			terms = append(terms, "(cov & 0xffff)")
			c.emit("%s = %s;", pseudo, strings.Join(terms, " + "))
			c.emit("} else %s = 0;", ok)
			c.emit("}")
		}
		c.emit("}")
	}
	c.emit("}")
}

// ipVersion is IP header ip's version.
func ipVersion(ip lower.IPHeader) int {
	if ip.V6 {
		return 6
	}
	return 4
}

// ipBytes points ib at IP header ip's bytes at offset ho, checked within
// the head.
func (c *gen) ipBytes(ip lower.IPHeader) {
	c.emit("unsigned char *ib = (unsigned char *)data + ho; NSC_HIDE(ib);")
	c.emit("if ((void *)(ib + %d) > data_end) %s", c.s.Headers[ip.H].FixedBytes(), c.beyondHead())
}

// getField reads field f of header h at pointer b (bounds checked) as a
// __u64 expression.
func getField(s *packet.Schema, b string, h, f int) string {
	fs := s.Headers[h].Fields[f]
	if fs.Width > 64 {
		return getBits(b, fs.Offset+fs.Width-64, 64)
	}
	return getBits(b, fs.Offset, fs.Width)
}

// Verify generates `checksum verify H` as a condition: a zero checksum
// that may be absent passes while IPv4 is valid (lower.Checksum.Absent,
// packet.Packet.VerifyChecksum).
func (c *gen) Verify(x *lower.Checksum) string {
	c.usesSum = true
	ok, start, end, pseudo := c.newTmp("rok"), c.newTmp("rs"), c.newTmp("re"), c.newTmp("rp")
	c.region(x, ok, start, end, pseudo)
	r := c.newTmp("valid")
	c.emit("int %s = 0;", r)
	c.emit("if (%s) {", ok)
	if v4 := x.Absent; v4 != nil {
		c.emit("__u32 ho = st->off[%d] & NSC_OM;", x.H)
		c.emit("unsigned char *cb = (unsigned char *)data + ho + %d; NSC_HIDE(cb);", x.Field.Offset/8)
		c.emit("if ((void *)(cb + 2) > data_end) %s", c.beyondHead())
		c.emit("if (%s && cb[0] == 0 && cb[1] == 0) %s = 1; else", c.valid(v4.H), r)
	}
	c.emit("%s = nsc_fold(nsc_sum(ctx, %s, %s) + %s) == 0xffff;", r, start, end, pseudo)
	c.emit("}")
	return r
}

// Compute generates `checksum compute H`: 0xffff for a zero that would
// mean none.
func (c *gen) Compute(x *lower.Checksum) {
	c.usesSum = true
	h, fs := x.H, x.Field
	b := c.hdr(h)
	c.emit("%s[%d] = 0; %s[%d] = 0;", b, fs.Offset/8, b, fs.Offset/8+1)
	ok, start, end, pseudo := c.newTmp("rok"), c.newTmp("rs"), c.newTmp("re"), c.newTmp("rp")
	c.region(x, ok, start, end, pseudo)
	c.emit("if (!%s) %s", ok, c.malformed())
	cs := c.newTmp("cs")
	c.emit("__u16 %s = ~nsc_fold(nsc_sum(ctx, %s, %s) + %s);", cs, start, end, pseudo)
	if x.Nonzero {
		c.emit("if (%s == 0) %s = 0xffff;", cs, cs)
	}
	c.forget()
	b = c.hdr(h)
	c.emit("%s[%d] = (__u8)(%s >> 8); %s[%d] = (__u8)%s;", b, fs.Offset/8, cs, b, fs.Offset/8+1, cs)
}
