// Package xdp generates a Linux XDP program from a graph: libbpf-style C
// that runs a frame through the graph's nodes as straight-line code (one
// block per node, gotos between them), with the graph's tables in BPF maps
// and the interpreter's counters in a per-CPU array. A frame that leaves
// by the PRG's Tx wire is transmitted (XDP_TX), one that leaves by the
// LPG's ToHost node goes to the kernel (XDP_PASS), drops are XDP_DROP.
// The program behaves as the interpreter (sim) does on the same graph and
// table entries, counters included; the differential tests hold it to that.
//
// The graph must be single-path, as for the Go backend (backends/flow).
// What the backend cannot do exactly it refuses, naming the node and the
// limit: see docs/xdp.md.
package xdp

import (
	"bytes"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/prg"
)

// Options control the generated program.
type Options struct {
	// Command is recorded in the header comment: how to regenerate.
	Command string
	// Limits are the PRG's declared limits (prg.TableLimitNames), what
	// BPF and the kernel allow (models/ejfat/xdp.nsc); all are required.
	Limits map[string]int
}

// Program is a generated XDP program.
type Program struct {
	// C is the program's source.
	C []byte
	// Meta describes its maps and counters; C carries it too (MetaSection).
	Meta *xdprun.Meta
}

// Name is the target's name in refusals.
const Name = "xdp"

// Bounds of the generated code.
const (
	// MaxFrame is the longest frame the program runs the graph on, in a
	// linear head and fragments (frags.go): every jumbo MTU (9,000 and
	// the 9,216 or 9,600 some devices allow) with room to spare, and the
	// offset mask (NSC_OM, 16 KiB) less MaxPush. Longer ones go to the
	// kernel untouched, counted as oversize (docs/xdp.md).
	MaxFrame = 1<<14 - MaxPush
	// MaxScan bounds a priority table's entries: its lookup scans them
	// with a bounded loop, which the verifier walks through.
	MaxScan = 4096
	// MaxPush bounds the bytes a frame's path pushes: the interpreter has
	// room for 128 (docs/language.md 10.8), XDP for 256.
	MaxPush = 128
)

// TooShort is the reason a program drops a frame a pop would leave
// shorter than an Ethernet header: bpf_xdp_adjust_head keeps ETH_HLEN
// bytes.
const TooShort = "frame too short for XDP"

// FuncName is the XDP function of every generated program.
const FuncName = "nsc_xdp"

// Generate returns the C source of an XDP program that runs g.
func Generate(g *dataflow.Graph, opt Options) (*Program, error) {
	prog, err := lower.Lower(g, Name)
	if err != nil {
		return nil, err
	}
	newGen := func() *gen {
		c := &gen{g: g, s: g.Schema, start: prog.Start, tableUsed: map[int]bool{}, lim: map[string]int{}, topHdr: map[*dataflow.Node]hset{}, hpUsed: map[int]bool{}}
		maps.Copy(c.lim, opt.Limits)
		c.w = lower.NewWalker(prog, c, Name)
		c.layoutMeta()
		// Every join merged: keeping paths apart proves more headers
		// valid, and the generated program then keeps their pointers live
		// across more of it (through the map lookups' helper calls), which
		// made the LB's forward path slower (56 -> 67 ns).
		c.w.Analyze(1)
		return c
	}
	// BPF bounds every table resource, so the PRG must say how far.
	var missing []string
	for _, k := range prg.TableLimitNames {
		if _, ok := opt.Limits[k]; !ok {
			missing = append(missing, k)
		}
	}
	if missing != nil {
		return nil, backends.Refuse(Name, nil, "the PRG declares no limit %s; the XDP target takes its limits from its PRG (models/ejfat/xdp.nsc: compile with --prg XDP)", strings.Join(missing, ", "))
	}
	// Two passes: the first finds where each node leaves header pointers
	// checked, the second uses them where every path has.
	first := newGen()
	if err := first.checkPushes(); err != nil {
		return nil, err
	}
	first.body()
	if first.w.Refused != nil {
		return nil, first.w.Refused.Err()
	}
	c := newGen()
	c.avail = flow.Checked(g, prog.Start, first.w.Valid, first.topHdr)
	c.body()
	c.checkTables()
	if c.w.Refused != nil {
		return nil, c.w.Refused.Err()
	}
	return c.file(opt)
}

type gen struct {
	g     *dataflow.Graph
	s     *packet.Schema
	start *dataflow.Node
	b     bytes.Buffer
	tmp   int
	w     *lower.Walker // the lowered graph, printed through this dialect
	lim   map[string]int

	sinks      []xdprun.Sink // the walk's sinks and their verdicts
	tableUsed  map[int]bool
	tableNode  map[int]*dataflow.Node
	metaSlot   []int // per metadata field slot (MetaBase+field): first word
	metaWords  int
	validWords int
	usesSum    bool // nsc_sum: checksum verify/compute
	usesICRC   bool // nsc_icrc_bad: checksum verify icrc
	usesPopSum bool // nsc_popdelta
	usesMove   bool // nsc_pop_move / nsc_push_move
	// parseSites are the extractions the parses unrolled so far;
	// parsed and parseDone name a parse's result and its end.
	parseSites        int
	parsed, parseDone string
	scanTables        []int

	// Header pointers (hpN) checked on every path to a node (valid.go).
	avail  map[*dataflow.Node]hset
	topHdr map[*dataflow.Node]hset // pointers a node leaves checked
	hpUsed map[int]bool
	moved  bool // the node moved the frame: pointers are stale

	edgeCounters int
	flow         *flow.Flow

	// hdrs is a stack of scopes: header index -> variable holding a
	// pointer to its bytes (bounds checked for its fixed part).
	hdrs [][]hdrVar
	wins []window // a set's windows, from Old to Accumulate
	// A lookup's table layout and entry pointer, for its dispatch.
	layout      xdprun.Layout
	lookupEntry string
	// A pop's drop when the frame would be too short, and its header's
	// pointer where it has a fixed length, from PopStart on.
	popShort, popHdr string
	node             *dataflow.Node // being generated
	mal              string         // where malformed packets end
	// params are the C expressions of the current action's parameters:
	// the entry pointer and the word offsets.
	entry     string
	paramOff  []int
	paramWide []bool
}

type hdrVar struct {
	h int
	v string
}

// fail refuses the node being generated (or the graph).
func (c *gen) fail(format string, args ...any) { c.w.Refuse(c.node, format, args...) }

func (c *gen) emit(format string, args ...any) {
	fmt.Fprintf(&c.b, format, args...)
	c.b.WriteByte('\n')
}

func (c *gen) newTmp(prefix string) string {
	c.tmp++
	return fmt.Sprintf("%s%d", prefix, c.tmp)
}

// sinkStmt is the statement that sends the frame out at sink node n,
// the walk's sink i.
func (c *gen) sinkStmt(n *dataflow.Node, i int) string {
	if i == len(c.sinks) {
		v := verdict(n)
		if v == "" {
			c.fail("sink %s: the XDP hook has no output for it (frames leave by an emit, XDP_TX, or by a steer or an emit marked [host], XDP_PASS)", n.Name)
			v = "XDP_ABORTED"
		}
		c.sinks = append(c.sinks, xdprun.Sink{Node: n.Name, Verdict: v})
	}
	return fmt.Sprintf("NSC_SINK(%d, %s);", i, c.sinks[i].Verdict)
}

// verdict is the XDP action of a sink: an emit (the PRG's Tx wire, an
// LPG's exit) transmits; a steer or an emit marked [host] passes the frame
// to the kernel; a sink that does neither has no verdict.
func verdict(n *dataflow.Node) string {
	switch {
	case n.Op == nil:
	case n.Op.Kind == packet.OpSteer, n.Host:
		return "XDP_PASS"
	case n.Op.Kind == packet.OpEmit:
		return "XDP_TX"
	}
	return ""
}

// dropStmt is the statement that ends a frame at drop site (node,
// reason), coming from vertex from of the flow graph.
func (c *gen) dropStmt(from int64, node, reason string) string {
	return fmt.Sprintf("NSC_DROP(%d);", c.w.DropEnd(from, node, reason))
}

func (c *gen) malformed() string {
	return c.dropStmt(c.node.ID, c.mal, "malformed")
}

// layoutMeta assigns metadata fields their words in the state.
func (c *gen) layoutMeta() {
	c.metaSlot = make([]int, c.s.MetaFields)
	for _, h := range c.s.Headers {
		if !h.Metadata {
			continue
		}
		for i, f := range h.Fields {
			if h.MetaBase+i < len(c.metaSlot) {
				c.metaSlot[h.MetaBase+i] = c.metaWords
			}
			c.metaWords += xdprun.WordsOf(f.Width)
		}
	}
	c.validWords = max(1, (len(c.s.Headers)+63)/64)
}

// checkPushes refuses graphs on which a frame could push more than
// MaxPush bytes.
func (c *gen) checkPushes() error {
	order := c.g.Order()
	if order == nil {
		return backends.Refuse(Name, nil, "graph %s has a cycle", c.g.Name)
	}
	most := map[*dataflow.Node]int{}
	for _, n := range order {
		here := most[n]
		if n.Kind == dataflow.FNode && n.Op.Kind == packet.OpPush {
			h := c.s.Headers[n.Op.Header]
			if !h.Metadata {
				here += h.FixedBytes() + n.Op.Extra
			}
			if here > MaxPush {
				return backends.Refuse(Name, n, "a frame may have pushed %d bytes here; the interpreter guarantees room for %d (limit push bytes)", here, MaxPush)
			}
		}
		for _, p := range n.Ports {
			for _, e := range p.Out {
				most[e.To] = max(most[e.To], here)
			}
		}
	}
	return nil
}

// checkTables refuses the tables the graph looks up beyond the limits.
func (c *gen) checkTables() {
	var used []int
	for t := range c.tableUsed {
		used = append(used, t)
	}
	sort.Ints(used)
	over := func(name string, need int) bool { v, ok := c.lim[name]; return ok && need > v }
	for _, t := range used {
		spec := c.s.Tables[t].Spec
		n := c.tableNode[t]
		where := "table " + spec.Name
		keyBits, actionBits := spec.KeyBits(), spec.ActionBits()
		size := xdprun.TableSize(spec)
		l := xdprun.LayoutOf(spec)
		switch {
		case over("table_size", size):
			c.w.Refuse(n, "%s has %d entries and XDP maps hold at most %d here (limit table_size)", where, size, c.lim["table_size"])
		case over("key_bits", keyBits):
			c.w.Refuse(n, "%s has a %d-bit key and XDP takes at most %d bits (limit key_bits)", where, keyBits, c.lim["key_bits"])
		case over("action_bits", actionBits):
			c.w.Refuse(n, "%s's actions carry %d bits of parameters and XDP at most %d (limit action_bits)", where, actionBits, c.lim["action_bits"])
		case l.Mode == xdprun.ModeScan && size > MaxScan:
			c.w.Refuse(n, "%s needs priorities and has %d entries; the XDP backend scans priority tables with a bounded loop of at most %d entries (limit table_size for priority tables)", where, size, MaxScan)
		case l.Mode == xdprun.ModeLPM && l.LPMBytes > 256:
			c.w.Refuse(n, "%s's LPM key is %d bytes and a BPF LPM trie takes at most 256 (limit key_bits)", where, l.LPMBytes)
		}
	}
	if over("tables", len(used)) {
		c.w.Refuse(nil, "graph %s looks up %d tables and an XDP program holds at most %d (limit tables)", c.g.Name, len(used), c.lim["tables"])
	}
}

// body generates the program's statements: the start node, then every
// F-node a jump leads to, in topological order, each behind its label.
func (c *gen) body() {
	c.tableNode = map[int]*dataflow.Node{}
	code, _, live := c.w.Print(func(b *lower.Block) {
		n := b.Node
		c.b.Reset()
		c.node = n
		c.moved = false
		c.emit("{ /* %s: %s */", n.Name, cComment(n.Op.Describe(c.s)))
		c.hdrs = [][]hdrVar{{}}
		c.mal = n.Name
	}, func(*lower.Block) []byte {
		c.emit("}")
		return bytes.Clone(c.b.Bytes())
	})
	c.node = nil
	c.flow = c.placeCounters(code, live)
	c.b.Reset()
	for _, n := range c.g.Order() {
		if !live[n] || code[n] == nil {
			continue
		}
		if n != c.start {
			fmt.Fprintf(&c.b, "n%d:\n", n.ID)
		}
		c.b.Write(code[n])
	}
}

func cComment(s string) string { return strings.ReplaceAll(s, "*/", "* /") }

// The dialect's operations (lower.Dialect): the Walker fires the ports.

func (c *gen) DropUnless(cond string) { c.emit("if (!%s) %s", cond, c.malformed()) }

func (c *gen) Extract(_ *dataflow.Node, x *lower.Extract) (string, bool) { return c.extract(x), false }

func (c *gen) If(cond string) { c.emit("if %s {", paren(cond)) }
func (c *gen) EndIf()         { c.emit("}") }

// paren puts a condition in parentheses unless it is in a pair already.
func paren(cond string) string {
	if len(cond) >= 2 && cond[0] == '(' && cond[len(cond)-1] == ')' {
		depth := 0
		for i, ch := range cond {
			switch ch {
			case '(':
				depth++
			case ')':
				depth--
			}
			if depth == 0 && i < len(cond)-1 {
				return "(" + cond + ")"
			}
		}
		return cond
	}
	return "(" + cond + ")"
}

// The ways out of a block (lower.Walker.Exit).

func (c *gen) Decided(h *lower.Hop, edge string) {
	c.emit("%s/* decided %s %s */", edge, h.Node.Name, h.Port)
}

func (c *gen) Goto(e *lower.Exit, edge string) { c.emit("%sgoto n%d;", edge, e.To.ID) }
func (c *gen) Sink(e *lower.Exit, sink int)    { c.emit("%s", c.sinkStmt(e.To, sink)) }
func (c *gen) Drop(_ *lower.Exit, drop int)    { c.emit("NSC_DROP(%d);", drop) }

func (c *gen) Undecided(_ *lower.Exit, why, edge string, drop int) {
	if why != "" {
		why = " /* " + why + " */"
	}
	c.emit("%sNSC_DROP(%d);%s", edge, drop, why)
}

// A switch on a word is a C switch; on a 128-bit value a chain of ifs.

func (c *gen) Switch(sw *lower.Switch) {
	sw.Var, _ = c.w.Var("sw", sw.Node.Op.Expr)
	if !sw.Wide {
		c.emit("switch (%s) {", sw.Var)
	}
}

func (c *gen) Case(sw *lower.Switch, i int, v packet.Value) {
	switch {
	case !sw.Wide:
		c.emit("case %s:", ulit(v.Lo))
	case i == 0:
		c.emit("if (nsc_veq(%s, %s)) {", sw.Var, vlit(v))
	default:
		c.emit("} else if (nsc_veq(%s, %s)) {", sw.Var, vlit(v))
	}
}

func (c *gen) Default(sw *lower.Switch) {
	switch {
	case !sw.Wide:
		c.emit("default:")
	case len(sw.Node.Op.Cases) > 0:
		c.emit("}")
	}
}

func (c *gen) EndSwitch(sw *lower.Switch) {
	if !sw.Wide {
		c.emit("}")
	}
}

// hdr returns a variable pointing to wire header h's bytes, generating
// the check that it is there (else the packet is malformed) and the bounds
// check of its fixed part the verifier needs.
func (c *gen) hdr(h int) string {
	for i := len(c.hdrs) - 1; i >= 0; i-- {
		for _, x := range c.hdrs[i] {
			if x.h == h {
				return x.v
			}
		}
	}
	spec := c.s.Headers[h]
	v := fmt.Sprintf("hp%d", h) // function-scope: later nodes may use it (avail)
	c.hpUsed[h] = true
	if c.hasAvail(h) {
		c.hdrs[len(c.hdrs)-1] = append(c.hdrs[len(c.hdrs)-1], hdrVar{h, v})
		return v
	}
	if len(c.hdrs) == 1 && c.node != nil {
		c.topHdr[c.node] = c.topHdr[c.node].With(h, len(c.s.Headers))
	}
	o := c.newTmp("o")
	if k := c.w.Known(h); k != lower.KnownValid {
		c.emit("if (!%s) %s /* %s */", c.present(h, k), c.malformed(), spec.Name)
	}
	c.emit("__u32 %s = st->off[%d] & NSC_OM;", o, h)
	if variable(spec) {
		c.emit("if (%s + st->len[%d] > NSC_LEN) %s", o, h, c.malformed())
	}
	c.emit("%s = (unsigned char *)data + %s;", v, o)
	c.emit("NSC_HIDE(%s);", v)
	// A fixed header's length is its fixed part, so this is also the
	// interpreter's check that the header lies inside the frame, where
	// the frame is all head (else inHead tells the two apart).
	if n := spec.FixedBytes(); n > 0 {
		c.emit("%s", c.inHead(v, o, n))
	}
	c.hdrs[len(c.hdrs)-1] = append(c.hdrs[len(c.hdrs)-1], hdrVar{h, v})
	return v
}

// cachedHdr returns the variable pointing to header h in the current
// scopes, if there is one.
func (c *gen) cachedHdr(h int) (string, bool) {
	for i := len(c.hdrs) - 1; i >= 0; i-- {
		for _, x := range c.hdrs[i] {
			if x.h == h {
				return x.v, true
			}
		}
	}
	return "", false
}

// variable reports whether a header has a variable-length last field (its
// length is then more than its fixed part).
func variable(h *packet.HeaderSpec) bool {
	return len(h.Fields) > 0 && h.Fields[len(h.Fields)-1].Variable()
}

// valid is a C condition: header h is valid, spelled as lower knows it
// here (Walker.Known).
func (c *gen) valid(h int) string { return c.present(h, c.w.Known(h)) }

// present spells "header h is valid" where k is known of it.
func (c *gen) present(h int, k lower.Known) string {
	switch k {
	case lower.KnownValid:
		return "1"
	case lower.KnownInvalid:
		return "0"
	}
	return fmt.Sprintf("NSC_VALID(%d)", h)
}

// forget drops every header pointer: the frame moved.
func (c *gen) forget() {
	c.moved = true
	if c.node != nil {
		delete(c.topHdr, c.node) // what was checked before no longer holds
	}
	for i := range c.hdrs {
		c.hdrs[i] = nil
	}
}

// Lookup generates a table lookup (lower.Lookup) in the table's BPF map
// or maps (xdprun.Layout), its action and the jump.
func (c *gen) Lookup(n *dataflow.Node, lk *lower.Lookup) {
	t, def := lk.Table, lk.Def
	spec := def.Spec
	c.tableUsed[t] = true
	if c.tableNode[t] == nil {
		c.tableNode[t] = n
	}
	l := xdprun.LayoutOf(spec)
	e := c.newTmp("e")
	switch l.Mode {
	case xdprun.ModeSlots:
		var parts []string
		for j := len(lk.Keys) - 1; j >= 0; j-- {
			v := c.newTmp("kv")
			c.keyWord(lk.Keys[j], "__u64 "+v)
			parts = append(parts, fmt.Sprintf("(%s << %d)", v, lk.Keys[j].Shift))
		}
		k := c.newTmp("k")
		c.emit("__u64 %s = %s;", k, strings.Join(parts, " | "))
		c.emit("const struct nsc_t%d_val *%s = &nsc_t%d_def;", t, e, t)
		c.emit("{")
		c.emit("__u64 h = %s * 0x9e3779b97f4a7c15ULL;", k)
		c.emit("h ^= h >> 29;")
		c.emit("for (__u32 i = 0; i < %d; i++) {", xdprun.MaxProbe)
		c.emit("__u32 s = (__u32)((h + i) & %d);", l.Slots-1)
		c.emit("const struct nsc_t%d_slot *sl = bpf_map_lookup_elem(&nsc_t%d, &s);", t, t)
		c.emit("if (!sl || !sl->used) break;")
		c.emit("if (sl->key == %s) { %s = (const struct nsc_t%d_val *)&sl->action; break; }", k, e, t)
		c.emit("}")
		c.emit("}")
	case xdprun.ModeHash:
		k := c.newTmp("k")
		c.emit("struct nsc_t%d_key %s;", t, k)
		c.emit("__builtin_memset(&%s, 0, sizeof(%s));", k, k)
		c.keyWords(lk, k) // keys that fit a word together are xdprun.ModeSlots
		c.emit("const struct nsc_t%d_val *%s = bpf_map_lookup_elem(&nsc_t%d, &%s);", t, e, t, k)
		c.emit("if (!%s) %s = &nsc_t%d_def;", e, e, t)
	case xdprun.ModeLPM:
		k := c.newTmp("k")
		c.emit("struct nsc_t%d_key %s;", t, k)
		c.emit("__builtin_memset(&%s, 0, sizeof(%s));", k, k)
		c.emit("%s.prefixlen = %d;", k, 8*l.LPMBytes)
		for j := range lk.Keys {
			kx := &lk.Keys[j]
			v := c.newTmp("kv")
			if kx.Words == 2 {
				c.emit("nsc_v128 %s = nsc_vshl(nsc_vand(%s, %s), %d);", v, c.Value(kx.Expr), vlit(packet.Mask(kx.Width)), kx.Pad)
				for i := range kx.Bytes {
					if sh := kx.ByteShift(i); sh >= 64 {
						c.emit("%s.data[%d] = (__u8)(%s.hi >> %d);", k, l.LPMOff[j]+i, v, sh-64)
					} else {
						c.emit("%s.data[%d] = (__u8)nsc_vshr(%s, %d).lo;", k, l.LPMOff[j]+i, v, sh)
					}
				}
				continue
			}
			c.emit("__u64 %s = ((%s)%s) << %d;", v, c.low(kx.Expr), maskSuffix(kx.Width), kx.Pad)
			for i := range kx.Bytes {
				c.emit("%s.data[%d] = (__u8)(%s >> %d);", k, l.LPMOff[j]+i, v, kx.ByteShift(i))
			}
		}
		c.emit("const struct nsc_t%d_val *%s = bpf_map_lookup_elem(&nsc_t%d, &%s);", t, e, t, k)
		c.emit("if (!%s) %s = &nsc_t%d_def;", e, e, t)
	case xdprun.ModeScan:
		c.registerScan(t)
		k := c.newTmp("k")
		c.emit("struct nsc_t%d_keys %s;", t, k)
		c.emit("__builtin_memset(&%s, 0, sizeof(%s));", k, k)
		c.keyWords(lk, k)
		ent := c.newTmp("x")
		c.emit("const struct nsc_t%d_ent *%s = nsc_find%d(&%s);", t, ent, t, k)
		c.emit("const struct nsc_t%d_val *%s = &nsc_t%d_def;", t, e, t)
		c.emit("if (%s) %s = (const struct nsc_t%d_val *)&%s->action;", ent, e, t, ent)
	}
	c.layout, c.lookupEntry = l, e
	c.w.Actions(n, lk)
}

// keyWords stores lookup lk's keys, each cut to its width, in the words
// of key struct k, a two-word key's high word first.
func (c *gen) keyWords(lk *lower.Lookup, k string) {
	w := 0
	for _, kx := range lk.Keys {
		if kx.Words == 2 {
			v := c.newTmp("kv")
			c.emit("nsc_v128 %s = nsc_vand(%s, %s);", v, c.Value(kx.Expr), vlit(packet.Mask(kx.Width)))
			c.emit("%s.k[%d] = %s.hi;", k, w, v)
			c.emit("%s.k[%d] = %s.lo;", k, w+1, v)
		} else {
			c.keyWord(kx, fmt.Sprintf("%s.k[%d]", k, w))
		}
		w += kx.Words
	}
}

// keyWord stores key k of one word, cut to its width, in dst.
func (c *gen) keyWord(k lower.LookupKey, dst string) {
	if k.Wide {
		c.emit("%s = nsc_vand(%s, %s).lo;", dst, c.Value(k.Expr), vlit(packet.Mask(k.Width)))
		return
	}
	c.emit("%s = (%s)%s;", dst, c.low(k.Expr), maskSuffix(k.Width))
}

func (c *gen) registerScan(t int) {
	for _, x := range c.scanTables {
		if x == t {
			return
		}
	}
	c.scanTables = append(c.scanTables, t)
}

// The action dispatch (lower.ActionSyntax): a switch on the entry's
// action, the parameters read from the entry (c.lookupEntry) at the
// layout's offsets.

func (c *gen) Dispatch(*lower.Lookup) { c.emit("switch (%s->action) {", c.lookupEntry) }

func (c *gen) Action(lk *lower.Lookup, i int) {
	a := lk.Actions[i]
	if i == len(lk.Actions)-1 {
		c.emit("default: /* %s */ {", cComment(a.Name))
	} else {
		c.emit("case %d: /* %s */ {", i, cComment(a.Name))
	}
	l := c.layout
	c.entry = c.lookupEntry
	c.paramOff = nil
	c.paramWide = nil
	for pi, p := range a.Params {
		off := 0
		if i < len(l.ParamOff) && pi < len(l.ParamOff[i]) {
			off = l.ParamOff[i][pi]
		}
		c.paramOff = append(c.paramOff, off)
		c.paramWide = append(c.paramWide, p.Width > 64)
	}
}

func (c *gen) EndAction(*lower.Lookup, int) {
	c.entry = ""
	c.emit("}")
}

func (c *gen) EndDispatch(*lower.Lookup) { c.emit("}") }

// assign generates one assignment.
func (c *gen) assign(a packet.Assign) {
	h := c.s.Headers[a.Dst.Header]
	fs := h.Fields[a.Dst.Field]
	wide := flow.IsWide(a.Src) || fs.Width > 64
	if wide && fs.Width <= 64 && flow.LowPreserving(a.Src) {
		wide = false // the destination keeps only low bits
	}
	switch {
	case h.Metadata:
		slot := c.metaSlot[h.MetaBase+a.Dst.Field]
		if fs.Width > 64 {
			v := c.newTmp("v")
			c.emit("nsc_v128 %s = nsc_vand(%s, %s);", v, c.Value(a.Src), vlit(packet.Mask(fs.Width)))
			c.emit("st->m[%d] = %s.hi; st->m[%d] = %s.lo;", slot, v, slot+1, v)
			return
		}
		if wide {
			c.emit("st->m[%d] = nsc_vand(%s, %s).lo;", slot, c.Value(a.Src), vlit(packet.Mask(fs.Width)))
			return
		}
		c.emit("st->m[%d] = (%s)%s;", slot, c.low(a.Src), maskSuffix(fs.Width))
	default:
		var v string
		t := c.newTmp("v")
		if wide {
			c.emit("nsc_v128 %s = %s;", t, c.Value(a.Src))
			v = t
		} else {
			c.emit("__u64 %s = %s;", t, c.low(a.Src))
			v = t
		}
		b := c.hdr(a.Dst.Header)
		c.put(b, fs, v, wide)
	}
}

// put writes value v (a __u64 variable, or an nsc_v128 if wide) into
// field fs of the header at pointer b.
func (c *gen) put(b string, fs packet.FieldSpec, v string, wide bool) {
	k := fs.Offset / 8
	if fs.Offset%8 == 0 {
		switch {
		case fs.Width == 8:
			c.emit("%s[%d] = (__u8)%s;", b, k, lo(v, wide))
			return
		case fs.Width == 16:
			c.emit("*(__u16 *)(%s + %d) = bpf_htons((__u16)%s);", b, k, lo(v, wide))
			return
		case fs.Width == 32:
			c.emit("*(__u32 *)(%s + %d) = bpf_htonl((__u32)%s);", b, k, lo(v, wide))
			return
		case fs.Width == 64:
			c.emit("*(__u64 *)(%s + %d) = bpf_cpu_to_be64(%s);", b, k, lo(v, wide))
			return
		case fs.Width == 48:
			t := c.newTmp("v")
			c.emit("__u64 %s = %s;", t, lo(v, wide))
			c.emit("*(__u16 *)(%s + %d) = bpf_htons((__u16)(%s >> 32));", b, k, t)
			c.emit("*(__u32 *)(%s + %d) = bpf_htonl((__u32)%s);", b, k+2, t)
			return
		case fs.Width == 128 && wide:
			c.emit("*(__u64 *)(%s + %d) = bpf_cpu_to_be64(%s.hi);", b, k, v)
			c.emit("*(__u64 *)(%s + %d) = bpf_cpu_to_be64(%s.lo);", b, k+8, v)
			return
		}
	}
	if fs.Width > 64 {
		hi := v + ".hi"
		if !wide {
			hi = "0"
		}
		c.putBits(b, fs.Offset, fs.Width-64, hi)
		c.putBits(b, fs.Offset+fs.Width-64, 64, lo(v, wide))
		return
	}
	c.putBits(b, fs.Offset, fs.Width, lo(v, wide))
}

func lo(v string, wide bool) string {
	if wide {
		return v + ".lo"
	}
	return v
}

// putBits writes the low w (1..64) bits of x at bit offset off of b, byte
// by byte, keeping the bits around the field.
func (c *gen) putBits(b string, off, w int, x string) {
	end := off + w
	for j := off / 8; j*8 < end; j++ {
		lo, hi := max(off, 8*j), min(end, 8*j+8)
		var mask uint8
		for bit := lo; bit < hi; bit++ {
			mask |= 0x80 >> (bit - 8*j)
		}
		shift := end - (8*j + 8) // how far the field's end lies past this byte's end
		var bits string
		if shift >= 0 {
			bits = fmt.Sprintf("(__u8)((%s) >> %d)", x, shift)
		} else {
			bits = fmt.Sprintf("(__u8)((%s) << %d)", x, -shift)
		}
		if mask == 0xff {
			c.emit("%s[%d] = %s;", b, j, bits)
			continue
		}
		c.emit("%s[%d] = (%s[%d] & 0x%02x) | (%s & 0x%02x);", b, j, b, j, ^mask, bits, mask)
	}
}

// getBits reads w (1..64) bits at bit offset off of b as a __u64.
func getBits(b string, off, w int) string {
	end := off + w
	var parts []string
	for j := off / 8; j*8 < end; j++ {
		shift := end - (8*j + 8)
		if shift >= 0 {
			parts = append(parts, fmt.Sprintf("((__u64)%s[%d] << %d)", b, j, shift))
		} else {
			parts = append(parts, fmt.Sprintf("((__u64)%s[%d] >> %d)", b, j, -shift))
		}
	}
	return fmt.Sprintf("((%s)%s)", strings.Join(parts, " | "), maskSuffix(w))
}

// readField reads a field as __u64 or, if wide, as nsc_v128.
func (c *gen) readField(f packet.FieldRef, wide bool) string {
	h := c.s.Headers[f.Header]
	fs := h.Fields[f.Field]
	if fs.Variable() {
		c.fail("%s.%s has a variable length and no value", h.Name, fs.Name)
		return "0"
	}
	if h.Metadata {
		slot := c.metaSlot[h.MetaBase+f.Field]
		switch {
		case fs.Width > 64 && wide:
			return fmt.Sprintf("nsc_v(st->m[%d], st->m[%d])", slot, slot+1)
		case fs.Width > 64:
			return fmt.Sprintf("st->m[%d]", slot+1)
		case wide:
			return fmt.Sprintf("nsc_v(0, st->m[%d])", slot)
		}
		return fmt.Sprintf("st->m[%d]", slot)
	}
	b := c.hdr(f.Header)
	k := fs.Offset / 8
	var u string
	if fs.Offset%8 == 0 {
		switch fs.Width {
		case 8:
			u = fmt.Sprintf("(__u64)%s[%d]", b, k)
		case 16:
			u = fmt.Sprintf("(__u64)bpf_ntohs(*(__u16 *)(%s + %d))", b, k)
		case 32:
			u = fmt.Sprintf("(__u64)bpf_ntohl(*(__u32 *)(%s + %d))", b, k)
		case 48:
			u = fmt.Sprintf("((__u64)bpf_ntohs(*(__u16 *)(%s + %d)) << 32 | (__u64)bpf_ntohl(*(__u32 *)(%s + %d)))", b, k, b, k+2)
		case 64:
			u = fmt.Sprintf("bpf_be64_to_cpu(*(__u64 *)(%s + %d))", b, k)
		case 128:
			hi := fmt.Sprintf("bpf_be64_to_cpu(*(__u64 *)(%s + %d))", b, k)
			lo := fmt.Sprintf("bpf_be64_to_cpu(*(__u64 *)(%s + %d))", b, k+8)
			if wide {
				return fmt.Sprintf("nsc_v(%s, %s)", hi, lo)
			}
			return lo
		}
	}
	if u == "" && fs.Width <= 64 {
		u = getBits(b, fs.Offset, fs.Width)
	}
	if u == "" { // wider than 64 bits, unaligned
		hi := getBits(b, fs.Offset, fs.Width-64)
		lo := getBits(b, fs.Offset+fs.Width-64, 64)
		if wide {
			return fmt.Sprintf("nsc_v(%s, %s)", hi, lo)
		}
		return lo
	}
	if wide {
		return "nsc_v(0, " + u + ")"
	}
	return u
}

// The C literals.

func ulit(x uint64) string { return fmt.Sprintf("0x%xULL", x) }

func vlit(v packet.Value) string { return fmt.Sprintf("nsc_v(0x%xULL, 0x%xULL)", v.Hi, v.Lo) }

func maskSuffix(w int) string {
	if w >= 64 {
		return ""
	}
	return fmt.Sprintf(" & 0x%xULL", uint64(1)<<w-1)
}
