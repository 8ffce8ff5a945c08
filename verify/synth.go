package verify

// This file is the packet synthesizer: it turns a packet class (one cube of
// a port predicate, from predicate.Space.Sample or Counterexample) into
// bytes, so that every class the embedder reasons about is also run through
// the interpreter and the target. It works from the schema (header
// layouts, the parse graph, length expressions and checksum kinds) and,
// through frameIn, from hints the graph gives: for a schema without a parse
// graph, the order the graph extracts headers in and the field values that
// lead to each extract; the expressions behind symbolic atoms.
//
// Which atoms of a class are honoured:
//   - parsed(start): the frame parses from start, or, when false, is cut in
//     the middle of a header after every header the class wants valid, so
//     that parsing fails (valid(start) false is also a cut, inside start);
//   - valid(h) for wire headers: the walk through the parse graph goes to
//     h (setting the select fields on the way) or keeps away from it;
//     without a parse graph, the headers wanted valid follow each other in
//     extraction order, but for one a placed header's field does not
//     select (an IPv4 header after ethernet.type 0x86dd);
//   - field atoms ("header.field" bits): on every header in the frame and on
//     every metadata field. A field of a header that is not in the frame is
//     not on the wire and cannot be honoured (the interpreter cannot read
//     it either);
//   - csum_ok(h) for headers with a checksum: true puts h in the frame with
//     a good checksum, false gives a bad one (one bit flipped) if h is
//     there. When the class pins the checksum field, a free 16-bit word the
//     checksum covers (payload, or a field of h nothing else reads) is
//     adjusted instead;
//   - symbolic atoms of test conditions the hints give the expression of
//     ("udp.dport & 0xc000 == 0x4000"): a frame that evaluates otherwise
//     is made again, up to symbolTries times (a condition random bits
//     rarely meet, such as an equality of two fields, stays unmet).
//
// What the class leaves free varies from frame to frame so both sides of
// each choice get run: where the walk stops, IPv4 options (ihl 5 mostly,
// 6..15 sometimes), payload length, a bad checksum now and then, a zero
// ("not computed") UDP checksum over IPv4, and now and then a truncated
// frame. Free lengths (ipv4.total_len, ipv6.payload_len, udp.length)
// agree with the bytes; a pinned one is kept, and the payload is sized to
// match it when it can be.
//
// Everything else is left to chance: pred(Node,port), spawn(Node), other
// symbolic atoms, parsed(h) for h
// other than start, and synthetic fields such as "table.action". So are
// combinations the schema makes impossible: a pinned select field that
// leads elsewhere than valid(h) asks, two headers the parse graph never
// puts in one frame, a header it never reaches, parsed(start) false with a
// wanted header that ends the parse graph, a pinned length that cannot
// parse (ihl < 5). The caller finds out by running the interpreter.

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
)

const (
	// maxPayload bounds the random payload after the last header.
	maxPayload = 64
	// maxPinnedPayload bounds the payload grown to match a pinned length
	// field; larger pinned lengths are kept but not backed by bytes.
	maxPinnedPayload = 1500
	// maxVariable bounds the size of a variable-length field, so a free
	// length field does not make frames of kilobytes.
	maxVariable = 64
)

// Frame turns a packet class into concrete bytes (and metadata values) that
// belong to it, as far as the schema allows. start is the header the frame
// begins with (the graph parses from it); rnd fills what the class leaves
// free. The atoms honoured are listed at the top of this file; the caller
// checks membership itself by running the interpreter. Frame never panics:
// impossible classes get a best-effort frame. A start outside the schema
// (a source that takes payloads, not frames) gives random bytes. meta has
// Schema.MetaFields values. A nil rnd uses a fixed seed.
func Frame(s *packet.Schema, start int, c predicate.Class, rnd *rand.Rand) (frame []byte, meta []packet.Value) {
	return frameIn(s, start, nil, c, rnd)
}

// hints is what a graph tells the synthesizer beyond the schema.
type hints struct {
	// extracted lists header IDs in the order the graph extracts them. For
	// a schema without a parse graph (headers extracted one by one, as the
	// EJFAT models do), the headers the class wants valid follow start in
	// this order (others after them, in declaration order).
	extracted []int
	// conds maps the text of a condition the predicates name by a symbolic
	// atom ("udp.dport & 0xc000 == 0x4000", "ipv4.dst == host.addr") to its
	// expression. A frame whose value of one differs from what the class
	// says is made again, up to symbolTries times in all.
	conds map[string]*packet.Expr
	// selects are the choices the graph makes before it extracts a header
	// (a switch on ethernet.type whose 0x86dd port extracts ipv6), as parse
	// edges: without a parse graph, a wanted header that a placed header's
	// field does not select is left out.
	selects []packet.ParseEdge
	// entries are the entries verify runs with, in Schema.Tables order
	// (nil: none): a class that wants a lookup to run an action gets the
	// fields its keys read set to match an entry of that action.
	entries [][]packet.Entry
	// written are the metadata fields the graph writes on the way: a
	// condition that reads one cannot be judged on the frame alone.
	written map[packet.FieldRef]bool
	// constants are the values the graph writes (set constants, the
	// defaults' and the entries' parameters), by width: a class that
	// wants a field equal to a written metadata field ("ipv4.dst ==
	// host.ip4", the address a table's default sets) gets one of them.
	constants map[int][]packet.Value
}

// symbolTries bounds the frames made for a class whose symbolic
// conditions come out wrong.
const symbolTries = 32

// frameIn is Frame with what the graph says (see hints); nil hints are
// none.
func frameIn(s *packet.Schema, start int, h *hints, c predicate.Class, rnd *rand.Rand) (frame []byte, meta []packet.Value) {
	if s == nil {
		return nil, nil
	}
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(1, 2))
	}
	if h == nil {
		h = &hints{}
	}
	for try := 1; ; try++ {
		y := &synth{s: s, c: c, rnd: rnd, pins: map[string]predicate.FieldClass{}, pkt: packet.NewPacket(s), h: h}
		for _, fc := range c.Fields() {
			y.pins[fc.Field.Name] = fc
		}
		frame, meta = y.frame(start)
		if !y.cut && y.equalWritten() {
			y.checksums() // the fields it set may be covered
			frame = y.buf
		}
		if try == symbolTries || y.meets() {
			return frame, meta
		}
		if try == 1 && !y.cut && y.sizedPayload() {
			return y.buf, meta
		}
	}
}

// sizedPayload tries every payload size up to maxPayload, in random order,
// for a frame that misses a condition the class constrains that reads
// len(): random sizes rarely meet len(udp) == 35 (seed 20261140, model
// 1334: only such frames reach the place a liar claims), and it reports
// whether one met the conditions.
func (y *synth) sizedPayload() bool {
	reads := false
	for text, e := range y.h.conds {
		if _, ok := y.c.Symbol(text); ok {
			walkExpr(e, func(x *packet.Expr) { reads = reads || x.Kind == packet.ELen })
		}
	}
	if !reads {
		return false
	}
	end := 0
	for _, pl := range y.placed {
		end = max(end, pl.off+pl.len)
	}
	end = min(end, len(y.buf))
	for _, n := range y.rnd.Perm(maxPayload + 1) {
		y.buf = append(y.buf[:end:end], y.randomBytes(n)...)
		y.lengths()
		y.checksums()
		if y.meets() {
			return true
		}
	}
	return false
}

// patcher builds one frame of class c for packets from LPG source src (its
// free fields at edges half the time where edges is set) and returns a
// maker of copies: with some header fields set and the checksums made
// again as the class wants them (the segments of one event, see
// sequences.go), and, where a patch says so, with other payload behind
// the headers, the length fields counting it, cut after its first bytes.
// ok is false for a frame that is cut or lacks a header whose field is
// set.
func (fs *frames) patcher(src string, c predicate.Class, edges bool, rnd *rand.Rand) (mk func(patch) []byte, meta []packet.Value, ok bool) {
	start, found := fs.starts[src]
	if !found || start < 0 {
		return nil, nil, false
	}
	y := &synth{s: fs.schema, c: c, rnd: rnd, pins: map[string]predicate.FieldClass{}, pkt: packet.NewPacket(fs.schema), h: &fs.hints, edges: edges}
	for _, fc := range c.Fields() {
		y.pins[fc.Field.Name] = fc
	}
	base, meta := y.frame(start)
	if y.cut {
		return nil, nil, false
	}
	placedAt := map[int]int{}
	end := 0
	for _, pl := range y.placed {
		placedAt[pl.h] = pl.off
		end = max(end, pl.off+pl.len)
	}
	// Headers the graph extracts past the parse graph's end, as the class
	// wants them, then at least a byte of payload.
	var extra []int
	for _, h := range y.h.extracted {
		if v, ok := y.valid(h); ok && v && !y.isPlaced(h) && !y.s.Headers[h].Metadata {
			placedAt[h] = end
			extra = append(extra, h)
			end += y.s.Headers[h].FixedBytes()
		}
	}
	if n := end + 1 + y.rnd.IntN(maxPayload) - len(base); len(extra) > 0 && n > 0 {
		y.buf = append(slices.Clone(base), y.randomBytes(n)...)
	}
	for _, h := range extra {
		for i, f := range y.s.Headers[h].Fields {
			if _, pm := y.pin(h, i); !f.Variable() && !pm.IsZero() {
				y.setField(h, placedAt[h], i, y.overlay(h, i, y.getField(placedAt[h], h, i)))
			}
		}
	}
	y.lengths()
	base = slices.Clone(y.buf)
	end = min(end, len(base))
	return func(pt patch) []byte {
		y.buf = slices.Clone(base)
		if pt.payload >= 0 {
			y.buf = append(y.buf[:end], y.randomBytes(pt.payload)...)
			y.lengths()
		}
		for f, v := range pt.set {
			off, ok := placedAt[f.Header]
			if !ok {
				return nil
			}
			y.setField(f.Header, off, f.Field, packet.V(v))
		}
		y.checksums()
		if pt.keep >= 0 && end+pt.keep < len(y.buf) {
			y.buf = y.buf[:end+pt.keep]
		}
		return y.buf
	}, meta, true
}

// patch is what a patcher's copy changes.
type patch struct {
	set map[packet.FieldRef]uint64 // header fields set
	// payload is the bytes behind the headers (-1: those drawn), keep
	// those of them left in the frame (-1: all).
	payload, keep int
}

// frame builds the frame from header start.
func (y *synth) frame(start int) ([]byte, []packet.Value) {
	s := y.s
	y.metadata()
	if start < 0 || start >= len(s.Headers) || s.Headers[start].Metadata || len(s.Headers[start].Fields) == 0 {
		y.buf = y.randomBytes(y.rnd.IntN(maxPayload + 1))
		return y.buf, y.meta
	}
	y.start = start
	y.decideCut()
	y.walk()
	y.lookups()
	y.payload()
	y.lengths()
	y.checksums()
	if y.cut {
		y.truncate()
	}
	return y.buf, y.meta
}

// meets reports whether the frame gives every condition of the hints that
// the class constrains the value the class asks for, but those that read
// metadata the graph writes (their value is not the frame's). A condition
// that cannot be evaluated (a field of a header not in the frame) counts
// as false.
func (y *synth) meets() bool {
	h := y.h
	if len(h.conds) == 0 {
		return true
	}
	y.parse(y.buf)
	for text, e := range h.conds {
		want, ok := y.c.Symbol(text)
		if !ok || h.readsWritten(e) {
			continue
		}
		v, ok := e.Eval(y.pkt, nil)
		if (ok && !v.IsZero()) != want {
			return false
		}
	}
	return true
}

// synth is the state of one Frame call.
type synth struct {
	s     *packet.Schema
	c     predicate.Class
	rnd   *rand.Rand
	pins  map[string]predicate.FieldClass
	pkt   *packet.Packet
	start int

	buf    []byte
	meta   []packet.Value
	placed []placed // wire headers in frame order

	// cut: the frame is to be truncated inside a header (parsed(start)
	// false, or now and then when the class does not care).
	cut, mustCut bool
	// edges: half the free fields are 0, all ones or small (see edge).
	edges bool
	h     *hints // what the graph says beyond the schema
}

// placed is a header instance the walk put in the frame.
type placed struct {
	h, off, len int
}

// pin returns the bits the class fixes in field f of header h, masked to
// the field's width.
func (y *synth) pin(h, f int) (value, mask packet.Value) {
	spec := y.s.Headers[h]
	fc, ok := y.pins[spec.Name+"."+spec.Fields[f].Name]
	if !ok {
		return packet.Value{}, packet.Value{}
	}
	m := fc.Mask.And(packet.Mask(spec.Fields[f].Width))
	return fc.Value.And(m), m
}

// overlay puts the pinned bits of field f of header h into v.
func (y *synth) overlay(h, f int, v packet.Value) packet.Value {
	pv, pm := y.pin(h, f)
	return v.And(pm.Not()).Or(pv).And(packet.Mask(y.s.Headers[h].Fields[f].Width))
}

func (y *synth) random(width int) packet.Value {
	return packet.Value{Hi: y.rnd.Uint64(), Lo: y.rnd.Uint64()}.And(packet.Mask(width))
}

// edge is a value at the edge of a width-bit field: 0 (half the time),
// all ones, or 1..16. A value computed from a field (an event length
// bit<5>(f), a popcount) is small or zero where the field is, and only
// such a value may lead somewhere the field's random values never go
// (seed 20261129, models 2926 and 4709: events of at most 8 bytes).
func (y *synth) edge(width int) packet.Value {
	switch y.rnd.IntN(4) {
	case 0, 1:
		return packet.Value{}
	case 2:
		return packet.Mask(width)
	}
	return packet.V(uint64(1 + y.rnd.IntN(16))).And(packet.Mask(width))
}

// draw is a random value for a free width-bit field, an edge half the
// time when y.edges is set.
func (y *synth) draw(width int) packet.Value {
	if y.edges && y.rnd.IntN(2) == 0 {
		return y.edge(width)
	}
	return y.random(width)
}

func (y *synth) randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(y.rnd.UintN(256))
	}
	return b
}

// metadata fills the metadata slots from the class, elsewhere random or,
// for half the packets, zero: what a frame from the wire comes with, and
// what a test of metadata nothing wrote may need to let it by (seed
// 20261211, model 1764: a liar behind a test of a register's value
// header no load had filled).
func (y *synth) metadata() {
	y.meta = make([]packet.Value, y.s.MetaFields)
	zero := y.rnd.IntN(2) == 0
	for _, h := range y.s.Headers {
		if !h.Metadata {
			continue
		}
		for i, f := range h.Fields {
			if k := h.MetaBase + i; !f.Variable() && k >= 0 && k < len(y.meta) {
				v := packet.Value{}
				if !zero {
					v = y.draw(f.Width)
				}
				y.meta[k] = y.overlay(h.ID, i, v)
			}
		}
	}
}

// valid is what the class says about header h being in the frame. A
// header whose checksum the class wants good must be there too.
func (y *synth) valid(h int) (value, constrained bool) {
	value, constrained = y.c.Valid(y.s.Headers[h].Name)
	if !constrained && y.s.Headers[h].Checksum >= 0 {
		if ok, c := y.csumOK(h); ok && c {
			return true, true
		}
	}
	return value, constrained
}

// isValidOK reports whether header h may be valid.
func (y *synth) isValidOK(h int) bool { v, ok := y.valid(h); return v || !ok }

// csumOK is what the class says about header h's checksum.
func (y *synth) csumOK(h int) (value, constrained bool) {
	return y.c.Symbol("csum_ok(" + y.s.Headers[h].Name + ")")
}

// decideCut settles whether the frame will be truncated: always when the
// class says parsed(start) is false; now and then when it does not care and
// pins nothing a cut could take away.
func (y *synth) decideCut() {
	parsed, ok := y.c.Symbol("parsed(" + y.s.Headers[y.start].Name + ")")
	switch {
	case ok:
		y.cut, y.mustCut = !parsed, !parsed
	case !y.isValidOK(y.start):
		y.cut, y.mustCut = true, true // only a cut start header is invalid
	case y.rnd.IntN(8) == 0:
		// Only when a cut loses nothing the class asks for: no good
		// checksum, no bits of a wire header.
		y.cut = true
		for _, h := range y.s.Headers {
			if v, ok := y.csumOK(h.ID); ok && v {
				y.cut = false
			}
		}
		for _, fc := range y.pins {
			if h, _, ok := strings.Cut(fc.Field.Name, "."); ok {
				if spec, ok := y.s.Header(h); ok && !spec.Metadata {
					y.cut = false
				}
			}
		}
	}
}

// --- the walk through the parse graph ---

// walk places headers from start along the parse graph, as Packet.Parse
// will find them.
func (y *synth) walk() {
	h := y.start
	for steps := 0; steps <= len(y.s.Headers); steps++ {
		spec := y.s.Headers[h]
		if spec.Metadata || len(spec.Fields) == 0 {
			return
		}
		off := len(y.buf)
		y.buf = append(y.buf, y.randomBytes(spec.FixedBytes())...)
		for i, f := range spec.Fields {
			switch _, pm := y.pin(h, i); {
			case f.Variable():
			case y.edges && y.rnd.IntN(2) == 0:
				y.setField(h, off, i, y.overlay(h, i, y.edge(f.Width)))
			case !pm.IsZero():
				y.setField(h, off, i, y.overlay(h, i, y.getField(off, h, i)))
			}
		}
		n := spec.FixedBytes() + y.sizeVariable(h, off)
		y.placed = append(y.placed, placed{h, off, n})
		if y.cut && y.wantedPlaced() && y.cutTarget() >= 0 && y.rnd.IntN(2) == 0 {
			return // enough to cut into; going on lets deeper headers be cut
		}
		next := y.nextHeader(h, off)
		if next < 0 || y.isPlaced(next) {
			return
		}
		h = next
	}
}

// lookups sets the fields each lookup's keys read, where the class
// wants the lookup to run an action (its synthetic field T.action,
// dataflow.ActionField, pinned) and there are entries of that action: to
// match one of them, drawn at random (random bits would rarely hit a
// route or a firewall rule). Keys that are not a field of a header in the
// frame are left alone; so are pinned bits.
func (y *synth) lookups() {
	for t, es := range y.h.entries {
		if t >= len(y.s.Tables) || len(es) == 0 {
			continue
		}
		def := y.s.Tables[t]
		fc, ok := y.pins[def.Spec.Name+".action"]
		if !ok || fc.Mask.IsZero() {
			continue
		}
		var hits []*packet.Entry
		for i := range es {
			if packet.V(uint64(es[i].Action)).And(fc.Mask) == fc.Value.And(fc.Mask) {
				hits = append(hits, &es[i])
			}
		}
		if len(hits) == 0 {
			continue
		}
		e := hits[y.rnd.IntN(len(hits))]
		for k, key := range def.Keys {
			if key.Kind == packet.EField && k < len(e.Keys) {
				y.setPlaced(key.Field, y.matching(&e.Keys[k], def.Spec.Keys[k], y.s.FieldSpec(key.Field).Width))
			}
		}
	}
}

// matching is a width-bit value key m matches, its free bits random.
func (y *synth) matching(m *packet.KeyMatch, k packet.KeySpec, width int) packet.Value {
	r := y.random(width)
	switch k.Kind {
	case packet.LPM:
		keep := packet.PrefixMask(k.Width, m.PrefixLen)
		return m.Value.And(keep).Or(r.And(keep.Not())).And(packet.Mask(width))
	case packet.Ternary:
		return m.Value.And(m.Mask).Or(r.And(m.Mask.Not())).And(packet.Mask(width))
	case packet.Range:
		if y.rnd.IntN(2) == 0 {
			return m.Hi
		}
		return m.Lo
	}
	return m.Value
}

func (y *synth) getField(off, h, f int) packet.Value {
	fs := &y.s.Headers[h].Fields[f]
	v, _ := packet.GetBits(y.buf[off:], fs.Offset, fs.Width)
	return v
}

func (y *synth) setField(h, off, f int, v packet.Value) {
	fs := &y.s.Headers[h].Fields[f]
	packet.SetBits(y.buf[off:], fs.Offset, fs.Width, v)
}

func (y *synth) isPlaced(h int) bool { return y.placedAt(h) >= 0 }

// placedAt is header h's index in y.placed, -1 when it is not there.
func (y *synth) placedAt(h int) int {
	return slices.IndexFunc(y.placed, func(p placed) bool { return p.h == h })
}

// setPlaced sets fixed-width field f of a header in the frame to v (its
// pinned bits kept) and reports whether it could.
func (y *synth) setPlaced(f packet.FieldRef, v packet.Value) bool {
	at := y.placedAt(f.Header)
	if at < 0 || y.s.FieldSpec(f).Variable() {
		return false
	}
	y.setField(f.Header, y.placed[at].off, f.Field, y.overlay(f.Header, f.Field, v))
	return true
}

// wantedPlaced reports whether every header the class wants valid is in
// the frame already.
func (y *synth) wantedPlaced() bool {
	for _, h := range y.s.Headers {
		if v, ok := y.valid(h.ID); ok && v && !h.Metadata && !y.isPlaced(h.ID) {
			return false
		}
	}
	return true
}

// packetNow loads the frame built so far into y.pkt with the placed
// headers valid, for evaluating expressions over it.
func (y *synth) packetNow() *packet.Packet {
	p := y.pkt
	p.Reset(y.buf)
	copy(p.Meta, y.meta)
	for _, pl := range y.placed {
		p.Hdr[pl.h] = packet.HeaderState{Off: pl.off, Len: pl.len, Valid: true}
	}
	return p
}

// sizeVariable chooses the free bits of the fields header h's variable
// field's length reads (IPv4's ihl), mostly for the smallest valid length
// and sometimes for another one, and appends that many zero bytes (for
// IPv4 options, end-of-list padding). It returns the size.
func (y *synth) sizeVariable(h, off int) int {
	spec := y.s.Headers[h]
	last := &spec.Fields[len(spec.Fields)-1]
	if !last.Variable() {
		return 0
	}
	var free []int // fields of h the length reads, with bits the class leaves free
	walkExpr(last.Length, func(e *packet.Expr) {
		if e.Kind == packet.EField && e.Field.Header == h && !spec.Fields[e.Field.Field].Variable() && !slices.Contains(free, e.Field.Field) {
			if _, pm := y.pin(h, e.Field.Field); pm != packet.Mask(spec.Fields[e.Field.Field].Width) {
				free = append(free, e.Field.Field)
			}
		}
	})
	fixed := spec.FixedBytes()
	eval := func() (int, bool) {
		p := y.packetNow()
		p.Hdr[h] = packet.HeaderState{Off: off, Len: fixed, Valid: true}
		v, ok := last.Length.Eval(p, nil)
		if !ok || v.Hi != 0 || v.Lo > maxVariable {
			return 0, false
		}
		return int(v.Lo), true
	}
	type cand struct {
		vals []packet.Value
		size int
	}
	var cands []cand
	try := func() {
		if n, ok := eval(); ok {
			vals := make([]packet.Value, len(free))
			for i, f := range free {
				vals[i] = y.getField(off, h, f)
			}
			cands = append(cands, cand{vals, n})
		}
	}
	bits := 0
	for _, f := range free {
		_, pm := y.pin(h, f)
		w := spec.Fields[f].Width
		for i := 0; i < w; i++ {
			if !pm.Bit(i) {
				bits++
			}
		}
	}
	if bits <= 8 {
		// Enumerate every assignment of the free bits (ihl: 16 values).
		for a := 0; a < 1<<bits; a++ {
			k := 0
			for _, f := range free {
				_, pm := y.pin(h, f)
				v := y.getField(off, h, f)
				for i := 0; i < spec.Fields[f].Width; i++ {
					if !pm.Bit(i) {
						v = v.SetBit(i, a>>k&1 == 1)
						k++
					}
				}
				y.setField(h, off, f, v)
			}
			try()
		}
	} else {
		// Half the draws small: a length such as hl - 1 of a 16-bit hl
		// fits maxVariable for one random value in a thousand (seed
		// 20261129, model 2953: no frame of the header parsed).
		try()
		for k := range 64 {
			for _, f := range free {
				v := y.random(spec.Fields[f].Width)
				if k%2 == 0 {
					v = packet.V(uint64(y.rnd.IntN(2*maxVariable + 2))).And(packet.Mask(spec.Fields[f].Width))
				}
				y.setField(h, off, f, y.overlay(h, f, v))
			}
			try()
		}
	}
	if len(cands) == 0 {
		return 0 // a pinned length that cannot be: the header will not parse
	}
	best := cands[0]
	for _, c := range cands {
		if c.size < best.size {
			best = c
		}
	}
	if y.rnd.IntN(4) == 0 {
		best = cands[y.rnd.IntN(len(cands))]
	}
	for i, f := range free {
		y.setField(h, off, f, best.vals[i])
	}
	y.buf = append(y.buf, make([]byte, best.size)...)
	return best.size
}

// readsWritten reports whether e reads a metadata field the graph
// writes.
func (h *hints) readsWritten(e *packet.Expr) bool {
	reads := false
	walkExpr(e, func(x *packet.Expr) { reads = reads || x.Kind == packet.EField && h.written[x.Field] })
	return reads
}

// equalWritten sets, for each equality of a wire field with a written
// metadata field that the class wants true, the wire field to a constant
// of its width the graph writes, at random, and reports whether it set
// one.
func (y *synth) equalWritten() bool {
	h, set := y.h, false
	for text, e := range h.conds {
		if want, ok := y.c.Symbol(text); !ok || !want || e.Kind != packet.EEq {
			continue
		}
		for _, side := range [][2]*packet.Expr{{e.A, e.B}, {e.B, e.A}} {
			f, other := side[0], side[1]
			if f.Kind != packet.EField || y.s.Headers[f.Field.Header].Metadata || !h.readsWritten(other) {
				continue
			}
			if cs := h.constants[y.s.FieldSpec(f.Field).Width]; len(cs) > 0 {
				set = y.setPlaced(f.Field, cs[y.rnd.IntN(len(cs))]) || set
			}
		}
	}
	return set
}

// walkExpr calls f on every node of e.
func walkExpr(e *packet.Expr, f func(*packet.Expr)) {
	if e == nil {
		return
	}
	f(e)
	walkExpr(e.A, f)
	walkExpr(e.B, f)
}

// nextHeader is the header to place after h (at off): where the parse
// graph goes, or, for a schema without one, the first header the class
// wants valid that is not placed yet, in extraction order.
func (y *synth) nextHeader(h, off int) int {
	if len(y.s.Next) > 0 {
		if t := y.chooseNext(h, off); t >= 0 {
			return t
		}
		// The parse graph ends at h; the graph's extracts read on from
		// there (a GRE or VXLAN header no parse edge leads to).
	}
	for _, id := range y.h.extracted {
		if y.wantedNext(id) && y.selectable(id) {
			return id
		}
	}
	if len(y.s.Next) > 0 {
		return -1
	}
	for _, spec := range y.s.Headers {
		if y.wantedNext(spec.ID) {
			return spec.ID
		}
	}
	return -1
}

// selectable reports whether the placed headers let the graph extract h:
// no select leads to it from a placed header, or one whose field matches.
func (y *synth) selectable(h int) bool {
	led := false
	for _, e := range y.h.selects {
		for _, pl := range y.placed {
			if e.To != h || e.From != pl.h {
				continue
			}
			led = true
			if y.getField(pl.off, e.From, e.Field).And(e.Mask) == e.Value.And(e.Mask) {
				return true
			}
		}
	}
	return !led
}

// wantedNext reports whether the class wants header h in the frame and
// it is not there yet.
func (y *synth) wantedNext(h int) bool {
	v, ok := y.valid(h)
	return ok && v && !y.s.Headers[h].Metadata && !y.isPlaced(h)
}

// parse loads the frame into y.pkt as the graph will find it: by the
// parse graph from start, then extracting the headers placed after where
// it ended, or, without one, by extracting the placed headers in order.
// It reports whether every header came out whole.
func (y *synth) parse(buf []byte) bool {
	p := y.pkt
	p.Reset(buf)
	copy(p.Meta, y.meta)
	graph := len(y.s.Next) > 0
	if graph && !p.ParseFrame(y.start) {
		return false
	}
	for i, pl := range y.placed {
		if graph && p.Valid(pl.h) {
			continue
		}
		if graph && i > 0 && !p.Valid(y.placed[i-1].h) {
			return true // the parse went elsewhere than the walk
		}
		if !p.Extract(pl.h) {
			return false
		}
	}
	return true
}

// edgesFrom returns the indices of the parse edges leaving h, in the order
// Packet.Parse tries them.
func (y *synth) edgesFrom(h int) []int {
	var es []int
	for i, e := range y.s.Next {
		if e.From == h && e.Field >= 0 && e.Field < len(y.s.Headers[h].Fields) && e.To >= 0 && e.To < len(y.s.Headers) {
			es = append(es, i)
		}
	}
	return es
}

// selected returns the header the parser goes to after h at off, as
// Packet.Parse decides: the first edge whose masked field matches; -1 if
// none.
func (y *synth) selected(h, off int) int {
	for _, i := range y.edgesFrom(h) {
		if y.matches(off, i) {
			return y.s.Next[i].To
		}
	}
	return -1
}

func (y *synth) matches(off, edge int) bool {
	e := &y.s.Next[edge]
	v := y.getField(off, e.From, e.Field)
	return v.And(e.Mask) == e.Value.And(e.Mask)
}

// chooseNext sets the select fields of h (at off) so that the parser goes
// where the class wants, and returns where it goes.
func (y *synth) chooseNext(h, off int) int {
	edges := y.edgesFrom(h)
	if len(edges) == 0 {
		return -1
	}
	forbidden := func(t int) bool { v, ok := y.valid(t); return ok && !v }
	wanted := func(t int) bool { v, ok := y.valid(t); return ok && v && !y.isPlaced(t) }
	// Edges towards wanted headers, those that can reach the most of them
	// first (ipv4 and udp wanted: ethernet goes to ipv4 or vlan, not to
	// ipv6), and among those mostly an edge straight to a wanted header.
	var order []int
	best := 0
	reach := map[int]int{}
	for _, i := range edges {
		t := y.s.Next[i].To
		if y.isPlaced(t) || forbidden(t) {
			continue
		}
		if n := y.wantedFrom(t, wanted, forbidden); n > 0 {
			reach[i] = n
			best = max(best, n)
			order = append(order, i)
		}
	}
	order = shuffled(y.rnd, order)
	straight := y.rnd.IntN(4) != 0
	slices.SortStableFunc(order, func(a, b int) int {
		if reach[a] != reach[b] {
			return reach[b] - reach[a]
		}
		if straight {
			return b2i(wanted(y.s.Next[b].To)) - b2i(wanted(y.s.Next[a].To))
		}
		return 0
	})
	for _, i := range order {
		if y.follow(off, i) {
			return y.selected(h, off)
		}
	}
	if len(order) == 0 {
		// Nothing wanted ahead: stop, or go on to a header the class allows.
		var allowed []int
		for _, i := range edges {
			if t := y.s.Next[i].To; !y.isPlaced(t) && (!forbidden(t) || (y.cut && y.wantedPlaced())) {
				allowed = append(allowed, i)
			}
		}
		stopFirst := y.rnd.IntN(4) == 0 && !(y.cut && y.wantedPlaced())
		if stopFirst && y.stop(h, off) {
			return -1
		}
		for _, i := range shuffled(y.rnd, allowed) {
			if y.follow(off, i) {
				return y.selected(h, off)
			}
		}
	}
	y.stop(h, off)
	return y.selected(h, off) // whatever the pinned bits select
}

// wantedFrom counts the wanted headers the parse graph reaches from t
// (t included) through headers that are neither forbidden nor placed.
func (y *synth) wantedFrom(t int, wanted, forbidden func(int) bool) int {
	seen := map[int]bool{t: true}
	todo := []int{t}
	n := 0
	for len(todo) > 0 {
		x := todo[0]
		todo = todo[1:]
		if wanted(x) {
			n++
		}
		for _, i := range y.edgesFrom(x) {
			if u := y.s.Next[i].To; !seen[u] && !y.isPlaced(u) && !forbidden(u) {
				seen[u] = true
				todo = append(todo, u)
			}
		}
	}
	return n
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func shuffled(rnd *rand.Rand, xs []int) []int {
	xs = slices.Clone(xs)
	rnd.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	return xs
}

// follow sets edge's select field so that the parser takes it, keeping
// pinned bits, and reports whether it managed (an earlier edge may match
// the same value; then free bits outside the edge's mask are redrawn).
func (y *synth) follow(off, edge int) bool {
	e := &y.s.Next[edge]
	w := y.s.Headers[e.From].Fields[e.Field].Width
	want := e.Value.And(e.Mask)
	if !want.And(packet.Mask(w).Not()).IsZero() {
		return false // the edge's value does not fit its field
	}
	pv, pm := y.pin(e.From, e.Field)
	if !pv.Xor(want).And(pm).And(e.Mask).IsZero() {
		return false // the class pins the field to something else
	}
	old := y.getField(off, e.From, e.Field)
	v := old
	for try := 0; try < 16; try++ {
		y.setField(e.From, off, e.Field, v.And(e.Mask.Not()).Or(want))
		if y.firstMatch(e.From, off) == edge {
			return true
		}
		v = y.overlay(e.From, e.Field, y.random(w))
	}
	y.setField(e.From, off, e.Field, old)
	return false
}

// firstMatch is the index of the edge the parser takes after h, or -1.
func (y *synth) firstMatch(h, off int) int {
	for _, i := range y.edgesFrom(h) {
		if y.matches(off, i) {
			return i
		}
	}
	return -1
}

// stop redraws the free bits of h's select fields until no edge matches,
// and reports whether it managed.
func (y *synth) stop(h, off int) bool {
	var fields []int
	for _, i := range y.edgesFrom(h) {
		if f := y.s.Next[i].Field; !slices.Contains(fields, f) {
			fields = append(fields, f)
		}
	}
	old := make([]packet.Value, len(fields))
	for i, f := range fields {
		old[i] = y.getField(off, h, f)
	}
	for try := 0; try < 32; try++ {
		if y.firstMatch(h, off) < 0 {
			return true
		}
		for _, f := range fields {
			y.setField(h, off, f, y.overlay(h, f, y.random(y.s.Headers[h].Fields[f].Width)))
		}
	}
	for i, f := range fields {
		y.setField(h, off, f, old[i])
	}
	return false
}

// --- payload, lengths, checksums, truncation ---

// lengthField is a length the frame must agree with: ipv4.total_len counts
// from the IPv4 header's start, ipv6.payload_len and udp.length as named.
type lengthField struct {
	header, field string
	// afterHeader: the length counts from the end of the header (IPv6).
	afterHeader bool
	// ip: the length ends the IP datagram, and so what an L4 length and
	// checksum cover.
	ip bool
}

// lengthFields are outermost first.
var lengthFields = []lengthField{
	{"ipv4", "total_len", false, true},
	{"ipv6", "payload_len", true, true},
	{"udp", "length", false, false},
}

// lengthRef resolves l in the schema and in the frame.
func (y *synth) lengthRef(l lengthField) (pl placed, f int, ok bool) {
	spec, ok := y.s.Header(l.header)
	if !ok || spec.Metadata {
		return placed{}, 0, false
	}
	f, ok = spec.Field(l.field)
	if !ok || spec.Fields[f].Variable() {
		return placed{}, 0, false
	}
	for _, p := range y.placed {
		if p.h == spec.ID {
			return p, f, true
		}
	}
	return placed{}, 0, false
}

// payload appends the bytes after the last header: as many as a length
// field the class pins asks for (innermost first), else 0..64 random.
func (y *synth) payload() {
	n := y.rnd.IntN(maxPayload + 1)
	for i := len(lengthFields) - 1; i >= 0; i-- {
		pl, f, ok := y.lengthRef(lengthFields[i])
		if !ok {
			continue
		}
		pv, pm := y.pin(pl.h, f)
		if pm != packet.Mask(y.s.Headers[pl.h].Fields[f].Width) {
			continue
		}
		from := pl.off
		if lengthFields[i].afterHeader {
			from += pl.len
		}
		need := int(pv.Lo) - (len(y.buf) - from)
		if pv.Hi == 0 && pv.Lo <= 1<<20 && need >= 0 && need <= maxPinnedPayload {
			n = need
			break
		}
	}
	y.buf = append(y.buf, y.randomBytes(n)...)
}

// lengths makes the length fields the class leaves free agree with the
// bytes, outermost first: an L4 length ends where the IP length says.
func (y *synth) lengths() {
	end := len(y.buf)
	for _, l := range lengthFields {
		pl, f, ok := y.lengthRef(l)
		if !ok {
			continue
		}
		from := pl.off
		if l.afterHeader {
			from += pl.len
		}
		w := y.s.Headers[pl.h].Fields[f].Width
		v := y.overlay(pl.h, f, packet.V(uint64(max(end-from, 0))).And(packet.Mask(w)))
		y.setField(pl.h, pl.off, f, v)
		if l.ip && v.Hi == 0 && from+int(v.Lo) <= end && from+int(v.Lo) >= pl.off+pl.len {
			end = from + int(v.Lo) // the IP datagram ends here
		}
	}
}

// checksums computes every checksum in the frame, innermost first (an
// outer message checksum covers the inner one), then corrupts those the
// class wants bad, or now and then one it does not care about. Pinned
// checksum bits are kept; when they make the checksum other than the class
// asks, a free 16-bit word it covers is adjusted instead. Over IPv4, a
// wanted-good optional checksum (UDP) is sometimes left zero, "not
// computed".
func (y *synth) checksums() {
	p := y.pkt
	y.parse(y.buf)
	var hs []int
	for _, h := range y.s.Headers {
		if h.Checksum >= 0 && h.Checksum < len(h.Fields) && !h.Metadata && p.Valid(h.ID) {
			hs = append(hs, h.ID)
		}
	}
	slices.SortStableFunc(hs, func(a, b int) int { return p.Hdr[b].Off - p.Hdr[a].Off })
	var done []int
	for _, h := range hs {
		good, constrained := y.csumOK(h)
		if !constrained {
			good = y.rnd.IntN(5) != 0
		}
		y.checksum(p, h, good)
		if v, wf := p.VerifyChecksum(h); constrained && (v && wf) != good {
			y.compensate(p, h, done, good)
		}
		done = append(done, h)
	}
	y.buf = slices.Clone(p.Data)
}

// checksum sets header h's checksum field good or bad, keeping the bits
// the class pins.
func (y *synth) checksum(p *packet.Packet, h int, good bool) {
	spec := y.s.Headers[h]
	field := packet.FieldRef{Header: h, Field: spec.Checksum}
	w := spec.Fields[spec.Checksum].Width
	pv, pm := y.pin(h, spec.Checksum)
	if pm == packet.Mask(w) {
		return
	}
	if good && spec.ChecksumOptional && pv.IsZero() && y.rnd.IntN(8) == 0 {
		p.Set(field, packet.Value{})
		if v, wf := p.VerifyChecksum(h); v && wf {
			return
		}
	}
	before, _ := p.Get(field)
	if !p.ComputeChecksum(h) {
		p.Set(field, before) // lengths that cannot be: keep the bits
		return
	}
	cv, _ := p.Get(field)
	p.Set(field, y.overlay(h, spec.Checksum, cv))
	if v, wf := p.VerifyChecksum(h); good || !v || !wf {
		return
	}
	// Corrupt: flip a free bit. One flip changes the one's-complement sum
	// by ±2^k, never to an equivalent value; only an optional checksum
	// turning zero ("not computed") would still pass.
	cv, _ = p.Get(field)
	for _, b := range y.rnd.Perm(w) {
		if pm.Bit(b) {
			continue
		}
		p.Set(field, cv.Xor(packet.V(0).SetBit(b, true)))
		if v, _ := p.VerifyChecksum(h); !v {
			return
		}
		p.Set(field, cv)
	}
}

// compensate makes header h's checksum valid (or not, as good says)
// without touching its checksum field, whose bits the class pins: it
// rewrites one 16-bit word the checksum covers and nothing else depends
// on, a word of payload or of a free field of h. done are the checksums
// already final, which the word must stay out of.
func (y *synth) compensate(p *packet.Packet, h int, done []int, good bool) {
	spec := y.s.Headers[h]
	field := packet.FieldRef{Header: h, Field: spec.Checksum}
	if spec.Fields[spec.Checksum].Width != 16 {
		return
	}
	for _, off := range y.freeWords(p, h, done) {
		old := [2]byte{p.Data[off], p.Data[off+1]}
		p.Data[off], p.Data[off+1] = 0, 0
		pinned, _ := p.Get(field)
		if !p.ComputeChecksum(h) {
			p.Set(field, pinned)
			p.Data[off], p.Data[off+1] = old[0], old[1]
			return
		}
		// ComputeChecksum wrote c0 = ~S for the sum S of the covered data
		// with the field and the word zero; the word must bring
		// S + pinned + word to one's-complement zero.
		c0, _ := p.Get(field)
		p.Set(field, pinned)
		sum := uint32(^uint16(c0.Lo)) + uint32(uint16(pinned.Lo))
		word := ^uint16(sum&0xffff + sum>>16)
		if !good {
			word ^= 1
		}
		p.Data[off], p.Data[off+1] = byte(word>>8), byte(word)
		if v, wf := p.VerifyChecksum(h); wf && v == good {
			return
		}
		p.Data[off], p.Data[off+1] = old[0], old[1]
	}
}

// freeWords lists the frame offsets of 16-bit words (aligned from h's
// start, as the checksum sums them) that h's checksum covers and that
// nothing else reads: payload after the last header, unless an inner
// message or L4 checksum covers it too; then words of h made only of
// fields the class leaves free and that no parse edge, length, checksum or
// final checksum depends on.
func (y *synth) freeWords(p *packet.Packet, h int, done []int) []int {
	spec := y.s.Headers[h]
	hoff := p.Hdr[h].Off
	var out []int
	if spec.ChecksumKind != packet.ChecksumHeader && !slices.ContainsFunc(done, func(d int) bool {
		return y.s.Headers[d].ChecksumKind != packet.ChecksumHeader
	}) {
		end := 0
		for i, st := range p.Hdr {
			if st.Valid && !y.s.Headers[i].Metadata {
				end = max(end, st.Off+st.Len)
			}
		}
		for q := end + (end-hoff)%2; q+1 < len(p.Data) && len(out) < 4; q += 2 {
			out = append(out, q)
		}
	}
	var words []int
	for k := 0; k+1 < spec.FixedBytes(); k += 2 {
		free := true
		for i, f := range spec.Fields {
			if f.Variable() || f.Offset >= 8*k+16 || f.Offset+f.Width <= 8*k {
				continue
			}
			if y.structural(packet.FieldRef{Header: h, Field: i}, done) {
				free = false
				break
			}
		}
		if free {
			words = append(words, hoff+k)
		}
	}
	return append(out, shuffled(y.rnd, words)...)
}

// structural reports whether changing field f could change more than the
// checksum being fixed: the class pins bits of it, or it selects the next
// header, holds a length, is a checksum, or a final checksum covers it.
func (y *synth) structural(f packet.FieldRef, done []int) bool {
	spec := y.s.Headers[f.Header]
	if _, pm := y.pin(f.Header, f.Field); !pm.IsZero() || f.Field == spec.Checksum {
		return true
	}
	for _, e := range y.s.Next {
		if e.From == f.Header && e.Field == f.Field {
			return true
		}
	}
	for _, l := range lengthFields {
		if spec.Name == l.header && spec.Fields[f.Field].Name == l.field {
			return true
		}
	}
	for _, h := range y.s.Headers {
		if h.Checksum >= 0 && f.Header == h.ID && f.Field == h.Checksum {
			return true
		}
		if len(h.Fields) > 0 && h.Fields[len(h.Fields)-1].Variable() {
			reads := false
			walkExpr(h.Fields[len(h.Fields)-1].Length, func(e *packet.Expr) {
				reads = reads || (e.Kind == packet.EField && e.Field == f)
			})
			if reads {
				return true
			}
		}
	}
	for _, d := range done {
		if y.s.ChecksumCovers(d, f) {
			return true
		}
	}
	return false
}

// cutTarget is the header to cut: the first one after every header the
// class wants valid, so those stay valid; -1 if there is none.
func (y *synth) cutTarget() int {
	first := 0
	for i, pl := range y.placed {
		if v, ok := y.valid(pl.h); ok && v {
			first = i + 1
		}
	}
	if first >= len(y.placed) {
		return -1
	}
	return first
}

// truncate cuts the frame inside a header so that parsing from start
// fails: the cut target or a header after it, as long as no header the
// class wants invalid stays whole before the cut. If every header is
// wanted valid, the last one is cut anyway when the class says
// parsed(start) is false.
func (y *synth) truncate() {
	i := y.cutTarget()
	if i < 0 {
		if !y.mustCut || len(y.placed) == 0 {
			return
		}
		i = len(y.placed) - 1
	}
	last := i
	for j := i; j+1 < len(y.placed); j++ {
		if v, ok := y.valid(y.placed[j].h); ok && !v {
			break
		}
		last = j + 1
	}
	pl := y.placed[i+y.rnd.IntN(last-i+1)]
	for _, n := range []int{pl.off + y.rnd.IntN(max(pl.len, 1)), pl.off, 0} {
		n = min(n, len(y.buf))
		if !y.parse(y.buf[:n]) {
			y.buf = y.buf[:n]
			return
		}
	}
}

// Mutations returns malformed variants of a frame for robustness runs:
// every truncation to fewer than 64 bytes and n random longer ones, n
// single-bit flips, and n strings of random bytes of random length (up to
// the frame's length plus 64). Each variant is a fresh slice. A nil rnd
// uses a fixed seed.
func Mutations(frame []byte, rnd *rand.Rand, n int) [][]byte {
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(1, 2))
	}
	n = max(n, 0)
	var out [][]byte
	for k := 0; k < min(64, len(frame)); k++ {
		out = append(out, slices.Clone(frame[:k]))
	}
	if len(frame) > 64 {
		for range n {
			k := 64 + rnd.IntN(len(frame)-64)
			out = append(out, slices.Clone(frame[:k]))
		}
	}
	if len(frame) > 0 {
		for range n {
			b := slices.Clone(frame)
			i := rnd.IntN(len(b) * 8)
			b[i/8] ^= 0x80 >> (i % 8)
			out = append(out, b)
		}
	}
	for range n {
		b := make([]byte, rnd.IntN(len(frame)+65))
		for i := range b {
			b[i] = byte(rnd.UintN(256))
		}
		out = append(out, b)
	}
	return out
}
