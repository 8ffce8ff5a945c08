// Package golang generates a Go fast path from a graph: one function that
// runs a frame through the graph's nodes as straight-line code, with field
// accesses at constant offsets, table lookups on the lock-free runtime
// tables of package packet, and the packet runtime's checksum, push and pop
// operations. The generated code behaves as the interpreter (sim) does on the
// same graph, counters included; the differential tests hold it to that.
//
// The graph must be single-path: no spawn edges and no port with more than
// one target, so that one frame follows one path and ends once. Embedded
// graphs of a host PRG are (the LPG's own shape decides).
package golang

import (
	"bytes"
	"fmt"
	"go/format"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Name is the target's name in refusals.
const Name = "go"

// Options control the generated package.
type Options struct {
	// Package is the Go package name (default "fastpath").
	Package string
	// Command is recorded in the header comment: how to regenerate.
	Command string
	// Profile, if any, picks the path laid out first (see Profile).
	Profile Profile
	// Sink, if any, names an Rx sink of an embedded graph's PRG part
	// (RxSocket): the package runs the graph from there on, on frames as
	// the device hands them over, where Pipeline.At says it left their
	// headers, trusting the device's decisions before it
	// (docs/golang.md, "From a sink").
	Sink string
}

// Generate returns the gofmt'ed source of a Go package that runs g.
func Generate(g *dataflow.Graph, opt Options) ([]byte, error) {
	if opt.Package == "" {
		opt.Package = "fastpath"
	}
	srcs := g.Sources()
	if len(srcs) == 0 {
		return nil, backends.Refuse(Name, nil, "graph %s has no source", g.Name)
	}
	start := srcs[0]
	if opt.Sink != "" {
		if start = g.Node(opt.Sink); start == nil || start.Kind != dataflow.FNode || len(start.Ports) != 1 {
			return nil, backends.Refuse(Name, nil, "graph %s has no node %s with one port to start from", g.Name, opt.Sink)
		}
		if len(g.Schema.Headers) > fastpath.MaxHeaders {
			return nil, backends.Refuse(Name, nil, "graph %s has %d headers; a pipeline from a sink takes at most %d", g.Name, len(g.Schema.Headers), fastpath.MaxHeaders)
		}
	}
	prog, err := lower.LowerFrom(g, Name, start)
	if err != nil {
		return nil, err
	}
	c := &gen{g: g, s: g.Schema, updVar: map[string]string{}, start: prog.Start, prof: opt.Profile, fromSink: opt.Sink != "", read: map[int]bool{}}
	c.w = lower.NewWalker(prog, c, Name)
	// From the graph's source even when the code starts at a sink: what
	// the device's part leaves valid there is what the code starts with.
	c.w.AnalyzeFrom(srcs[0], 16) // paths kept apart: fewer checks
	c.body()
	if c.fromSink {
		b := bytes.Replace(c.b.Bytes(), []byte(atCheck), []byte(c.atCondition()), 1)
		c.b.Reset()
		c.b.Write(b)
	}
	if c.w.Refused != nil {
		return nil, c.w.Refused.Err()
	}
	return c.file(opt)
}

// The Go fast path holds keyed state and runs RoCE's operations.
var (
	_ lower.PlaceSyntax = (*gen)(nil)
	_ lower.RoCEDialect = (*gen)(nil)
)

type gen struct {
	g     *dataflow.Graph
	w     *lower.Walker // the lowered graph, printed through this dialect
	s     *packet.Schema
	start *dataflow.Node
	b     bytes.Buffer // Process's body
	vars  bytes.Buffer // package-level variables the body uses
	tmp   int

	updVar   map[string]string
	maxKeys  int
	usesBits bool // math/bits

	// hdrs is a stack of scopes: header index -> variable holding its bytes.
	hdrs []map[int]string
	// parsed are the headers an unrolled parse extracted on the way to
	// what it prints now (parseFrom).
	parsed []int
	// parseVar names an unrolled parse's result.
	parseVar string

	owner    *dataflow.Node // the F-node being generated
	counters int            // edge counters placed
	runsCode string         // the function solving for node runs
	mal      string         // the node being generated, where malformed packets end
	setOld   setOld         // what a summed set's Old left for Accumulate
	prof     Profile        // node runs that pick the hot path
	fromSink bool           // start is a PRG's Rx sink: headers from Pipeline.At
	read     map[int]bool   // headers whose bytes the code reads (hdr)
}

// there reports whether wire header h is known valid where the code
// printed now runs (lower's Walker.Known, or an unrolled parse's headers
// on the way, parsed): its checks can go.
func (c *gen) there(h int) bool {
	return slices.Contains(c.parsed, h) || c.w.Known(h) == lower.KnownValid
}

func (c *gen) emit(format string, args ...any) {
	fmt.Fprintf(&c.b, format, args...)
	c.b.WriteByte('\n')
}

// capture returns what emitting does write, leaving it out of the code.
func (c *gen) capture(emitting func()) []byte {
	at := c.b.Len()
	emitting()
	out := bytes.Clone(c.b.Bytes()[at:])
	c.b.Truncate(at)
	return out
}

func (c *gen) newTmp(prefix string) string {
	c.tmp++
	return fmt.Sprintf("%s%d", prefix, c.tmp)
}

// update returns the name of a package variable holding a header list.
func (c *gen) update(hs []int) string {
	if len(hs) == 0 {
		return "nil"
	}
	key := fmt.Sprint(hs)
	if v, ok := c.updVar[key]; ok {
		return v
	}
	v := fmt.Sprintf("update%d", len(c.updVar))
	c.updVar[key] = v
	var names []string
	for _, h := range hs {
		names = append(names, c.s.Headers[h].Name)
	}
	fmt.Fprintf(&c.vars, "var %s = []int{%s} // %s\n", v, joinInts(hs), strings.Join(names, ", "))
	return v
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ", ")
}

// body generates Process's statements: the start node, then every F-node
// a jump leads to, in topological order, each behind its label.
func (c *gen) body() {
	code, targets, live := c.w.Print(func(b *lower.Block) {
		n := b.Node
		c.b.Reset()
		c.owner = n
		c.emit("{ // %s: %s", n.Name, n.Op.Describe(c.s))
		c.hdrs = []map[int]string{{}}
		c.mal = n.Name
		if n == c.start && c.fromSink {
			c.checkAt()
		}
		if c.flushBefore(n) {
			c.patchPending()
		}
	}, func(*lower.Block) []byte {
		c.emit("}")
		return bytes.Clone(c.b.Bytes())
	})
	// The hot path first (profile.go), then the general code: every node
	// a jump leads to, behind its label nN.
	hot := c.hotPath(c.prof, targets)
	c.runsCode = c.placeCounters(code, live, hot)
	c.b.Reset()
	general := map[*dataflow.Node]bool{}
	for todo := c.writeHot(hot, code, targets); len(todo) > 0; {
		n := todo[0]
		todo = todo[1:]
		if !general[n] {
			general[n] = true
			todo = append(todo, targets[n]...)
		}
	}
	for _, n := range c.g.Order() {
		if !general[n] || code[n] == nil {
			continue
		}
		if n != c.start {
			fmt.Fprintf(&c.b, "n%d:\n", n.ID)
		}
		c.b.Write(generalCode(code[n]))
	}
}

// The generated code keeps the packet's state in locals (stateDecls): a
// wire header's state is one int, hN, its offset, -1 when it is not valid
// (a valid header's offset is never negative), plus hNlen for a header of
// variable size; a metadata field of at most 64 bits is a uint64 mN; the
// frame is data, the parse cursor cur. Few locals keep the register
// allocator's work at the many joins of the graph small. The packet
// runtime's calls read and write the packet.Packet, so the frame, cursor
// and header states are written back before one (syncState) and read
// again after it (reloadState).

// variable reports whether header h has a variable-size part.
func (c *gen) variable(h int) bool {
	fs := c.s.Headers[h].Fields
	return fs[len(fs)-1].Variable()
}

// hPresent is the condition that header h is valid.
func (c *gen) hPresent(h int) string { return fmt.Sprintf("(h%d >= 0)", h) }

// hOff is header h's offset in data (valid headers only).
func (c *gen) hOff(h int) string { return fmt.Sprintf("h%d", h) }

// hLen is header h's length: a local for a variable-size header, else a
// constant.
func (c *gen) hLen(h int) string {
	if c.variable(h) {
		return fmt.Sprintf("h%dlen", h)
	}
	return fmt.Sprint(c.s.Headers[h].FixedBytes())
}

// hSet is the statement that makes header h valid at off with length n.
func (c *gen) hSet(h int, off, n string) string {
	if c.variable(h) {
		return fmt.Sprintf("h%d, h%dlen = %s, %s", h, h, off, n)
	}
	return fmt.Sprintf("h%d = %s", h, off)
}

// hClear is the statement that makes header h invalid.
func (c *gen) hClear(h int) string { return fmt.Sprintf("h%d = -1", h) }

// call generates a call of the packet runtime (an expression over p) with
// the locals written back before and read again after; it returns the
// variable holding its bool result.
func (c *gen) call(expr string) string {
	v := c.newTmp("rt")
	c.patchPending() // the runtime sees the packet as it is
	c.syncState()
	c.emit("%s := %s", v, expr)
	c.reloadState()
	return v
}

// syncState writes the locals back into the packet before a runtime call.
// Metadata is always valid; its fields, the mN, are neither written back
// nor read again: no runtime call reads or writes them (they parse, push,
// pop and patch headers).
//
// After a place completed, data is the event, outside buf: the packet's
// buffer is then a copy of it with headroom, as in the interpreter, so
// that a push in front of it does not run off the array.
func (c *gen) syncState() {
	if len(c.s.States) > 0 {
		c.emit("if !fastpath.Within(buf, data) {")
		c.emit("buf, off, n = fastpath.Rebase(&pl.event, data)")
		c.emit("data = buf[off : off+n]")
		c.emit("}")
	}
	c.emit("p.Load(buf, off, n) // the packet's buffer; its state follows")
	c.emit("p.Data, p.Cursor = data, cur")
	for i, h := range c.s.Headers {
		switch {
		case h.Metadata:
			c.emit("p.Hdr[%d] = packet.HeaderState{Valid: true}", i)
		default:
			c.emit("p.Hdr[%d] = packet.HeaderState{}", i)
			c.emit("if h%d >= 0 { p.Hdr[%d] = packet.HeaderState{Off: h%d, Len: %s, Valid: true} }", i, i, i, c.hLen(i))
		}
	}
}

// reloadState reads the locals again after a runtime call.
func (c *gen) reloadState() {
	c.emit("data, cur = p.Data, p.Cursor")
	for i, h := range c.s.Headers {
		switch {
		case h.Metadata:
		case c.variable(i):
			c.emit("h%d, h%dlen = -1, 0", i, i)
			c.emit("if p.Hdr[%d].Valid { h%d, h%dlen = p.Hdr[%d].Off, p.Hdr[%d].Len }", i, i, i, i, i)
		default:
			c.emit("h%d = -1", i)
			c.emit("if p.Hdr[%d].Valid { h%d = p.Hdr[%d].Off }", i, i, i)
		}
	}
}

// stateDecls declares the locals.
func (c *gen) stateDecls() []byte {
	var d bytes.Buffer
	if c.fromSink {
		d.WriteString("at := pl.At\ndata, cur := buf[:cap(buf)][off:off+n], at.Cur\n_ = cur\n")
	} else {
		d.WriteString("data, cur := buf[:cap(buf)][off:off+n], 0\n_ = cur\n")
	}
	for i, h := range c.s.Headers {
		switch {
		case c.fromAt(i) && c.variable(i):
			fmt.Fprintf(&d, "h%d, h%dlen := at.Off[%d], at.Len[%d] // %s\n_, _ = h%d, h%dlen\n", i, i, i, i, h.Name, i, i)
		case c.fromAt(i):
			fmt.Fprintf(&d, "h%d := at.Off[%d] // %s\n_ = h%d\n", i, i, h.Name, i)
		case h.Metadata:
			fmt.Fprintf(&d, "h%d := 0 // %s\n_ = h%d\n", i, h.Name, i)
			for j, f := range h.Fields {
				m := h.MetaBase + j
				if f.Width > 64 {
					fmt.Fprintf(&d, "var m%d packet.Value // %s.%s\n_ = m%d\n", m, h.Name, f.Name, m)
				} else {
					fmt.Fprintf(&d, "var m%d uint64 // %s.%s\n_ = m%d\n", m, h.Name, f.Name, m)
				}
			}
		case c.variable(i):
			fmt.Fprintf(&d, "h%d, h%dlen := -1, 0 // %s\n_, _ = h%d, h%dlen\n", i, i, h.Name, i, i)
		default:
			fmt.Fprintf(&d, "h%d := -1 // %s\n_ = h%d\n", i, h.Name, i)
		}
	}
	if len(c.w.Pops.Defers) > 0 {
		d.WriteString("pendOff, pendN := 0, 0 // bytes a pop left for the next pop to move\n_, _ = pendOff, pendN\n")
	}
	for _, u := range c.w.Pops.Pending {
		fmt.Fprintf(&d, "pendD%d, pendK%d := uint64(0), false // %s checksum: a patch left pending\n_, _ = pendD%d, pendK%d\n", u, u, c.s.Headers[u].Name, u, u)
	}
	return d.Bytes()
}

// fromAt reports whether wire header h may be valid where the code
// starts at a sink, so that it starts where Pipeline.At says.
func (c *gen) fromAt(h int) bool {
	return c.fromSink && !c.s.Headers[h].Metadata && c.w.KnownAt(c.start, h) != lower.KnownInvalid
}

// atCheck stands for checkAt's condition until the body is printed and
// the headers it reads are known (body).
const atCheck = "atCheck()"

// checkAt drops, as malformed, a frame whose At does not fit it: a header
// the code reads and the device always leaves valid that is not, one that
// ends past the frame, a cursor outside it. Past this the code relies on
// At as on its own extractions (a header it never reads may be anywhere:
// pops only move offsets, behind their own bounds checks).
func (c *gen) checkAt() { c.emit("if %s { %s }", atCheck, c.malformed()) }

// atCondition is checkAt's condition.
func (c *gen) atCondition() string {
	var bad []string
	for h := range c.s.Headers {
		if !c.fromAt(h) || !c.read[h] {
			continue
		}
		end := fmt.Sprintf("h%d+%s > len(data)", h, c.hLen(h))
		if c.variable(h) {
			end = fmt.Sprintf("h%dlen < %d || %s", h, c.s.Headers[h].FixedBytes(), end)
		}
		if c.w.KnownAt(c.start, h) == lower.KnownValid {
			bad = append(bad, fmt.Sprintf("h%d < 0 || %s", h, end))
		} else {
			bad = append(bad, fmt.Sprintf("h%d >= 0 && (%s)", h, end))
		}
	}
	return strings.Join(append(bad, "cur < 0 || cur > len(data)"), " || ")
}

func (c *gen) malformed() string {
	return retDrop(c.w.DropEnd(c.owner.ID, c.mal, "malformed"))
}

// The dialect's operations (lower.Dialect): the Walker fires the ports.

func (c *gen) DropUnless(cond string) { c.emit("if !%s { %s }", cond, c.malformed()) }

func (c *gen) Extract(n *dataflow.Node, x *lower.Extract) (string, bool) {
	if c.extractAbsent(n, x) {
		return "", true
	}
	return c.extract(x), false
}

func (c *gen) Assign(a *lower.SetAssign, update []int) { c.assign(a.Assign, update) }

// Push pushes through the packet runtime, which moves the offsets.
func (c *gen) Push(p *lower.Push) {
	off := "0"
	if p.After >= 0 {
		c.DropUnless(c.hPresent(p.After))
		off = c.hOff(p.After) + "+" + c.hLen(p.After)
	}
	c.DropUnless(c.call(fmt.Sprintf("p.Push(%d, %s, %d)", p.H, off, p.Extra)))
}

// Verify generates `checksum verify H` as packet.Packet.VerifyChecksum
// runs it, and where it can without a runtime call (verifyHeader,
// noChecksum).
func (c *gen) Verify(x *lower.Checksum) string {
	if v, ok := c.verifyHeader(x); ok {
		return v
	}
	v := c.newTmp("ok")
	none := c.noChecksum(x)
	if none == "" {
		c.syncState()
		c.emit("%s, wellFormed := p.VerifyChecksum(%d)", v, x.H)
		c.reloadState()
		return v + " && wellFormed"
	}
	c.emit("%s, wellFormed := true, true", v)
	c.emit("if !%s {", none)
	c.syncState()
	c.emit("%s, wellFormed = p.VerifyChecksum(%d)", v, x.H)
	c.reloadState()
	c.emit("}")
	return v + " && wellFormed"
}

// noChecksum generates, for an L4 checksum that may be absent over IPv4
// (UDP's), the condition that header h is valid behind a valid IPv4
// header, lies within the IPv4 length, and carries no checksum (0): what
// packet.Packet.VerifyChecksum accepts without summing. A socket's
// datagrams come so (the kernel checked them) and skip the runtime call.
// It returns "" for other checksums.
func (c *gen) noChecksum(x *lower.Checksum) string {
	h, ip := x.H, x.Absent
	if ip == nil || ip.H == h || !x.Pseudo {
		return ""
	}
	total := packet.FieldRef{Header: ip.H, Field: ip.Length}
	if !c.s.ChecksumCovers(h, total) {
		return ""
	}
	none := c.newTmp("none")
	c.emit("%s := false", none)
	c.emit("if %s && %s && %s < %s {", c.hPresent(h), c.hPresent(ip.H), c.hOff(ip.H), c.hOff(h))
	c.PushScope()
	c.parsed = []int{h, ip.H}
	end, sum := c.newTmp("end"), c.readField(packet.FieldRef{Header: h, Field: x.Spec.Checksum}, false)
	c.emit("%s := %s + int(%s)", end, c.hOff(ip.H), c.readField(total, false))
	c.parsed = nil
	c.emit("%s = %s <= len(data) && %s >= %s+%s && %s == 0", none, end, end, c.hOff(h), c.hLen(h), sum)
	c.PopScope()
	c.emit("}")
	return none
}

// Place generates a lowered place (lower.Place): the key, the event
// length and the offset evaluated (a 128-bit value saturated to 64 bits),
// the payload at the cursor, the state's runtime (fastpath.State) picking
// the port; on complete the packet is the event: no header valid, the
// cursor at 0, the metadata kept.
func (c *gen) Place(pl *lower.Place) (string, bool) {
	def := pl.Def
	if len(def.Keys) > fastpath.MaxStateKeys {
		c.w.Refuse(c.owner, "place %s: a key of %d expressions; the Go runtime takes at most %d", def.Name, len(def.Keys), fastpath.MaxStateKeys)
		return "", false
	}
	k := c.newTmp("key")
	c.emit("var %s fastpath.StateKey", k)
	for i, e := range def.Keys {
		if pl.Wide[i] {
			v := c.newTmp("kv")
			c.emit("%s := %s", v, c.Value(e))
			c.emit("%s[%d], %s[%d] = %s.Hi, %s.Lo", k, 2*i, k, 2*i+1, v, v)
		} else {
			c.emit("%s[%d] = %s", k, 2*i+1, c.U64(e))
		}
	}
	length, offset := c.saturated(pl.Length), c.saturated(pl.Offset)
	rest, size := c.newTmp("rest"), c.newTmp("size")
	c.emit("%s := uint64(max(len(data)-cur, 0))", rest)
	if pl.Size != nil {
		sz := c.saturated(pl.Size)
		if pl.Size.Kind == packet.EConst { // else an untyped constant binds as an int
			sz = "uint64(" + sz + ")"
		}
		c.emit("%s := %s", size, sz)
		c.emit("if %s > %s { %s }", size, rest, c.malformed())
	} else {
		c.emit("%s := %s", size, rest)
	}
	c.patchPending() // the payload is read as it is
	port, ev := c.newTmp("port"), c.newTmp("ev")
	c.emit("%s, %s := pl.states[%d].Place(&%s, %s, %s, data[cur:cur+int(%s)])", port, ev, pl.State, k, length, offset, size)
	c.emit("if %s == %d { // the packet is the event now", port, packet.PlaceComplete)
	c.emit("data, cur = %s, 0", ev)
	for h, hs := range c.s.Headers {
		if !hs.Metadata {
			c.emit("%s", c.hClear(h))
		}
	}
	c.emit("}")
	return port, true
}

func (c *gen) PortSwitch(port string) { c.emit("switch %s {", port) }

func (c *gen) PortCase(i int, last bool) {
	if last {
		c.emit("default:")
	} else {
		c.emit("case %d:", i)
	}
}

func (c *gen) EndPortSwitch() { c.emit("}") }

// saturated evaluates e as a uint64, a 128-bit value above 64 bits as the
// largest one (the interpreter's rule for lengths and offsets).
func (c *gen) saturated(e *packet.Expr) string {
	if !flow.IsWide(e) {
		return c.U64(e)
	}
	v := c.newTmp("w")
	c.emit("%s := %s", v, c.Value(e))
	return fmt.Sprintf("fastpath.Saturated(%s)", v)
}

func (c *gen) Compute(x *lower.Checksum) {
	c.DropUnless(c.call(fmt.Sprintf("p.ComputeChecksum(%d)", x.H)))
}

// VerifyICRC generates `checksum verify icrc H` as a call of the packet
// runtime (packet.Packet.VerifyICRC) on the packet as it is.
func (c *gen) VerifyICRC(x *lower.ICRC) string {
	v, wf := c.newTmp("ok"), c.newTmp("wellFormed")
	c.patchPending()
	c.syncState()
	c.emit("%s, %s := p.VerifyICRC(%d)", v, wf, x.H)
	c.reloadState()
	return v + " && " + wf
}

// ComputeICRC generates `checksum compute icrc H` (packet.Packet.ComputeICRC).
func (c *gen) ComputeICRC(x *lower.ICRC) {
	c.DropUnless(c.call(fmt.Sprintf("p.ComputeICRC(%d)", x.H)))
}

// Register generates a lowered load or store as a call of the
// register's runtime (table.Register) with the key evaluated and the
// value header's fields, the metadata locals, copied out or in.
func (c *gen) Register(r *lower.Register) string {
	h := r.Value
	k, v, ok := c.newTmp("rk"), c.newTmp("rv"), c.newTmp("ok")
	c.emit("var %s packet.RegisterKey", k)
	for i, e := range r.Def.Keys {
		if r.KeyWide[i] {
			c.emit("%s[%d] = %s", k, i, c.Value(e))
		} else {
			c.emit("%s[%d] = packet.V(%s)", k, i, c.U64(e))
		}
	}
	c.emit("var %s [%d]packet.Value", v, len(h.Fields))
	if !r.Load {
		for j := range h.Fields {
			if r.FieldWide[j] {
				c.emit("%s[%d] = m%d", v, j, h.MetaBase+j)
			} else {
				c.emit("%s[%d] = packet.V(m%d)", v, j, h.MetaBase+j)
			}
		}
		c.emit("%s := pl.regs[%d].Store(&%s, %s[:])", ok, r.Reg, k, v)
		return ok
	}
	c.emit("%s := pl.regs[%d].Load(&%s, %s[:])", ok, r.Reg, k, v)
	for j := range h.Fields {
		if r.FieldWide[j] {
			c.emit("m%d = %s[%d]", h.MetaBase+j, v, j)
		} else {
			c.emit("m%d = %s[%d].Lo", h.MetaBase+j, v, j)
		}
	}
	return ok
}

// Cut generates `cut` as the packet runtime does it (packet.Packet.Cut).
func (c *gen) Cut() {
	c.patchPending()
	c.syncState()
	c.emit("p.Cut()")
	c.reloadState()
}

// verifyHeader generates `checksum verify` of a checksum over its own
// header's bytes (the IPv4 header's) as packet.Packet.VerifyChecksum does
// it, with a call of packet.Sum rather than of the runtime, which would
// write the packet's whole state back and read it again; false for other
// checksums and for one a zero may leave absent (lower.Checksum.Absent).
func (c *gen) verifyHeader(x *lower.Checksum) (string, bool) {
	h := x.H
	if !x.Own || x.Absent != nil {
		return "", false
	}
	v := c.newTmp("ok")
	c.emit("%s := false", v)
	valid := ""
	if !c.there(h) {
		valid = c.hPresent(h) + " && "
	}
	c.emit("if %s%s+%s <= len(data) {", valid, c.hOff(h), c.hLen(h))
	c.emit("%s = packet.Fold(packet.Sum(data[%s:%s+%s], 0)) == 0", v, c.hOff(h), c.hOff(h), c.hLen(h))
	c.emit("}")
	return v, true
}

func (c *gen) If(cond string) { c.emit("if %s {", cond) }
func (c *gen) EndIf()         { c.emit("}") }

// The ways out of a block (lower.Walker.Exit).

func (c *gen) Decided(h *lower.Hop, edge string) {
	c.emit("%s// decided %s %s", edge, h.Node.Name, h.Port)
}

func (c *gen) Goto(e *lower.Exit, edge string) { c.emit("%sgoto n%d", edge, e.To.ID) }

func (c *gen) Sink(e *lower.Exit, sink int) {
	if !e.Own {
		c.patchPending() // an emit node patched before its operation
	}
	c.emit("return pl.sink(%d, data)", sink)
}

func (c *gen) Drop(_ *lower.Exit, drop int) { c.emit("%s", retDrop(drop)) }

func (c *gen) Undecided(_ *lower.Exit, why, edge string, drop int) {
	if why != "" {
		why = " // " + why
	}
	c.emit("%s%s%s", edge, retDrop(drop), why)
}

// A switch compares its value, wide or a word, case by case.

func (c *gen) Switch(sw *lower.Switch) {
	sw.Var, _ = c.w.Var("v", sw.Node.Op.Expr)
	c.emit("switch {")
}

func (c *gen) Case(sw *lower.Switch, _ int, v packet.Value) {
	if sw.Wide {
		c.emit("case %s == %s:", sw.Var, valueLit(v))
	} else {
		c.emit("case %s == %#x:", sw.Var, v.Lo)
	}
}

func (c *gen) Default(*lower.Switch)   { c.emit("default:") }
func (c *gen) EndSwitch(*lower.Switch) { c.emit("}") }

// Lookup looks a table's keys up (lower.Lookup).
func (c *gen) Lookup(n *dataflow.Node, l *lower.Lookup) {
	c.emit("act, params := %d, []packet.Value(%s)", l.Def.Default, c.defaultParams(l.Table))
	if l.InWords {
		c.lookupWords(n, l)
		return
	}
	c.keys(l)
	c.emit("if e, hit := pl.tables[%d].Lookup(pl.keys[:%d]); hit {", l.Table, len(l.Keys))
	c.emit("act, params = e.Action, e.Params")
	c.emit("}")
	c.w.Actions(n, l)
}

// lookupWords looks a table's keys up as 64-bit words, a wide key's two
// (high first), probing the table's structures inline where it has one
// generated code can read (table.Probes: the accessor is small enough for
// Go to inline even here) and calling the table's word lookup where it has
// not.
func (c *gen) lookupWords(n *dataflow.Node, l *lower.Lookup) {
	t := l.Table
	var ws []string
	for _, k := range l.Keys {
		v := c.newTmp("kw")
		if k.Words == 1 {
			c.emit("%s := (%s)%s", v, c.low(k.Expr), maskTo(k.Expr, k.Width))
			ws = append(ws, v)
			continue
		}
		c.emit("%s := %s", v, c.Value(k.Expr))
		ws = append(ws, fmt.Sprintf("%s.Hi%s", v, maskSuffix(k.Width-64)), v+".Lo")
	}
	// On the hot path, an index's hit runs the action's code where it
	// hits: no join of every probe's results before the switch.
	acts := c.capture(func() { c.w.Actions(n, l) })
	hit := func(slot string) {
		c.emit("if %s.Entry != 0 {", slot)
		c.emit("act, params = int(%s.Action), %s.Params", slot, slot)
		c.emit("%s", hotOpen)
		c.b.Write(acts)
		c.emit("%s", hotClose)
		c.emit("}")
	}
	// One load of the table's snapshot serves every probe.
	pr := c.newTmp("pr")
	c.emit("%s := pl.tables[%d].Probes()", pr, t)
	var fallback string
	if l.Packed {
		// All keys packed in one word: one probe for exact tables and for
		// priority tables whose entries share their masks.
		var parts []string
		for i := len(ws) - 1; i >= 0; i-- {
			parts = append(parts, fmt.Sprintf("%s<<%d", ws[i], l.Keys[i].Shift))
		}
		if len(parts) == 0 {
			parts = []string{"uint64(0)"} // a table without keys
		}
		k, pi := c.newTmp("k"), c.newTmp("pi")
		c.emit("%s := %s", k, strings.Join(parts, " | "))
		c.emit("if %s := &%s.Packed; len(%s.Slots) > 0 {", pi, pr, pi)
		c.emit("%s &= %s.Mask", k, pi)
		// The first probe outside the loop, which only collisions enter:
		// a loop on the way costs the register allocator's moves.
		c.emit("m, j := uint64(len(%s.Slots)-1), table.PackedHash(%s)>>(%s.Shift&63)", pi, k, pi)
		c.emit("sl := &%s.Slots[j]", pi)
		c.emit("for sl.Entry != 0 && sl.Key != %s { j = (j + 1) & m; sl = &%s.Slots[j] }", k, pi)
		hit("sl")
		fallback = fmt.Sprintf("pl.tables[%d].LookupWordAction(%s)", t, k)
	} else {
		// At most MaxKeyWords words: one probe for exact tables, lpm tables
		// of one prefix length and priority tables whose entries share
		// their masks.
		wl, h := c.newTmp("wl"), c.newTmp("h")
		masked := make([]string, packet.MaxKeyWords)
		c.emit("if %s := &%s.Words; len(%s.Slots) > 0 {", wl, pr, wl)
		for i := range masked {
			masked[i] = "0" // past the key's words
			if i < len(ws) {
				masked[i] = c.newTmp("x")
				c.emit("%s := %s & %s.Mask[%d]", masked[i], ws[i], wl, i)
			}
		}
		all := strings.Join(masked, ", ")
		c.emit("%s := table.WordsHash(%s)", h, all)
		// Shift is below 64; saying so spares Go's test for a wider one.
		// The first probe outside the loop, as for Packed. A slot holds
		// the key words a hit compares (zeros past the key's) and the
		// action, in one line.
		same := []string{"true"}
		for i := range ws {
			same = append(same, fmt.Sprintf("sl.Keys[%d] == %s", i, masked[i]))
		}
		same = same[min(1, len(ws)):]
		c.emit("m, j := uint64(len(%s.Slots)-1), %s>>(%s.Shift&63)", wl, h, wl)
		c.emit("sl := &%s.Slots[j]", wl)
		c.emit("for sl.Entry != 0 && !(%s) { j = (j + 1) & m; sl = &%s.Slots[j] }", strings.Join(same, " && "), wl)
		hit("sl")
		for len(ws) < packet.MaxKeyWords {
			ws = append(ws, "0")
		}
		fallback = fmt.Sprintf("pl.tables[%d].LookupWordsAction(%s)", t, strings.Join(ws, ", "))
	}
	if l.Scan {
		// A priority table of narrow keys with too many tuples of masks
		// for an index: its entries in priority order, a word each key.
		sc := c.newTmp("sc")
		c.emit("} else if %s := &%s.Scan; len(%s.Rows) > 0 {", sc, pr, sc)
		c.emit("for i := range %s.Rows {", sc)
		c.emit("r := &%s.Rows[i]", sc)
		// A key of each kind needs one of the matcher's tests: its mask
		// passes every value of a range key, its range every value of
		// the others, and an exact key's mask keeps its whole width.
		var tests []string
		for j, w := range ws[:len(l.Keys)] {
			switch l.Keys[j].Kind {
			case packet.Range:
				tests = append(tests, fmt.Sprintf("%s-r.Match[%d].Lo <= r.Match[%d].Span", w, j, j))
			case packet.Exact:
				tests = append(tests, fmt.Sprintf("%s == r.Match[%d].Val", w, j))
			default:
				tests = append(tests, fmt.Sprintf("%s&r.Match[%d].Mask == r.Match[%d].Val", w, j, j))
			}
		}
		c.emit("if %s {", strings.Join(tests, " && "))
		c.emit("act, params = int(r.Action), r.Params")
		c.emit("break")
		c.emit("}")
		c.emit("}")
	}
	if at := l.Interval; at >= 0 {
		// Exact keys and one lpm or range key: the exact keys' group, and
		// in it a binary search for the other key's segment.
		iv, h := c.newTmp("iv"), c.newTmp("h")
		exact, same := make([]string, packet.MaxKeyWords), []string(nil)
		for i := range exact {
			exact[i] = "0"
			if i < len(l.Keys) && i != at {
				exact[i] = ws[i]
				same = append(same, fmt.Sprintf("g.Keys[%d] == %s", i, ws[i]))
			}
		}
		if len(same) == 0 {
			same = []string{"true"} // no exact keys: one group
		}
		c.emit("} else if %s := %s.Intervals; %s != nil {", iv, pr, iv)
		c.emit("%s := table.WordsHash(%s)", h, strings.Join(exact, ", "))
		c.emit("for m, j := uint64(len(%s.Groups)-1), %s>>(%s.Shift&63); ; j = (j + 1) & m {", iv, h, iv)
		c.emit("g := &%s.Groups[j]", iv)
		c.emit("if g.Hi == 0 { break }")
		c.emit("if %s {", strings.Join(same, " && "))
		c.emit("ss, k := %s.Starts[g.Lo:g.Hi], 0", iv)
		c.emit("for n := len(ss); n > 1; { half := n / 2; if ss[k+half] <= %s { k += half }; n -= half }", ws[at])
		c.emit("if a := &%s.Acts[int(g.Lo)+k]; a.Action >= 0 { act, params = int(a.Action), a.Params }", iv)
		c.emit("break")
		c.emit("}")
		c.emit("}")
	}
	// The table's own lookup, a call that spills what Process holds in
	// registers: not for a table without entries (lb-2026's l2_iface).
	c.emit("} else if %s.Len != 0 {", pr)
	c.emit("if a, ps, hit := %s; hit {", fallback)
	c.emit("act, params = a, ps")
	c.emit("}")
	c.emit("}")
	c.b.Write(acts)
}

// keys evaluates a table's keys into pl.keys.
func (c *gen) keys(l *lower.Lookup) {
	c.maxKeys = max(c.maxKeys, len(l.Keys))
	for i, k := range l.Keys {
		if k.Wide {
			c.emit("pl.keys[%d] = %s", i, c.Value(k.Expr))
		} else {
			c.emit("pl.keys[%d] = packet.Value{Lo: %s}", i, c.low(k.Expr))
		}
	}
}

// defaultParams names the package variable holding table t's default
// action's arguments.
func (c *gen) defaultParams(t int) string {
	def := c.s.Tables[t]
	if len(def.DefaultParams) == 0 {
		return "nil"
	}
	dp := fmt.Sprintf("defaultParams%d", t)
	if !strings.Contains(c.vars.String(), "var "+dp+" ") {
		var lits []string
		for _, v := range def.DefaultParams {
			lits = append(lits, valueLit(v))
		}
		fmt.Fprintf(&c.vars, "var %s = []packet.Value{%s} // %s\n", dp, strings.Join(lits, ", "), def.Spec.Name)
	}
	return dp
}

// The action dispatch (lower.ActionSyntax): a switch on the action.

func (c *gen) Dispatch(*lower.Lookup) {
	c.emit("_ = params")
	c.emit("switch act {")
}

func (c *gen) Action(l *lower.Lookup, i int) {
	a := l.Actions[i]
	if i == len(l.Actions)-1 {
		c.emit("default: // %s", a.Name)
	} else {
		c.emit("case %d: // %s", i, a.Name)
	}
	if len(a.Params) > 1 {
		// Every entry has the action's parameters (Table checks): one
		// length check instead of one per parameter.
		c.emit("params := (*[%d]packet.Value)(params)", len(a.Params))
		c.emit("_ = params")
	}
}

func (c *gen) EndAction(*lower.Lookup, int) {}
func (c *gen) EndDispatch(*lower.Lookup)    { c.emit("}") }

// assign generates one assignment, patching the checksums in update.
func (c *gen) assign(a packet.Assign, update []int) {
	h := c.s.Headers[a.Dst.Header]
	fs := h.Fields[a.Dst.Field]
	wide := flow.IsWide(a.Src) || fs.Width > 64
	if wide && fs.Width <= 64 && len(update) == 0 && flow.LowPreserving(a.Src) {
		wide = false // the destination keeps only low bits
	}
	switch {
	case len(update) > 0 && !h.Metadata:
		v := c.Value(a.Src)
		c.emit("if !%s { %s }", c.call(fmt.Sprintf("p.SetUpdating(packet.FieldRef{Header: %d, Field: %d}, %s, %s)", a.Dst.Header, a.Dst.Field, v, c.update(update))), c.malformed())
	case h.Metadata && fs.Width > 64 && maskTo(a.Src, fs.Width) == "":
		c.emit("m%d = %s", h.MetaBase+a.Dst.Field, c.Value(a.Src))
	case h.Metadata && fs.Width > 64:
		c.emit("m%d = (%s).And(%s)", h.MetaBase+a.Dst.Field, c.Value(a.Src), valueLit(packet.Mask(fs.Width)))
	case h.Metadata && wide:
		c.emit("m%d = (%s).Lo%s", h.MetaBase+a.Dst.Field, c.Value(a.Src), maskTo(a.Src, fs.Width))
	case h.Metadata:
		c.emit("m%d = (%s)%s", h.MetaBase+a.Dst.Field, c.low(a.Src), maskTo(a.Src, fs.Width))
	default:
		var v string
		if wide {
			v = c.Value(a.Src)
		} else {
			v = c.low(a.Src)
		}
		b := c.hdr(a.Dst.Header)
		c.put(b, fs, v, wide)
	}
}

// put writes value v (uint64, or packet.Value if wide) into field fs of the
// header whose bytes are in variable b.
func (c *gen) put(b string, fs packet.FieldSpec, v string, wide bool) {
	k := fs.Offset / 8
	aligned := fs.Offset%8 == 0
	if !wide && aligned && fs.Width%8 == 0 && fs.Width <= 64 {
		c.beStore(b, k, fs.Width/8, v)
		return
	}
	if wide && aligned && fs.Width == 128 {
		t := c.newTmp("v")
		c.emit("%s := %s", t, v)
		c.beStore(b, k, 8, t+".Hi")
		c.beStore(b, k+8, 8, t+".Lo")
		return
	}
	if !wide && fs.Offset/8 == (fs.Offset+fs.Width-1)/8 {
		// Within one byte: keep the bits around the field.
		shift := 8 - (fs.Offset%8 + fs.Width)
		m := (1<<fs.Width - 1) << shift
		c.emit("%s[%d] = %s[%d]&^%#x | byte(%s)<<%d&%#x", b, k, b, k, m, v, shift, m)
		return
	}
	if n := (fs.Offset+fs.Width+7)/8 - k; !wide && n <= 8 {
		// Within eight bytes: one load, the bits replaced, one store.
		shift := 8*(k+n) - fs.Offset - fs.Width
		m := (uint64(1)<<fs.Width - 1) << shift
		c.beStore(b, k, n, fmt.Sprintf("%s&^%#x | uint64(%s)<<%d&%#x", beLoad(b, k, n), m, v, shift, m))
		return
	}
	if !wide {
		v = "packet.Value{Lo: " + v + "}"
	}
	c.emit("packet.SetBits(%s, %d, %d, %s)", b, fs.Offset, fs.Width, v)
}

// hdr returns a variable holding wire header h's bytes, generating the
// check that it is there (else the packet is malformed).
func (c *gen) hdr(h int) string {
	for i := len(c.hdrs) - 1; i >= 0; i-- {
		if v, ok := c.hdrs[i][h]; ok {
			return v
		}
	}
	v := c.newTmp("b")
	c.read[h] = true
	if !c.there(h) {
		c.emit("if !%s { %s }", c.hPresent(h), c.malformed())
	}
	// A valid header lies within the frame (extract, push and pop keep it
	// so), so the slice is in range. Its length is the header's fixed part,
	// a constant, so that the field accesses need no bounds checks.
	c.emit("%s := data[%s : %s+%d] // %s", v, c.hOff(h), c.hOff(h), c.s.Headers[h].FixedBytes(), c.s.Headers[h].Name)
	c.hdrs[len(c.hdrs)-1][h] = v
	return v
}

// maskTo is maskSuffix(w) for the value of e, or nothing where the value
// fits w bits anyway: generated expressions are cut to their widths (u64,
// low, value), the fields read and the metadata too, and an action's
// parameters fit theirs (table.Table checks every entry and default;
// New, that the tables are the schema's).
func maskTo(e *packet.Expr, w int) string {
	switch e.Kind {
	case packet.EConst:
		if e.Const.Fits(w) {
			return ""
		}
	case packet.ELen:
	default:
		if e.Width > 0 && e.Width <= w {
			return ""
		}
	}
	return maskSuffix(w)
}

func maskSuffix(w int) string {
	if w >= 64 {
		return ""
	}
	return fmt.Sprintf(" & %#x", uint64(1)<<w-1)
}

func valueLit(v packet.Value) string {
	if v.Hi == 0 {
		return fmt.Sprintf("packet.Value{Lo: %#x}", v.Lo)
	}
	return fmt.Sprintf("packet.Value{Hi: %#x, Lo: %#x}", v.Hi, v.Lo)
}

// Conditions: lower.Cond decides, these print Go (lower.CondSyntax).

func (c *gen) Bad(e *packet.Expr) string {
	if e == nil {
		c.w.Refuse(c.owner, "missing operand")
	} else {
		c.w.Refuse(c.owner, "expression %q: operator %d is not supported", e.Text, e.Kind)
	}
	return "false"
}

func (c *gen) Present(e *packet.Expr, k lower.Known) string {
	switch k {
	case lower.KnownValid:
		return "true"
	case lower.KnownInvalid:
		return "false"
	}
	return c.hPresent(e.Header)
}

func (c *gen) NewVar(prefix string) string                    { return c.newTmp(prefix) }
func (c *gen) Declare(name string, _ lower.VarKind, v string) { c.emit("%s := %s", name, v) }
func (c *gen) Set(name, v string)                             { c.emit("%s = %s", name, v) }
func (c *gen) PushScope()                                     { c.hdrs = append(c.hdrs, map[int]string{}) }
func (c *gen) PopScope()                                      { c.hdrs = c.hdrs[:len(c.hdrs)-1] }

func (c *gen) WideCompare(op packet.ExprKind, a, b string) string {
	if op == packet.EEq || op == packet.ENe {
		return fmt.Sprintf("(%s %s %s)", a, lower.CompareOp(op), b)
	}
	return fmt.Sprintf("(%s.Cmp(%s) %s 0)", a, b, lower.CompareOp(op))
}

func (c *gen) Masked(a string, mask, value packet.Value, wide bool) string {
	if wide {
		return fmt.Sprintf("(%s.And(%s) == %s)", a, valueLit(mask), valueLit(value))
	}
	return fmt.Sprintf("(%s&%#x == %#x)", a, mask.Lo, value.Lo)
}

func (c *gen) InRange(a string, lo, hi packet.Value, wide bool) string {
	if wide {
		return fmt.Sprintf("(%s.Cmp(%s) >= 0 && %s.Cmp(%s) <= 0)", a, valueLit(lo), a, valueLit(hi))
	}
	return fmt.Sprintf("(%s >= %#x && %s <= %#x)", a, lo.Lo, a, hi.Lo)
}

func (c *gen) WideNonZero(a string) string { return "!" + a + ".IsZero()" }

// Values (lower.ValueSyntax): a word is a uint64, a wide value a
// packet.Value.

func (c *gen) Const(v packet.Value, a lower.Arith) string {
	if a == lower.ArithWide {
		return valueLit(v)
	}
	return fmt.Sprintf("%#x", v.Lo)
}

func (c *gen) Param(i int, a lower.Arith) string {
	if a == lower.ArithWide {
		return fmt.Sprintf("params[%d]", i)
	}
	return fmt.Sprintf("params[%d].Lo", i)
}

func (c *gen) Field(f packet.FieldRef, a lower.Arith) string {
	switch a {
	case lower.ArithLow:
		return c.readField(f, true) + ".Lo"
	case lower.ArithWide:
		return c.readField(f, true)
	}
	return c.readField(f, false)
}

// U64 generates a value of at most 64 bits (flow.IsWide(e) is false).
func (c *gen) U64(e *packet.Expr) string { return c.w.Word(e) }

func (c *gen) low(e *packet.Expr) string { return c.w.Low(e) }

// Value generates a packet.Value.
func (c *gen) Value(e *packet.Expr) string { return c.w.Wide(e) }

func (c *gen) Len(e *packet.Expr) string {
	if !c.there(e.Header) {
		c.emit("if !%s { %s }", c.hPresent(e.Header), c.malformed())
	}
	return fmt.Sprintf("uint64(len(data)-%s)", c.hOff(e.Header))
}

// goSpelling is Go's: a word is a uint64, a wide value a packet.Value.
var goSpelling = lower.Spelling{
	Bool: "fastpath.B2U(%s)", Widen: "packet.Value{Lo: %s}",
	Not: "(^%s%s)", NotWide: "%s.Not().And(%s)",
	PopCount: "fastpath.OnesCount(%s)", PopCountWide: "uint64(%s.OnesCount())",
}

func (c *gen) Spelling() *lower.Spelling { return &goSpelling }

func (c *gen) Binary(e *packet.Expr, a lower.Arith) string {
	switch a {
	case lower.ArithLow:
		x, y := c.low(e.A), shiftAmount(e, c.low(e.B))
		op, _, ok := lower.WordOp(e.Kind)
		if !ok || e.Kind == packet.EShr { // a right shift's low bits need the high ones
			c.w.Refuse(c.owner, "expression %q: the low bits of operator %d are not supported", e.Text, e.Kind)
			return "0"
		}
		return fmt.Sprintf("((%s %s %s)%s)", x, op, y, maskSuffix(e.Width))
	case lower.ArithWide:
		name, cut, ok := lower.WideOp(e.Kind)
		if !ok {
			c.w.Refuse(c.owner, "expression %q: operator %d is not supported", e.Text, e.Kind)
			return "packet.Value{}"
		}
		// packet.Value's method of that name; a shift by at most 128.
		x, y := c.Value(e.A), c.Value(e.B)
		if e.Kind == packet.EShl || e.Kind == packet.EShr {
			y = "uint(min(" + y + ".Lo, 128))"
		}
		v := fmt.Sprintf("%s.%s%s(%s)", x, strings.ToUpper(name[:1]), name[1:], y)
		if cut {
			v += ".And(" + valueLit(packet.Mask(e.Width)) + ")"
		}
		return v
	}
	op, cut, ok := lower.WordOp(e.Kind)
	if !ok {
		c.w.Refuse(c.owner, "expression %q: operator %d is not supported", e.Text, e.Kind)
		return "0"
	}
	x := fmt.Sprintf("(%s %s %s)", c.U64(e.A), op, shiftAmount(e, c.U64(e.B)))
	if !cut {
		return x
	}
	return "(" + x + maskSuffix(e.Width) + ")"
}

// i64 is e in signed 64-bit arithmetic, for an expression flow.SmallRange
// accepts.
func (c *gen) i64(e *packet.Expr) string {
	switch e.Kind {
	case packet.EConst:
		return fmt.Sprintf("%d", int64(e.Const.Lo))
	case packet.EField:
		return "int64(" + c.readField(e.Field, false) + ")"
	}
	op, _, _ := lower.WordOp(e.Kind) // +, - or *
	return fmt.Sprintf("(%s %s %s)", c.i64(e.A), op, c.i64(e.B))
}

// shiftAmount is b, the right operand of e, said to be below 64 when e is
// a shift by a value that narrow (width 6 or less): that spares Go's test
// for a wider shift (a compare and a mask, on the way to the LB's slot and
// port from its lookups).
func shiftAmount(e *packet.Expr, b string) string {
	if (e.Kind == packet.EShl || e.Kind == packet.EShr) && e.B.Width <= 6 {
		return "(" + b + " & 63)"
	}
	return b
}

// readField reads a field as uint64 or, if wide, as packet.Value.
func (c *gen) readField(f packet.FieldRef, wide bool) string {
	h := c.s.Headers[f.Header]
	fs := h.Fields[f.Field]
	if h.Metadata {
		m := fmt.Sprintf("m%d", h.MetaBase+f.Field)
		switch {
		case fs.Width > 64 && !wide:
			return m + ".Lo"
		case fs.Width <= 64 && wide:
			return "packet.Value{Lo: " + m + "}"
		}
		return m
	}
	b := c.hdr(f.Header)
	if k := fs.Offset / 8; fs.Offset%8 == 0 && fs.Width == 128 {
		return fmt.Sprintf("packet.Value{Hi: %s, Lo: %s}", beLoad(b, k, 8), beLoad(b, k+8, 8))
	}
	if u := spanRead(b, fs, h.FixedBytes()); u != "" {
		if wide {
			return "packet.Value{Lo: " + u + "}"
		}
		return u
	}
	v := c.newTmp("f")
	c.emit("%s, _ := packet.GetBits(%s, %d, %d) // %s.%s", v, b, fs.Offset, fs.Width, h.Name, fs.Name)
	if wide {
		return v
	}
	return v + ".Lo"
}

// spanRead reads a field of at most 64 bits that lies within eight bytes
// with one load, a shift and a mask; "" if it does not. The header slice b
// has avail bytes: a field of 3, 5, 6 or 7 bytes (a MAC address) is read
// as the 8 bytes around it where they are in b, one load where the compiler
// would make two or three of its bytes.
func spanRead(b string, fs packet.FieldSpec, avail int) string {
	k, end := fs.Offset/8, fs.Offset+fs.Width
	n := (end+7)/8 - k
	if fs.Width > 64 || n > 8 {
		return ""
	}
	if n != 1 && n != 2 && n != 4 && n != 8 {
		switch {
		case k+n >= 8: // the 8 bytes ending with the field's
			k, n = k+n-8, 8
		case avail >= k+8: // the 8 bytes starting with it
			n = 8
		}
	}
	load := beLoad(b, k, n)
	if shift := (k+n)*8 - end; shift > 0 || fs.Width < 8*n {
		return fmt.Sprintf("(%s>>%d%s)", load, shift, maskSuffix(fs.Width))
	}
	return load
}

// file assembles the package source.
func (c *gen) file(opt Options) ([]byte, error) {
	var w bytes.Buffer
	fmt.Fprintf(&w, "// Code generated by nsc compile --target go; DO NOT EDIT.\n")
	if opt.Command != "" {
		fmt.Fprintf(&w, "// To regenerate: %s\n", opt.Command)
	}
	fmt.Fprintf(&w, "\n// Package %s runs graph %s as straight-line Go. Its behaviour is the\n// interpreter's on the same graph (nsc's sim package), counters included.\npackage %s\n\n", opt.Package, c.g.Name, opt.Package)
	w.WriteString("import (\n")
	if c.usesBits {
		w.WriteString("\t\"math/bits\"\n")
	}
	if len(c.s.States) > 0 {
		w.WriteString("\t\"time\"\n")
	}
	if c.usesBits || len(c.s.States) > 0 {
		w.WriteString("\n")
	}
	w.WriteString("\t\"github.com/dragonet-go/nsc/backends/golang/fastpath\"\n\t\"github.com/dragonet-go/nsc/packet\"\n\t\"github.com/dragonet-go/nsc/packet/table\"\n)\n\n")
	c.schema(&w)
	c.names(&w)
	w.Write(c.vars.Bytes())
	w.WriteString("\n")
	c.pipeline(&w)
	w.WriteString(c.runsCode)
	if c.fromSink {
		fmt.Fprintf(&w, "// Process runs the frame buf[off:off+n] through the graph from %s on,\n// as the device hands it over there: its headers where pl.At says, the\n// device's checks done. Otherwise as below.\n//\n", c.start.Name)
	}
	w.WriteString("// Process runs the frame buf[off:off+n] through the graph, in place: the\n// result's Data aliases buf. Keep packet.Headroom bytes free before off and\n// after off+n for headers the graph pushes. It does not allocate.\n")
	w.WriteString("func (pl *Pipeline) Process(buf []byte, off, n int) fastpath.Result {\n\tp := pl.pkt\n\t_ = p\n")
	w.Write(c.stateDecls())
	w.Write(c.b.Bytes())
	w.WriteString("}\n")
	out, err := format.Source(w.Bytes())
	if err != nil {
		return w.Bytes(), fmt.Errorf("go backend: generated code does not parse: %v", err)
	}
	return out, nil
}

// names writes the tables that give the counters their names.
func (c *gen) names(w *bytes.Buffer) {
	fmt.Fprintf(w, "// NodeNames are the graph's nodes by index (Pipeline.Runs).\nvar NodeNames = [%d]string{", len(c.g.Nodes))
	for _, n := range c.g.Nodes {
		fmt.Fprintf(w, "%q, ", n.Name)
	}
	w.WriteString("}\n\n// SinkNames are the nodes where frames leave (fastpath.Result.Sink, Pipeline.Sunk).\n")
	fmt.Fprintf(w, "var SinkNames = [%d]string{", len(c.w.Sinks.List))
	for _, s := range c.w.Sinks.List {
		fmt.Fprintf(w, "%q, ", s)
	}
	w.WriteString("}\n\n// DropSites are where and why frames end (fastpath.Result.Drop, Pipeline.Dropped).\n")
	fmt.Fprintf(w, "var DropSites = [%d]fastpath.DropSite{", len(c.w.Drops.List))
	for _, d := range c.w.Drops.List {
		fmt.Fprintf(w, "{Node: %q, Reason: %q},\n", d.Node, d.Reason)
	}
	w.WriteString("}\n\n// CountLabels name the count operations' counters (Pipeline.Counted).\n")
	defer func() {
		w.WriteString("// countOf is, per node, 1 + its count operation's label, or 0.\n")
		fmt.Fprintf(w, "var countOf = [%d]int{", len(c.g.Nodes))
		for _, n := range c.g.Nodes {
			k := 0
			if n.Kind == dataflow.FNode && n.Op.Kind == packet.OpCount {
				if i, ok := c.w.Counts.Index(n.Op.Label); ok { // labels of live nodes only
					k = i + 1
				}
			}
			fmt.Fprintf(w, "%d, ", k)
		}
		w.WriteString("}\n\n")
	}()
	fmt.Fprintf(w, "var CountLabels = [%d]string{", len(c.w.Counts.List))
	for _, s := range c.w.Counts.List {
		fmt.Fprintf(w, "%q, ", s)
	}
	w.WriteString("}\n\n")
}

// schema writes the packet schema as a Go literal: the packet runtime
// (checksums, push, pop, tables) reads it.
func (c *gen) schema(w *bytes.Buffer) {
	s := c.s
	w.WriteString("// Schema is the model's packet schema.\nvar Schema = newSchema()\n\nfunc newSchema() *packet.Schema {\n\ts := &packet.Schema{\n")
	fmt.Fprintf(w, "MetaFields: %d,\nHeaders: []*packet.HeaderSpec{\n", s.MetaFields)
	for _, h := range s.Headers {
		fmt.Fprintf(w, "{Name: %q, ID: %d, Metadata: %v, MetaBase: %d, Checksum: %d, ChecksumKind: %d, ChecksumOptional: %v, Fields: []packet.FieldSpec{\n",
			h.Name, h.ID, h.Metadata, h.MetaBase, h.Checksum, h.ChecksumKind, h.ChecksumOptional)
		for _, f := range h.Fields {
			fmt.Fprintf(w, "{Name: %q, Offset: %d, Width: %d", f.Name, f.Offset, f.Width)
			if f.Length != nil {
				fmt.Fprintf(w, ", Length: %s", exprLit(f.Length))
			}
			w.WriteString("},\n")
		}
		w.WriteString("}},\n")
	}
	w.WriteString("},\nNext: []packet.ParseEdge{\n")
	for _, e := range s.Next {
		fmt.Fprintf(w, "{From: %d, Field: %d, Value: %s, Mask: %s, To: %d},\n", e.From, e.Field, valueLit(e.Value), valueLit(e.Mask), e.To)
	}
	w.WriteString("},\nActions: []*packet.Action{\n")
	for _, a := range s.Actions {
		fmt.Fprintf(w, "{Name: %q, Params: %s},\n", a.Name, paramsLit(a.Params))
	}
	w.WriteString("},\nTables: []*packet.TableDef{\n")
	for _, t := range s.Tables {
		sp := t.Spec
		fmt.Fprintf(w, "{Spec: &packet.TableSpec{Name: %q, Size: %d, Default: %q, Priorities: %v, Keys: []packet.KeySpec{", sp.Name, sp.Size, sp.Default, sp.Priorities)
		for _, k := range sp.Keys {
			fmt.Fprintf(w, "{Name: %q, Width: %d, Kind: %d}, ", k.Name, k.Width, k.Kind)
		}
		w.WriteString("}, Actions: []packet.ActionSpec{")
		for _, a := range sp.Actions {
			fmt.Fprintf(w, "{Name: %q, Params: %s}, ", a.Name, paramsLit(a.Params))
		}
		fmt.Fprintf(w, "}, DefaultParams: %s}, Actions: []int{%s}, Default: %d, DefaultParams: %s},\n",
			valuesLit(sp.DefaultParams), joinInts(t.Actions), t.Default, valuesLit(t.DefaultParams))
	}
	w.WriteString("},\n")
	if len(s.Registers) > 0 {
		w.WriteString("Registers: []*packet.RegisterDef{\n")
		for _, r := range s.Registers {
			fmt.Fprintf(w, "{Name: %q, Value: %d, Size: %d, Keys: []*packet.Expr{", r.Name, r.Value, r.Size)
			for _, k := range r.Keys {
				w.WriteString(exprLit(k) + ", ")
			}
			w.WriteString("}},\n")
		}
		w.WriteString("},\n")
	}
	if len(s.States) > 0 {
		w.WriteString("States: []*packet.StateDef{\n")
		for _, st := range s.States {
			fmt.Fprintf(w, "{Name: %q, Max: %d, Timeout: %d, Events: %d, Bytes: %d, Length: %s, Keys: []*packet.Expr{", st.Name, st.Max, st.Timeout, st.Events, st.Bytes, exprLit(st.Length))
			for _, k := range st.Keys {
				w.WriteString(exprLit(k) + ", ")
			}
			w.WriteString("}},\n")
		}
		w.WriteString("},\n")
	}
	w.WriteString("}\ns.Finish()\nreturn s\n}\n\n")
}

func paramsLit(ps []packet.Param) string {
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprintf("{Name: %q, Width: %d}", p.Name, p.Width))
	}
	return "[]packet.Param{" + strings.Join(s, ", ") + "}"
}

func valuesLit(vs []packet.Value) string {
	if vs == nil {
		return "nil"
	}
	var s []string
	for _, v := range vs {
		s = append(s, valueLit(v))
	}
	return "[]packet.Value{" + strings.Join(s, ", ") + "}"
}

// exprLit writes an expression tree (a variable field's length) as a Go
// literal.
func exprLit(e *packet.Expr) string {
	if e == nil {
		return "nil"
	}
	parts := []string{fmt.Sprintf("Kind: %d, Width: %d", e.Kind, e.Width)}
	add := func(name string, v packet.Value) {
		if !v.IsZero() {
			parts = append(parts, name+": "+valueLit(v))
		}
	}
	add("Const", e.Const)
	if e.Kind == packet.EField {
		parts = append(parts, fmt.Sprintf("Field: packet.FieldRef{Header: %d, Field: %d}", e.Field.Header, e.Field.Field))
	}
	if e.Kind == packet.EValid || e.Kind == packet.ELen {
		parts = append(parts, fmt.Sprintf("Header: %d", e.Header))
	}
	add("Value", e.Value)
	add("Mask", e.Mask)
	add("Lo", e.Lo)
	add("Hi", e.Hi)
	if e.A != nil {
		parts = append(parts, "A: "+exprLit(e.A))
	}
	if e.B != nil {
		parts = append(parts, "B: "+exprLit(e.B))
	}
	parts = append(parts, fmt.Sprintf("Text: %q", e.Text))
	return "&packet.Expr{" + strings.Join(parts, ", ") + "}"
}

// Command is the nsc command line that generates a package, recorded in
// its header so that it can be regenerated.
func Command(files []string, lpg, prg, profile, sink, out string) string {
	var extra []string
	if profile != "" {
		extra = []string{"--profile", profile}
	}
	if sink != "" {
		extra = append(extra, "--sink", sink)
	}
	return backends.Request{Files: files, LPG: lpg, PRG: prg, Out: out}.Command(append(extra, "--target", "go")...)
}
