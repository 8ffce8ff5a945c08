package p4

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/p4/tableadd"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
)

// The architectures Generate writes for.
const (
	V1Model = "v1model" // BMv2 simple_switch: V1Switch, mark_to_drop, counter externs
	XSA     = "xsa"     // AMD VitisNet (ESnet SmartNIC): XilinxPipeline, smeta.drop
)

// PuntPort is the v1model egress port of the host CPU, by which the part
// of a split device (embed.Embedding.Device) hands frames to the host at
// embed.PuntNode; BMv2's simple_switch takes it as --cpu-port 510.
const PuntPort = 510

// Options control the generated program.
type Options struct {
	// Arch is V1Model or XSA.
	Arch string
	// Name names the program in its header comment (the file is NAME.p4).
	Name string
	// Command is recorded in the header comment: how to regenerate.
	Command string
	// PRG names the PRG the LPG is embedded in, for messages; Limits are
	// its declared resources (prg.LimitNames).
	PRG    string
	Limits map[string]int
}

// ErrUnsupported is what every refusal matches (errors.Is).
var ErrUnsupported = backends.ErrUnsupported

// Unsupported is a graph construct the P4 backend refuses: the node, where
// it is declared, and why.
type Unsupported = backends.Refusal

// Program is a generated P4 program.
type Program struct {
	Arch string
	// Source is the P4_16 text.
	Source []byte
	// Tables are the model's tables as the program declares them, in
	// schema order (those the program looks up).
	Tables tableadd.Tables
}

type gen struct {
	g     *dataflow.Graph
	s     *packet.Schema
	opt   Options
	start *dataflow.Node
	order []*dataflow.Node
	// reached are the nodes a frame can run through from start, preds the
	// F-nodes whose fired ports lead to each.
	reached map[*dataflow.Node]bool
	preds   map[*dataflow.Node][]*dataflow.Node
	info    map[*dataflow.Node]*info

	nodeName  map[*dataflow.Node]string // P4 identifier of a node
	hdrName   map[int]string            // header instance in hdr
	varName   map[int]string            // instance of a header's variable-length part
	fieldName map[packet.FieldRef]string
	metaRef   map[int]string // metadata header -> how the program reaches it
	metaParam string         // the user metadata parameter
	metaType  string         // its type
	stdMeta   string         // the architecture's standard metadata parameter
	actName   map[int]string // schema action -> P4 action
	tblName   map[int]string // schema table -> P4 table
	tables    []*table
	ctlNames  *namer // names inside the control
	counters  map[string]string
	ctrOrder  []string
	errors    []string // user-defined parser errors

	// the parser (parser.go)
	region  map[*dataflow.Node]bool
	prefix  []*dataflow.Node
	fail    *dest
	altFail map[*dataflow.Node]dest // extracts that fail elsewhere than fail
	rereads map[*dataflow.Node]reread
	// extracts of a header valid on some paths: a state of their own
	takes     []*dataflow.Node
	taking    map[*dataflow.Node]bool
	exits     []dest
	exitField string
	noMatch   bool // a select's default goes to the noMatch state

	// the control (control.go)
	heads    map[*dataflow.Node]bool
	flags    map[*dataflow.Node]string
	diamonds map[*dataflow.Node]diamond
	termMemo map[*dataflow.Node]int8
	keyVars  []string // control-local key variables
	wire     []int
	used     map[int]bool // wire headers the program touches
	lookedUp map[int]bool // tables looked up so far (check)
}

// Generate writes the P4 program for g, which runs from its first source.
func Generate(g *dataflow.Graph, opt Options) (*Program, error) {
	if opt.Arch != V1Model && opt.Arch != XSA {
		return nil, fmt.Errorf("p4 backend: unknown architecture %q (have: %s, %s)", opt.Arch, V1Model, XSA)
	}
	if rs := backends.SinglePath(g, "p4 ("+opt.Arch+")"); rs != nil {
		return nil, rs.Err()
	}
	srcs := g.Sources()
	if len(srcs) == 0 {
		return nil, fmt.Errorf("p4 backend: graph %s has no source", g.Name)
	}
	c := &gen{g: g, s: g.Schema, opt: opt, start: srcs[0], order: g.Order(), counters: map[string]string{}, lookedUp: map[int]bool{}}
	if c.order == nil {
		return nil, fmt.Errorf("p4 backend: graph %s has a cycle", g.Name)
	}
	c.walk()
	c.expandParse()
	c.names()
	steps := []func() error{c.check, c.analyze, c.findParser, c.findControl, c.wireHeaders}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, c.target(err)
		}
	}
	src, err := c.program()
	if err != nil {
		return nil, c.target(err)
	}
	tables := make(tableadd.Tables, len(c.tables))
	for i, t := range c.tables {
		tables[i] = t.Table
	}
	return &Program{Arch: opt.Arch, Source: src, Tables: tables}, nil
}

// targetName is the target in refusals: P4 and the architecture.
func (c *gen) targetName() string { return "p4 (" + c.opt.Arch + ")" }

// refuse makes the error for node n.
func (c *gen) refuse(n *dataflow.Node, format string, args ...any) error {
	return backends.Refuse(c.targetName(), n, format, args...)
}

// target names the target in the refusals of err.
func (c *gen) target(err error) error {
	var rs backends.Refusals
	var r *backends.Refusal
	switch {
	case errors.As(err, &rs):
		for _, r := range rs {
			r.Target = c.targetName()
		}
	case errors.As(err, &r):
		r.Target = c.targetName()
	}
	return err
}

// display is a node's name for people: an LPG copy by its LPG name.
func display(n *dataflow.Node) string {
	name, _, _ := strings.Cut(n.Name, "@")
	return name
}

// walk finds the nodes a frame can reach from the start, and their
// predecessors.
func (c *gen) walk() {
	c.reached = map[*dataflow.Node]bool{c.start: true}
	c.preds = map[*dataflow.Node][]*dataflow.Node{}
	for _, n := range c.order {
		if !c.reached[n] || n.Kind != dataflow.FNode || terminal(n) {
			continue
		}
		for _, d := range c.succs(n) {
			if d.node == nil {
				continue
			}
			c.reached[d.node] = true
			if !slices.Contains(c.preds[d.node], n) {
				c.preds[d.node] = append(c.preds[d.node], n)
			}
		}
	}
}

// names gives every node, header, field, action and table its P4 name.
func (c *gen) names() {
	top := newNamer(slices.Collect(mapKeys(keywords))...)
	c.hdrName, c.varName, c.fieldName = map[int]string{}, map[int]string{}, map[packet.FieldRef]string{}
	c.metaRef = map[int]string{}
	var metas []*packet.HeaderSpec
	for _, h := range c.s.Headers {
		if h.Metadata {
			metas = append(metas, h)
			continue
		}
		c.hdrName[h.ID] = top.take(ident(h.Name))
		for _, f := range h.Fields {
			if f.Variable() {
				c.varName[h.ID] = top.take(c.hdrName[h.ID] + "_" + ident(f.Name))
			}
		}
	}
	for _, h := range c.s.Headers {
		fields := newNamer()
		for i, f := range h.Fields {
			c.fieldName[packet.FieldRef{Header: h.ID, Field: i}] = fields.take(ident(f.Name))
		}
	}
	c.stdMeta = "standard_metadata"
	if c.opt.Arch == XSA {
		c.stdMeta = "smeta"
	}
	switch len(metas) {
	case 1:
		c.metaParam = top.take(ident(metas[0].Name))
		c.metaType = top.take(c.metaParam + "_t")
		c.metaRef[metas[0].ID] = c.metaParam
	default:
		c.metaParam = top.take("meta")
		c.metaType = top.take("metadata_t")
		for _, h := range metas {
			c.metaRef[h.ID] = c.metaParam + "." + ident(h.Name)
		}
	}
	// Inside the control: actions, tables, counters, flags. Actions and
	// tables keep the model's names: table_add scripts use them.
	c.ctlNames = newNamer(slices.Collect(mapKeys(keywords))...)
	for _, r := range []string{"csum_add", "sum", "before", "after", "popped"} {
		c.ctlNames.take(r)
	}
	for _, h := range c.hdrName {
		c.ctlNames.used["sum_"+h] = true
	}
	c.actName, c.tblName = map[int]string{}, map[int]string{}
	for i, a := range c.s.Actions {
		if a.Name == "NoAction" && len(a.Params) == 0 && len(a.Body) == 0 {
			c.actName[i] = "NoAction" // core.p4's
			continue
		}
		c.actName[i] = c.ctlNames.take(ident(a.Name))
	}
	for i, t := range c.s.Tables {
		c.tblName[i] = c.ctlNames.take(ident(t.Spec.Name))
	}
	c.nodeName = map[*dataflow.Node]string{}
	short := map[string]int{}
	for n := range c.reached {
		short[display(n)]++
	}
	nodes := newNamer(append(slices.Collect(mapKeys(keywords)), noMatch)...)
	for _, n := range c.g.Nodes {
		if !c.reached[n] {
			continue
		}
		name := display(n)
		if short[name] > 1 {
			name = n.Name
		}
		c.nodeName[n] = nodes.take(ident(name))
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// check refuses, up front, what P4 or the target cannot do.
func (c *gen) check() error {
	var rs backends.Refusals
	for _, n := range c.order {
		if !c.reached[n] || n.Kind != dataflow.FNode {
			continue
		}
		if err := c.checkNode(n); err != nil {
			var r *backends.Refusal
			if !errors.As(err, &r) {
				return err
			}
			rs = append(rs, r)
		}
	}
	return rs.Err()
}

// checkNode refuses what node n does that P4 cannot.
func (c *gen) checkNode(n *dataflow.Node) error {
	if n.Software && !n.Program { // a program sink is where the program starts
		return c.refuse(n, "it runs in software on %s; the P4 program cannot hand frames to software", c.prgName())
	}
	o := n.Op
	switch o.Kind {
	case packet.OpSteer:
		return c.refuse(n, "steer %s: a P4 pipeline has no queues or sockets to deliver to; emit the frame", o.Label)
	case packet.OpPlace:
		return c.refuse(n, "place %s: a P4 pipeline holds no keyed state that the data path creates (event buffers); reassemble in software", c.s.States[o.State].Name)
	case packet.OpParse, packet.OpInput:
		if o.Header >= 0 {
			return c.refuse(n, "%s parses the frame again from its start, after headers were extracted or the frame changed; a P4 parser reads the frame once, front to back (parse once, then test the headers)", o.Describe(c.s))
		}
	case packet.OpICRCVerify, packet.OpICRCCompute:
		return c.refuse(n, "%s: the ICRC covers the whole IP payload, which a P4 program does not read (its parser takes headers only); declare payload_bytes 0 in %s so that the embedder leaves the ICRC and what follows it to the host, or let a RoCE core in front of the program check it (models/rdma/p4.nsc)", o.Describe(c.s), c.prgName())
	case packet.OpLoad, packet.OpStore:
		r := c.s.Registers[o.Register]
		return c.refuse(n, "%s: register %s is keyed state the data path fills (an entry made per key, %d at most, then full), which a P4 register, an array indexed by number, is not; declare register_entries 0 in %s so that the embedder leaves it and what follows it to the host", o.Describe(c.s), r.Name, r.Size, c.prgName())
	case packet.OpCut:
		return c.refuse(n, "cut: a P4 deparser emits the headers and then every byte the parser left; it cannot drop the payload")
	case packet.OpPush:
		h := c.s.Headers[o.Header]
		if o.Extra > 0 || h.Fields[len(h.Fields)-1].Variable() {
			return c.refuse(n, "push %s: a header with a variable-length field cannot be made in P4 (varbit contents are not writable)", h.Name)
		}
	case packet.OpLookup:
		c.lookedUp[o.Table] = true
		if err := c.checkTable(n, len(c.lookedUp)); err != nil {
			return err
		}
	}
	for _, e := range c.exprs(n) {
		if x := uses(e, packet.ELen); x != nil {
			h := c.s.Headers[x.Header].Name
			return c.refuse(n, "len(%s) is the length of the frame from %s on: that needs payload access, which %s does not have", h, h, c.prgName())
		}
		if x := uses(e, packet.EPopCount); x != nil {
			return c.refuse(n, "%s: P4_16 has no operator that counts bits, and a table of 2^N entries would stand for one on an N-bit value", x.Text)
		}
	}
	return nil
}

func (c *gen) prgName() string {
	if c.opt.PRG != "" {
		return c.opt.PRG
	}
	return "a P4 pipeline"
}

// exprs lists every expression node n's operation evaluates.
func (c *gen) exprs(n *dataflow.Node) []*packet.Expr {
	o := n.Op
	var out []*packet.Expr
	switch o.Kind {
	case packet.OpTest:
		out = append(out, o.Cond)
	case packet.OpSwitch:
		out = append(out, o.Expr)
	case packet.OpSet:
		for _, a := range o.Assign {
			out = append(out, a.Src)
		}
	case packet.OpLookup:
		t := c.s.Tables[o.Table]
		out = append(out, t.Keys...)
		for _, ai := range t.Actions {
			for _, a := range c.s.Actions[ai].Body {
				out = append(out, a.Src)
			}
		}
	}
	return out
}

// uses is the first subexpression of e of kind k, or nil.
func uses(e *packet.Expr, k packet.ExprKind) *packet.Expr {
	if e == nil || e.Kind == k {
		return e
	}
	if x := uses(e.A, k); x != nil {
		return x
	}
	return uses(e.B, k)
}

// checkTable holds a table to the PRG's limits (the n-th table the
// program looks up) and the architecture's match kinds.
func (c *gen) checkTable(n *dataflow.Node, count int) error {
	spec := c.s.Tables[n.Op.Table].Spec
	lim := c.opt.Limits
	over := func(name string, need int) bool { v, ok := lim[name]; return ok && need > v }
	for _, k := range spec.Keys {
		if k.Kind == packet.Range && c.opt.Arch == XSA {
			return c.refuse(n, "table %s: key %s is a range match, which this backend does not emit for VitisNet (xsa has exact, lpm and ternary here)", spec.Name, k.Name)
		}
	}
	keyBits, actionBits := spec.KeyBits(), spec.ActionBits()
	prg := c.prgName()
	switch {
	case over("table_size", spec.Size):
		return c.refuse(n, "table %s has %d entries and %s holds at most %d (limit table_size)", spec.Name, spec.Size, prg, lim["table_size"])
	case over("key_bits", keyBits):
		return c.refuse(n, "table %s has a %d-bit key and %s takes at most %d bits (limit key_bits)", spec.Name, keyBits, prg, lim["key_bits"])
	case over("action_bits", actionBits):
		return c.refuse(n, "table %s's actions carry %d bits of parameters and %s at most %d (limit action_bits)", spec.Name, actionBits, prg, lim["action_bits"])
	case over("tables", count):
		return c.refuse(n, "table %s would be table number %d and %s holds at most %d (limit tables)", spec.Name, count, prg, lim["tables"])
	}
	exact := true
	for _, k := range spec.Keys {
		exact = exact && k.Kind == packet.Exact
	}
	if spec.NeedsPriority() && exact && len(spec.Keys) > 0 {
		return c.refuse(n, "table %s gives priorities to entries of exact keys only; a P4 exact table takes no priority", spec.Name)
	}
	return nil
}

// out writes indented lines.
type out struct {
	b   bytes.Buffer
	ind int
}

func (o *out) line(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if strings.HasPrefix(s, "}") {
		o.ind--
	}
	if s != "" {
		o.b.WriteString(strings.Repeat("    ", max(o.ind, 0)))
		o.b.WriteString(s)
	}
	o.b.WriteByte('\n')
	if strings.HasSuffix(s, "{") {
		o.ind++
	}
}

// program assembles the source.
func (c *gen) program() ([]byte, error) {
	ctl, err := c.control()
	if err != nil {
		return nil, err
	}
	parser, err := c.parser()
	if err != nil {
		return nil, err
	}
	var w out
	c.header(&w)
	c.types(&w)
	w.b.Write(parser)
	w.b.Write(ctl)
	c.deparser(&w)
	c.pipeline(&w)
	return w.b.Bytes(), nil
}

// header writes the leading comment.
func (c *gen) header(w *out) {
	w.line("// Code generated by nsc compile --target p4 --arch %s; DO NOT EDIT.", c.opt.Arch)
	if c.opt.Command != "" {
		w.line("// To regenerate: %s", c.opt.Command)
	}
	w.line("//")
	prg := ""
	if c.opt.PRG != "" {
		prg = " on " + c.opt.PRG
	}
	w.line("// Graph %s%s, from node %s. The frame is handled as nsc's", c.g.Name, prg, display(c.start))
	w.line("// interpreter handles it: same bytes out, same drops. Parsing is the")
	w.line("// model's extract, switch and test nodes (its parse graph written out")
	w.line("// as such); a parse error goes where the model's failed extract leads.")
	w.line("// Checksums are patched with one's-complement arithmetic as the model's")
	w.line("// `update` does it (RFC 1624, per field).")
	if c.opt.Arch == V1Model {
		w.line("// Counters: one per count label and per drop reason, packets only. A")
		w.line("// frame that leaves goes back out its ingress port.")
	} else {
		w.line("// Counters: not generated for xsa (the count and drop labels are in")
		w.line("// comments where they count); the model's metadata is zeroed when")
		w.line("// parsing starts, so nothing the shell puts there is read.")
	}
	w.line("")
	w.line("#include <core.p4>")
	if c.opt.Arch == V1Model {
		w.line("#include <v1model.p4>")
	} else {
		w.line("#include <xsa.p4>")
	}
	w.line("")
}

// wireHeaders works out which wire headers the program uses and the order
// the deparser emits them in.
func (c *gen) wireHeaders() error {
	wire, err := c.wireOrder()
	if err != nil {
		return err
	}
	c.wire = wire
	c.used = map[int]bool{}
	for _, h := range wire {
		c.used[h] = true
	}
	var mark func(e *packet.Expr)
	mark = func(e *packet.Expr) {
		if e == nil {
			return
		}
		switch e.Kind {
		case packet.EField:
			c.used[e.Field.Header] = true
		case packet.EValid, packet.ELen:
			c.used[e.Header] = true
		}
		mark(e.A)
		mark(e.B)
	}
	for n := range c.reached {
		if n.Kind != dataflow.FNode {
			continue
		}
		for _, e := range c.exprs(n) {
			mark(e)
		}
		o := n.Op
		switch o.Kind {
		case packet.OpExtract, packet.OpPush, packet.OpPop, packet.OpChecksumCompute, packet.OpChecksumVerify:
			c.used[o.Header] = true
		case packet.OpSet:
			for _, a := range o.Assign {
				c.used[a.Dst.Header] = true
			}
		}
		if o.Kind == packet.OpPush && o.After >= 0 {
			c.used[o.After] = true
		}
		for _, u := range o.Update {
			c.used[u] = true
		}
		if o.Kind == packet.OpLookup {
			for _, ai := range c.s.Tables[o.Table].Actions {
				for _, a := range c.s.Actions[ai].Body {
					c.used[a.Dst.Header] = true
				}
			}
		}
	}
	for h := range c.used {
		if c.s.Headers[h].Metadata {
			delete(c.used, h)
		}
	}
	return nil
}

// headerOrder lists the used wire headers: the deparser's order, then the
// others in declaration order.
func (c *gen) headerOrder() []int {
	out := slices.Clone(c.wire)
	for _, h := range c.s.Headers {
		if c.used[h.ID] && !slices.Contains(out, h.ID) {
			out = append(out, h.ID)
		}
	}
	return out
}

// lengthReads lists the fields of spec that its variable-length field's
// size is computed from.
func lengthReads(spec *packet.HeaderSpec) []int {
	var reads []int
	var walk func(e *packet.Expr)
	walk = func(e *packet.Expr) {
		if e == nil {
			return
		}
		if e.Kind == packet.EField && !slices.Contains(reads, e.Field.Field) {
			reads = append(reads, e.Field.Field)
		}
		walk(e.A)
		walk(e.B)
	}
	walk(spec.Fields[len(spec.Fields)-1].Length)
	return reads
}

// varMax is the most bytes header h's variable-length field can have: the
// largest size its length expression gives over every value of the fields
// it reads (sizes that would be negative make the extraction fail anyway).
func (c *gen) varMax(h int) (int, error) {
	spec := c.s.Headers[h]
	f := spec.Fields[len(spec.Fields)-1]
	reads := lengthReads(spec)
	bits := 0
	for _, r := range reads {
		bits += spec.Fields[r].Width
	}
	if bits > 20 {
		return 0, &Unsupported{Reason: fmt.Sprintf("header %s: the size of %s depends on %d bits of fields; too many to bound for a varbit", spec.Name, f.Name, bits)}
	}
	p := packet.NewPacket(c.s)
	p.Reset(make([]byte, spec.FixedBytes()))
	p.Hdr[h] = packet.HeaderState{Off: 0, Len: spec.FixedBytes(), Valid: true}
	best := 0
	for v := 0; v < 1<<bits; v++ {
		shift := 0
		for _, r := range reads {
			w := spec.Fields[r].Width
			p.Set(packet.FieldRef{Header: h, Field: r}, packet.V(uint64(v>>shift)&(1<<w-1)))
			shift += w
		}
		size, ok := f.Length.Eval(p, nil)
		if ok && size.Hi == 0 && size.Lo <= 1<<16 {
			best = max(best, int(size.Lo))
		}
	}
	return best, nil
}

// types writes the header types, the headers struct and the metadata.
func (c *gen) types(w *out) {
	for _, h := range c.headerOrder() {
		spec := c.s.Headers[h]
		w.line("// %s: %d bytes%s", spec.Name, spec.FixedBytes(), c.varNote(h))
		w.line("header %s_t {", c.hdrName[h])
		for i, f := range spec.Fields {
			if f.Variable() {
				continue
			}
			w.line("bit<%d> %s;", f.Width, c.fieldName[packet.FieldRef{Header: h, Field: i}])
		}
		w.line("}")
		w.line("")
		if v, ok := c.varName[h]; ok {
			f := spec.Fields[len(spec.Fields)-1]
			m, _ := c.varMax(h)
			w.line("// %s.%s: bytes(%s), at most %d", spec.Name, f.Name, f.Length.Text, m)
			w.line("header %s_t {", v)
			w.line("varbit<%d> %s;", m*8, c.fieldName[packet.FieldRef{Header: h, Field: len(spec.Fields) - 1}])
			w.line("}")
			w.line("")
		}
	}
	w.line("struct headers_t {")
	for _, h := range c.headerOrder() {
		w.line("%s_t %s;", c.hdrName[h], c.hdrName[h])
		if v, ok := c.varName[h]; ok {
			w.line("%s_t %s;", v, v)
		}
	}
	w.line("}")
	w.line("")
	var metas []*packet.HeaderSpec
	for _, h := range c.s.Headers {
		if h.Metadata {
			metas = append(metas, h)
		}
	}
	fields := func(h *packet.HeaderSpec) {
		for i, f := range h.Fields {
			w.line("bit<%d> %s;", f.Width, c.fieldName[packet.FieldRef{Header: h.ID, Field: i}])
		}
	}
	if len(metas) == 1 {
		w.line("// The model's metadata %s: zero when a frame comes in.", metas[0].Name)
		w.line("struct %s {", c.metaType)
		fields(metas[0])
	} else {
		for _, h := range metas {
			w.line("struct %s_t {", ident(h.Name))
			fields(h)
			w.line("}")
			w.line("")
		}
		w.line("// The model's metadata: zero when a frame comes in.")
		w.line("struct %s {", c.metaType)
		for _, h := range metas {
			w.line("%s_t %s;", ident(h.Name), ident(h.Name))
		}
	}
	if c.exitField != "" {
		w.line("bit<8> %s; // which way the parser left (nsc)", strings.TrimPrefix(c.exitField, c.metaParam+"."))
	}
	w.line("}")
	w.line("")
	if len(c.errors) > 0 {
		w.line("// Parse errors: a check of the model's parser failed at this node.")
		w.line("error {")
		for i, e := range c.errors {
			sep := ","
			if i == len(c.errors)-1 {
				sep = ""
			}
			w.line("%s%s", e, sep)
		}
		w.line("}")
		w.line("")
	}
}

func (c *gen) varNote(h int) string {
	if _, ok := c.varName[h]; ok {
		return " and a variable-length part"
	}
	return ""
}

// deparser emits the valid headers in wire order.
func (c *gen) deparser(w *out) {
	if c.opt.Arch == V1Model {
		w.line("control DeparserImpl(packet_out packet, in headers_t hdr) {")
	} else {
		w.line("control DeparserImpl(packet_out packet, in headers_t hdr, inout %s %s, inout standard_metadata_t smeta) {", c.metaType, c.metaParam)
	}
	w.line("apply {")
	w.line("// The valid headers in wire order; a popped header is not emitted.")
	for _, h := range c.wire {
		w.line("packet.emit(hdr.%s);", c.hdrName[h])
		if v, ok := c.varName[h]; ok {
			w.line("packet.emit(hdr.%s);", v)
		}
	}
	w.line("}")
	w.line("}")
	w.line("")
}

// pipeline instantiates the architecture's package.
func (c *gen) pipeline(w *out) {
	if c.opt.Arch == V1Model {
		w.line("control VerifyChecksumImpl(inout headers_t hdr, inout %s %s) {", c.metaType, c.metaParam)
		w.line("apply { }")
		w.line("}")
		w.line("")
		w.line("control EgressImpl(inout headers_t hdr, inout %s %s, inout standard_metadata_t standard_metadata) {", c.metaType, c.metaParam)
		w.line("apply { }")
		w.line("}")
		w.line("")
		w.line("control ComputeChecksumImpl(inout headers_t hdr, inout %s %s) {", c.metaType, c.metaParam)
		w.line("apply { }")
		w.line("}")
		w.line("")
		w.line("V1Switch(ParserImpl(), VerifyChecksumImpl(), IngressImpl(), EgressImpl(), ComputeChecksumImpl(), DeparserImpl()) main;")
		return
	}
	w.line("XilinxPipeline(")
	w.line("    ParserImpl(),")
	w.line("    MatchActionImpl(),")
	w.line("    DeparserImpl()")
	w.line(") main;")
}

// controlName is the match-action control's name.
func (c *gen) controlName() string {
	if c.opt.Arch == V1Model {
		return "IngressImpl"
	}
	return "MatchActionImpl"
}

// counter returns the counter for a count or drop label, declaring it.
func (c *gen) counter(label string) string {
	if name, ok := c.counters[label]; ok {
		return name
	}
	name := c.ctlNames.take(labelIdent(label))
	c.counters[label] = name
	c.ctrOrder = append(c.ctrOrder, label)
	return name
}

// dropKeyLabel is the label a drop is counted under.
func dropLabel(k sim.DropKey) string { return k.Reason }
