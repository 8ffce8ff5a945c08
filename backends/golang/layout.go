package golang

import (
	"bytes"
	"fmt"
	"math/bits"
	"strings"

	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// This file generates the operations that change where headers lie in the
// frame: extract and pop.

// extractAbsent generates `extract H` at node n if the validity analysis
// says H is not there yet, and reports whether it did. The header's state
// changes only on the way that extracts it, so no flag is carried to the
// branch.
func (c *gen) extractAbsent(n *dataflow.Node, x *lower.Extract) bool {
	h := x.H
	spec := c.s.Headers[h]
	if x.Meta || x.Known != lower.KnownInvalid {
		return false
	}
	fixed := x.Fixed
	if x.Length == nil {
		c.emit("if cur >= 0 && cur+%d <= len(data) {", fixed)
		c.emit("%s; cur += %d // %s", c.hSet(h, "cur", fmt.Sprint(fixed)), fixed, spec.Name)
		c.w.Fire(n, 0)
		c.emit("}")
		c.w.Fire(n, 1)
		return true
	}
	c.emit("if off := cur; off >= 0 && off+%d <= len(data) {", fixed)
	ext, fits, empty := c.extLength(x)
	// The jump along port 0, emitted twice: one flow edge, two ways.
	jump := c.capture(func() { c.w.Fire(n, 0) })
	// On the hot path the header is taken without its variable part (an
	// IPv4 header without options): the offsets behind it stay constants
	// there, so Go drops their arithmetic and bounds checks. A frame with
	// a variable part goes on in the general code.
	c.emit("%s", hotOpen)
	c.emit("if %s {", empty)
	c.emit("cur = off + %d", fixed)
	c.b.Write(jump)
	c.emit("}")
	c.emit("%s", hotClose)
	c.emit("if %s {", fits)
	c.emit("%s += int(%s); cur = off + %s", c.hLen(h), ext, c.hLen(h))
	c.b.Write(bytes.ReplaceAll(jump, []byte("\n"), []byte(generalJump+"\n")))
	c.emit("}")
	c.emit("%s // %s", c.hClear(h), spec.Name)
	c.emit("}")
	c.w.Fire(n, 1)
	return true
}

// maxParseSites bounds the extractions an unrolled parse prints: past it
// the entry parses through the packet runtime.
const maxParseSites = 64

// An unrolled parse (lower.ParseSyntax): a loop that break ends.

// ParseBegin unrolls the entry's parse, each header extracted inline (a
// runtime call here cost more than the rest of a segment's checks in the
// reassembler). A parse elsewhere, or a parse graph that unrolls too far
// or picks the next header by a field wider than 64 bits, goes through
// the runtime.
func (c *gen) ParseBegin(pg *lower.ParseGraph) (string, bool) {
	if !pg.Input || !pg.Narrow || pg.Sites > maxParseSites {
		return c.call(fmt.Sprintf("p.ParseFrame(%d)", pg.Start)), false
	}
	c.parseVar = c.newTmp("parsed")
	c.emit("%s := false", c.parseVar)
	c.emit("for { // the parse graph from %s; break ends it", c.s.Headers[pg.Start].Name)
	for h, hs := range c.s.Headers {
		if !hs.Metadata {
			c.emit("%s", c.hSet(h, "-1", "0"))
		}
	}
	c.emit("cur = 0")
	c.PushScope()
	return c.parseVar, true
}

func (c *gen) ParseHeader(x *lower.Extract) { c.emit("if !%s { break }", c.extract(x)) }

func (c *gen) ParseNext(h int, e *packet.ParseEdge, seen []int) {
	c.PushScope()
	c.parsed = seen // valid here: no check before reading the field
	c.emit("if %s&%#x == %#x {", c.readField(packet.FieldRef{Header: h, Field: e.Field}, false), e.Mask.Lo, e.Value.Lo&e.Mask.Lo)
	c.parsed = nil
}

func (c *gen) EndParseNext() {
	c.emit("}")
	c.PopScope()
}

func (c *gen) ParseDone() {
	c.emit("%s = true", c.parseVar)
	c.emit("break")
}

func (c *gen) EndParseHeader(int) {}

func (c *gen) ParseEnd(*lower.ParseGraph) {
	c.PopScope()
	c.emit("}")
}

// extLength places variable-size header x.H provisionally at off (its
// fixed part; the length is read with the header there) and evaluates the
// length of its variable part: the length as an int expression, whether
// the whole header fits, and whether the variable part is empty.
func (c *gen) extLength(x *lower.Extract) (ext, fits, empty string) {
	n, length := x.Fixed, x.Length
	c.emit("%s", c.hSet(x.H, "off", fmt.Sprint(n)))
	c.hdrs = append(c.hdrs, map[int]string{})
	defer func() { c.hdrs = c.hdrs[:len(c.hdrs)-1] }()
	ext = c.newTmp("ext")
	switch {
	case x.Small:
		c.emit("%s := %s", ext, c.i64(length))
		return ext, fmt.Sprintf("%s >= 0 && %s <= int64(len(data)) && off+%d+int(%s) <= len(data)", ext, ext, n, ext), ext + " == 0"
	case x.Wide:
		c.emit("%s := %s", ext, c.Value(length))
		return ext + ".Lo", fmt.Sprintf("%s.Hi == 0 && %s.Lo <= uint64(len(data)) && off+%d+int(%s.Lo) <= len(data)", ext, ext, n, ext), ext + ".IsZero()"
	}
	c.emit("%s := %s", ext, c.U64(length))
	return ext, fmt.Sprintf("%s <= uint64(len(data)) && off+%d+int(%s) <= len(data)", ext, n, ext), ext + " == 0"
}

// extract generates `extract H` as a condition; a fixed-size header is
// extracted inline.
func (c *gen) extract(x *lower.Extract) string {
	h := x.H
	if x.Meta || x.Known == lower.KnownValid {
		return "true" // already there: nothing to do
	}
	n := x.Fixed
	name := c.s.Headers[h].Name
	ok := c.newTmp("x")
	c.emit("%s := %s // already there: nothing to do", ok, c.hPresent(h))
	c.emit("if !%s {", ok)
	defer c.emit("}")
	if x.Length != nil {
		c.emit("if off := cur; off >= 0 && off+%d <= len(data) {", n)
		ext, fits, _ := c.extLength(x)
		c.emit("%s = %s", ok, fits)
		c.emit("if %s { %s += int(%s); cur = off + %s }", ok, c.hLen(h), ext, c.hLen(h))
		c.emit("}")
		c.emit("if !%s { %s } // %s", ok, c.hClear(h), name)
		return ok
	}
	c.emit("%s = cur >= 0 && cur+%d <= len(data)", ok, n)
	c.emit("if %s { %s; cur += %d } else { %s } // %s", ok, c.hSet(h, "cur", fmt.Sprint(n)), n, c.hClear(h), name)
	return ok
}

// A pop (lower.PopSyntax) runs inline, as packet.Packet.Pop does: the
// header's bytes are taken out of the checksums in update (one sum,
// unrolled for a fixed-size header), the shorter side of the frame moves
// over them, and only the offsets of headers that may lie behind H
// (flow.Validity) are adjusted.

func (c *gen) PopMeta(p *lower.Pop) {
	c.emit("if !%s { %s }", c.call(fmt.Sprintf("p.Pop(%d)", p.H)), c.malformed())
}

func (c *gen) PopStart(p *lower.Pop) {
	if p.Receives {
		// A pop just before left its bytes in place (pendOff, pendN):
		// unless this header ends where they begin, move them now.
		c.emit("if pendN != 0 && !(%s && %s+%s == pendOff) {", c.hPresent(p.H), c.hOff(p.H), c.hLen(p.H))
		c.move("pendOff", "pendN")
		c.emit("pendN = 0")
		c.emit("}")
	}
	if p.OwnPending {
		c.patchPending() // this header's bytes are summed below
	}
}

func (c *gen) PopRange(p *lower.Pop) (off, n string) {
	off, n = c.newTmp("po"), c.newTmp("pn")
	if !c.there(p.H) {
		c.emit("if !%s { %s }", c.hPresent(p.H), c.malformed())
	}
	c.emit("%s, %s := %s, %s // %s", off, n, c.hOff(p.H), c.hLen(p.H), c.s.Headers[p.H].Name)
	c.emit("if %s+%s > len(data) { %s }", off, n, c.malformed()) // a valid header's offset is not negative
	return off, n
}

func (c *gen) TakeOut(p *lower.Pop, pu lower.PopUpdate, off, n string) {
	u := pu.U
	cond := fmt.Sprintf("%s > %s && (%s-%s)%%2 == 0", off, c.hOff(u), off, c.hOff(u))
	if !c.there(u) {
		cond = c.hPresent(u) + " && " + cond
	}
	if p.Fixed < 0 {
		cond += fmt.Sprintf(" && %s%%2 == 0", n)
	}
	c.emit("if %s {", cond)
	d := c.newTmp("d")
	if fixed := p.Fixed; fixed >= 0 && fixed <= 64 {
		// packet.PopDelta, the words' complements, taken 64, 32
		// and 16 bits at a time (wordsOf).
		pw := c.newTmp("pw")
		c.emit("%s := data[%s : %s+%d]", pw, off, off, fixed)
		terms := []string{"uint64(0)"} // a header of no bytes
		for k, w := 0, 0; k < fixed; k += w {
			w = min(8, 1<<(bits.Len(uint(fixed-k))-1)) // the widest load that fits
			terms = append(terms, c.wordsOf(beLoad(pw, k, w), 8*w, false, true))
		}
		if len(terms) > 1 {
			terms = terms[1:]
		}
		c.emit("%s := %s", d, strings.Join(terms, " + "))
	} else {
		c.emit("%s := packet.PopDelta(data[%s : %s+%s])", d, off, off, n)
	}
	if pu.Pending {
		c.pend(u, d) // patched later (flow.PopChains)
	} else {
		c.applyDelta(u, d)
	}
	c.emit("}")
}

// Hold: the next node pops too and moves these bytes with its own.
func (c *gen) Hold(p *lower.Pop, off, n string) {
	c.emit("pendOff = %s", off)
	c.emit("pendN %s %s", p.HoldOp(), n)
}

func (c *gen) MoveHeld(_ *lower.Pop, off, n string) {
	c.emit("pendN += %s", n)
	c.move(off, "pendN")
	c.emit("pendN = 0")
}

func (c *gen) Move(_ *lower.Pop, off, n string) { c.move(off, n) }

func (c *gen) Forget(p *lower.Pop) { c.emit("%s", c.hClear(p.H)) }

func (c *gen) PopOffsets(p *lower.Pop, off, n string) {
	c.emit("%s", c.hClear(p.H))
	for _, i := range p.Behind {
		valid := c.hPresent(i) + " && "
		if c.there(i) {
			valid = ""
		}
		c.emit("if %s%s > %s { %s -= %s } // %s", valid, c.hOff(i), off, c.hOff(i), n, c.s.Headers[i].Name)
	}
	c.emit("if cur > %s { cur = max(%s, cur-%s) }", off, off, n)
	// The frame moved: header slices taken before are stale.
	for i := range c.hdrs {
		c.hdrs[i] = map[int]string{}
	}
}

// move generates the removal of the frame's bytes [off, off+n): the shorter
// side moves over them, as packet.Packet.Pop does. A head of 16 to 64
// bytes moving by 16 or more moves in pieces of 16 from its end, each a
// copy Go makes one load and one store (its length is a constant), no
// piece overwriting bytes a later one reads; where the offsets are
// constants, as on the hot path, the pieces' arithmetic and bounds checks
// fold away, and memmove's call and size dispatch are gone.
func (c *gen) move(off, n string) {
	c.emit("if %s < len(data)-%s-%s {", off, off, n)
	c.emit("if o, k := %s, %s; k >= 16 && o >= 16 && o <= 64 {", off, n)
	c.emit("copy(data[k+o-16:k+o], data[o-16:o])")
	for _, above := range []int{16, 32} {
		c.emit("if o > %d { m := max(o-%d, 0); copy(data[k+m:k+m+16], data[m:m+16]) }", above, above+16)
	}
	c.emit("if o > 48 { copy(data[k:k+16], data[:16]) }")
	c.emit("} else if %s > 0 {", off) // a header at the front moves nothing
	c.emit("copy(data[%s:%s+%s], data[:%s])", n, n, off, off)
	c.emit("}")
	c.emit("data = data[%s:]", n)
	c.emit("} else {")
	c.emit("copy(data[%s:], data[%s+%s:])", off, off, n)
	c.emit("data = data[:len(data)-%s]", n)
	c.emit("}")
}
