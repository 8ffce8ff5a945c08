// Package verify checks an embedding on packets: the same frames go
// through the LPG alone and through the embedded graph (PRG hardware
// nodes run their declared operations in the interpreter), and what comes
// out must be the same: which LPG sink each packet reaches, with which
// bytes, or that it is dropped.
//
// The frames cover every predicate class of the embedded graph (satisfying
// assignments of each port's BDD, turned into bytes by Frame), the classes
// that lack each fact the embedded graph trusts a PRG port with (Claims),
// plus random and malformed ones (Mutations).
package verify

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/lpg"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/predicate"
	"github.com/dragonet-go/nsc/sim"
)

// Case is one packet to run: where it enters the LPG, its bytes and
// metadata, and why it was made.
type Case struct {
	Source string
	Frame  []byte
	Meta   []packet.Value
	Why    string
	// Claim is the Name of the claim the packet tests, if it tests one.
	Claim string
	// Fresh runs the case on empty registers in both graphs (the first
	// segment of a sequence: registers never expire, so what earlier
	// cases stored, a full register, could keep every later frame from
	// the place; keyed state expires, and what it accumulates, timeouts
	// and caps, is part of what sequences test).
	Fresh bool
	// Wait is the time that passes before the case runs, besides the
	// millisecond between any two cases (a segment after its event's
	// timeout).
	Wait time.Duration
}

// Out is one place a packet ended: an LPG sink (by its LPG name) with the
// bytes, or a drop.
type Out struct {
	Where string
	Bytes []byte
}

// Dropped is Out.Where for a packet that was dropped, wherever.
const Dropped = "(dropped)"

// Mismatch is a case whose outcomes differ.
type Mismatch struct {
	Case      Case
	LPG, Embd []Out
	// Passed names the claims at the nodes the packet ran in the embedded
	// graph: the facts it may have been trusted with on its way.
	Passed []string
	// Moved names the LPG nodes the packet ran in the LPG alone that the
	// embedder moved to hardware, with where: the class of work the
	// hardware was trusted with.
	Moved []string
}

func (m Mismatch) String() string {
	var passed string
	if len(m.Passed) > 0 {
		passed = "claims at nodes it ran: " + strings.Join(m.Passed, "; ") + "\n"
	}
	if len(m.Moved) > 0 {
		passed += "moved to hardware, ran in the LPG: " + strings.Join(m.Moved, "; ") + "\n"
	}
	return fmt.Sprintf("packet from %s (%s), %d bytes:\n%s%s", m.Case.Source, m.Case.Why, len(m.Case.Frame),
		passed, cmp.Diff(m.LPG, m.Embd))
}

// moved names the LPG nodes moved to hardware (or split) that r's last
// case ran in the LPG alone: "LbIPv4Strip (hardware TxV4Strip unless
// ethernet.type != 2048)".
func moved(em *embed.Embedding, r *runner) []string {
	var out []string
	for _, p := range em.Placements {
		if p.Kind != embed.Hardware && p.Kind != embed.Split {
			continue
		}
		if n := em.LPG.Node(p.Node); n != nil && r.ran(n) {
			s := fmt.Sprintf("%s (hardware %s", p.Node, p.Hardware)
			if p.Guard != "" {
				s += " unless " + p.Guard
			}
			out = append(out, s+")")
		}
	}
	return out
}

// Result sums up a run.
type Result struct {
	Cases      int
	Classes    int // cases made from predicate classes
	Sequences  int // cases that are segments of a sequence (sequences.go)
	Mismatches []Mismatch
	// Claims has one entry per claim of the embedded graph (Claims), with
	// the cases that tested it.
	Claims []ClaimResult
	// Hosted counts the frames a device that runs only part of the
	// embedded graph handed to the host (embed.Embedding.Device).
	Hosted int
	// ForHost counts the cases made from the classes a device hands the
	// host (Generate).
	ForHost int
	// Unreached lists the LPG nodes some run never reached, each with
	// why (Coverage).
	Unreached []Unreached
}

// Unreached is an LPG node no case ran, in the LPG alone or embedded.
type Unreached struct {
	Node, Why string
}

// coverage lists the LPG nodes a side never ran: in the LPG alone, no
// case reached them; embedded, no copy of them ran though the embedder
// left one (a node it moved to hardware or pruned runs as no copy).
func coverage(em *embed.Embedding, lpgRuns, embRuns map[string]uint64) []Unreached {
	copies := map[string]uint64{}
	for name, n := range embRuns {
		if o := em.Origin[name]; o.LPG != "" {
			copies[o.LPG] += n
		}
	}
	var out []Unreached
	for _, p := range em.Placements {
		n := em.LPG.Node(p.Node)
		if n == nil {
			continue
		}
		switch {
		case lpgRuns[p.Node] == 0:
			out = append(out, Unreached{p.Node, "no packet reached it in the LPG alone"})
		case copies[p.Node] == 0 && (p.Kind == embed.Software || p.Kind == embed.Program || p.Kind == embed.Split) && !n.Sink:
			out = append(out, Unreached{p.Node, fmt.Sprintf("no packet reached its copy embedded (%s)", p.Kind)})
		}
	}
	return out
}

// ClaimResult counts the packets made to test one claim: how many were
// run, how many reached the claim's node in the embedded graph, and how
// many came out differently from the LPG alone.
type ClaimResult struct {
	Claim                        *Claim
	Packets, Reached, Mismatches int
}

// runner runs cases through one graph and names the outcomes in LPG terms.
type runner struct {
	m     *sim.Machine
	entry map[string]*dataflow.Node // LPG source name -> node of this graph
	name  func(*dataflow.Node) string
	outs  []Out
	// before and after are the counters around the last case.
	before, after sim.Counters
	// host, for a device that runs only part of the embedded graph
	// (embed.Embedding.Device), runs what the device hands the host: the
	// frames that reach an emit marked [host] (its punt among them).
	host   *runner
	passed [][]byte
	hosted int // frames handed to the host
}

func (r *runner) run(c Case) ([]Out, error) {
	start := r.entry[c.Source]
	if start == nil {
		return nil, fmt.Errorf("no entry for %s", c.Source)
	}
	r.outs, r.passed = r.outs[:0], r.passed[:0]
	if c.Fresh {
		r.m.ForgetRegisters()
		if r.host != nil {
			r.host.m.ShareRegisters(r.m)
		}
	}
	r.before = r.m.Counters()
	r.m.RunMeta(start, c.Frame, c.Meta, func(sink *dataflow.Node, data []byte) {
		if r.host != nil && sink.Host {
			r.passed = append(r.passed, slices.Clone(data))
			return
		}
		r.outs = append(r.outs, Out{r.name(sink), slices.Clone(data)})
	})
	r.after = r.m.Counters()
	for n := totalDrops(r.after) - totalDrops(r.before); n > 0; n-- {
		r.outs = append(r.outs, Out{Where: Dropped})
	}
	if r.host != nil {
		r.host.before = r.host.after // ran: nothing on the host yet
	}
	for _, f := range r.passed {
		r.hosted++
		out, err := r.host.run(Case{Source: c.Source, Frame: f, Meta: c.Meta}) // registers shared, forgotten above
		if err != nil {
			return nil, err
		}
		r.outs = append(r.outs, out...)
	}
	out := slices.Clone(r.outs)
	slices.SortFunc(out, func(a, b Out) int {
		if c := strings.Compare(a.Where, b.Where); c != 0 {
			return c
		}
		return slices.Compare(a.Bytes, b.Bytes)
	})
	return out, nil
}

func totalDrops(c sim.Counters) uint64 {
	var n uint64
	for _, v := range c.Drops {
		n += v
	}
	return n
}

// Run runs the cases through the LPG alone and the embedded graph, with
// empty tables. progress, if not nil, is called after each case.
func Run(em *embed.Embedding, cases []Case, progress func(done int)) (*Result, error) {
	return RunTables(em, nil, cases, progress)
}

// RunTables is Run with the tables tables makes (nil: empty ones), one
// set for each side (and for a device's part), so that packets reach what only entries lead to (an
// LB's forwarding and its rewrites).
func RunTables(em *embed.Embedding, tables func() ([]*table.Table, error), cases []Case, progress func(done int)) (*Result, error) {
	load := func() ([]*table.Table, error) {
		if tables == nil {
			return nil, nil
		}
		return tables()
	}
	ts, err := load()
	if err != nil {
		return nil, err
	}
	lpg, err := sim.New(em.LPG, ts)
	if err != nil {
		return nil, err
	}
	if ts, err = load(); err != nil {
		return nil, err
	}
	emb, err := sim.New(em.Graph, ts)
	if err != nil {
		return nil, err
	}
	// One logical clock, a millisecond a case, so that keyed state times
	// out at the same case in both.
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	lpg.SetClock(clock)
	emb.SetClock(clock)
	ref := &runner{m: lpg, entry: map[string]*dataflow.Node{}, name: func(n *dataflow.Node) string { return n.Name }}
	for _, s := range em.LPG.Sources() {
		ref.entry[s.Name] = s
	}
	got := &runner{m: emb, entry: Entries(em), name: func(n *dataflow.Node) string { return lpgName(em, n) }}
	if em.Device != nil {
		// The split system: the device's part, then the host on what it
		// passes; each holds the entries (the host re-runs the device's
		// decisions).
		if ts, err = load(); err != nil {
			return nil, err
		}
		dev, err := sim.New(em.Device, ts)
		if err != nil {
			return nil, err
		}
		host := got
		// The host reads and writes the device's registers (a BPF map,
		// an FPGA's register file), as it re-runs its decisions.
		host.m.ShareRegisters(dev)
		got = &runner{m: dev, entry: map[string]*dataflow.Node{}, name: host.name, host: host}
		for src, n := range host.entry {
			got.entry[src] = em.Device.Node(n.Name)
		}
	}
	res := &Result{}
	claims := map[string]*ClaimResult{}
	for _, c := range Claims(em) {
		res.Claims = append(res.Claims, ClaimResult{Claim: c})
	}
	for i := range res.Claims {
		claims[res.Claims[i].Claim.Name()] = &res.Claims[i]
	}
	for i, c := range cases {
		now = now.Add(time.Millisecond + c.Wait)
		want, err := ref.run(c)
		if err != nil {
			return nil, err
		}
		have, err := got.run(c)
		if err != nil {
			return nil, err
		}
		res.Cases++
		switch {
		case strings.HasPrefix(c.Why, "class"):
			res.Classes++
		case strings.HasPrefix(c.Why, "sequence"):
			res.Sequences++
		case strings.HasPrefix(c.Why, puntWhy):
			res.ForHost++
		}
		same := slices.EqualFunc(want, have, func(a, b Out) bool { return a.Where == b.Where && bytes.Equal(a.Bytes, b.Bytes) })
		if !same {
			res.Mismatches = append(res.Mismatches, Mismatch{Case: c, LPG: want, Embd: have, Passed: passed(res.Claims, got), Moved: moved(em, ref)})
		}
		if cr := claims[c.Claim]; cr != nil {
			cr.count(got, same)
		}
		if progress != nil {
			progress(i + 1)
		}
	}
	res.Hosted = got.hosted
	embRuns := got.m.Counters().Nodes
	if got.host != nil { // the device's runs and the host's
		embRuns = maps.Clone(embRuns)
		for n, v := range got.host.m.Counters().Nodes {
			embRuns[n] += v
		}
	}
	res.Unreached = coverage(em, ref.m.Counters().Nodes, embRuns)
	return res, nil
}

// count adds a case that tested the claim, run by r.
func (cr *ClaimResult) count(r *runner, same bool) {
	cr.Packets++
	if r.ran(cr.Claim.node) {
		cr.Reached++
	}
	if !same {
		cr.Mismatches++
	}
}

// passed names the claims whose nodes r's last case ran.
func passed(cs []ClaimResult, r *runner) []string {
	var out []string
	for _, c := range cs {
		if r.ran(c.Claim.node) {
			out = append(out, c.Claim.Name())
		}
	}
	return out
}

// ran reports whether the last case ran node n (on the device or the
// host).
func (r *runner) ran(n *dataflow.Node) bool {
	return r.after.Nodes[n.Name] > r.before.Nodes[n.Name] || r.host != nil && r.host.ran(n)
}

// lpgName names an embedded sink as the LPG node it stands for: an LPG
// copy by its origin, the PRG's Tx output as the LPG's Tx exit.
func lpgName(em *embed.Embedding, n *dataflow.Node) string {
	if o := em.Origin[n.Name]; o.LPG != "" {
		return o.LPG
	}
	return lpg.TxExit
}

// Entries maps each LPG source to where its packets enter the embedded
// graph: Rx frames at the PRG's wire, the others at their own copies.
func Entries(em *embed.Embedding) map[string]*dataflow.Node {
	out := map[string]*dataflow.Node{}
	for _, s := range em.Graph.Sources() {
		o := em.Origin[s.Name]
		if o.LPG != "" {
			out[o.LPG] = s
			continue
		}
		// The PRG source whose packets reach the LPG copies is the wire.
		for n := range dataflow.Reachable(s) {
			if len(em.Origin[n.Name].Serves) > 0 && out[lpg.RxEntry] == nil {
				out[lpg.RxEntry] = s
			}
		}
	}
	return out
}

// Generate makes n cases: first frames that lack what a PRG port claims
// (a quarter of them, if there are claims to test; see Claims), then
// frames sampled from the predicate of every port of the embedded graph,
// round-robin so every class gets some (half), then random frames and
// malformed variants.
func Generate(em *embed.Embedding, n int, seed uint64) []Case {
	return GenerateTables(em, n, seed, nil)
}

// GenerateTables is Generate for a run with tables (in Schema.Tables
// order; nil: empty ones): a frame meant to take a lookup's action port
// has the key fields of an entry of that action.
func GenerateTables(em *embed.Embedding, n int, seed uint64, tables []*table.Table) []Case {
	rnd := rand.New(rand.NewPCG(seed, seed^0x6e7363))
	g := em.Graph
	space := predicate.NewSpace()
	ps := g.PredicatesIn(space)
	entries := Entries(em)
	var sources []string
	for name := range entries {
		sources = append(sources, name)
	}
	slices.Sort(sources)
	// Which entry reaches which node, and the header each parses from.
	type target struct {
		port   *dataflow.Port
		source string
	}
	var targets []target
	for _, src := range sources {
		seen := dataflow.Reachable(entries[src])
		for _, node := range g.Nodes {
			if seen[node] {
				for _, p := range node.Ports {
					targets = append(targets, target{p, src})
				}
			}
		}
	}
	fs := newFrames(em)
	for _, t := range tables {
		es := t.Entries()
		fs.hints.entries = append(fs.hints.entries, es)
		for _, e := range es {
			for k, v := range e.Params {
				fs.hints.constant(t.Spec().Actions[e.Action].Params[k].Width, v)
			}
		}
	}
	// Claims first: their mismatches are the ones that name the culprit.
	cases := claimCases(em, fs, findClaims(em, space), space, n/4, rnd)
	classes := n / 2
	// Then sequences of segments, for an LPG that keeps state.
	if seqs := sequenceCases(em, fs, space, n/4, rnd); len(seqs) > 0 {
		cases = append(cases, seqs...)
		classes = n / 4
	}
	// A device that leaves part of the graph to the host: packets of the
	// classes it hands over, so the host part is run at all.
	if em.Device != nil {
		cases = append(cases, puntCases(em, fs, space, n/8, rnd)...)
	}
	for i := 0; len(targets) > 0 && i < classes; i++ {
		t := targets[i%len(targets)]
		c, ok := fs.sample(space, ps.Port(t.port), rnd)
		if !ok {
			continue
		}
		frame, meta := fs.build(t.source, c, rnd)
		cases = append(cases, Case{Source: t.source, Frame: frame, Meta: meta, Why: fmt.Sprintf("class of %s.%s: %s", t.port.Node.Name, t.port.Name, c)})
	}
	for len(cases) < n && len(sources) > 0 {
		src := sources[rnd.IntN(len(sources))]
		frame, meta := fs.build(src, predicate.Class{}, rnd)
		cases = append(cases, Case{Source: src, Frame: frame, Meta: meta, Why: "random"})
		for _, m := range Mutations(frame, rnd, 4) {
			if len(cases) < n {
				cases = append(cases, Case{Source: src, Frame: m, Meta: meta, Why: "malformed"})
			}
		}
	}
	return cases
}

// frames builds the frames of an embedding's cases.
type frames struct {
	schema *packet.Schema
	// starts has the header each LPG source's frames begin with (see
	// parseStart).
	starts map[string]int
	hints  hints
	parsed struct { // see parsable
		space *predicate.Space
		pred  predicate.Pred
	}
}

// newFrames takes the hints from the embedded graph: the order of its
// extract operations, and the conditions of its tests.
func newFrames(em *embed.Embedding) *frames {
	fs := &frames{schema: em.Graph.Schema, starts: map[string]int{}, hints: hints{conds: map[string]*packet.Expr{}}}
	for _, s := range em.LPG.Sources() {
		fs.starts[s.Name] = parseStart(s, em.LPG)
	}
	for _, n := range em.Graph.Order() {
		if n.Kind != dataflow.FNode {
			continue
		}
		switch n.Op.Kind {
		case packet.OpExtract:
			if !slices.Contains(fs.hints.extracted, n.Op.Header) {
				fs.hints.extracted = append(fs.hints.extracted, n.Op.Header)
			}
		case packet.OpTest:
			walkExpr(n.Op.Cond, func(e *packet.Expr) {
				if e.Text != "" {
					fs.hints.conds[e.Text] = e
				}
			})
		case packet.OpSet:
			for _, as := range n.Op.Assign {
				fs.hints.assigned(em.Graph.Schema, as.Dst, as.Src)
			}
		case packet.OpLookup:
			def := em.Graph.Schema.Tables[n.Op.Table]
			for _, a := range def.Actions {
				for _, as := range em.Graph.Schema.Actions[a].Body {
					fs.hints.assigned(em.Graph.Schema, as.Dst, as.Src)
				}
			}
			for k, v := range def.DefaultParams {
				fs.hints.constant(def.Spec.Actions[def.Default].Params[k].Width, v)
			}
		}
		fs.hints.selects = append(fs.hints.selects, selects(n)...)
	}
	return fs
}

// assigned notes a write of src to dst: a metadata field written on the
// way, and a constant written.
func (h *hints) assigned(s *packet.Schema, dst packet.FieldRef, src *packet.Expr) {
	if s.Headers[dst.Header].Metadata {
		if h.written == nil {
			h.written = map[packet.FieldRef]bool{}
		}
		h.written[dst] = true
	}
	if src.Kind == packet.EConst {
		h.constant(s.FieldSpec(dst).Width, src.Const)
	}
}

// constant adds v to the constants of width bits the graph writes.
func (h *hints) constant(width int, v packet.Value) {
	if h.constants == nil {
		h.constants = map[int][]packet.Value{}
	}
	if !slices.Contains(h.constants[width], v) {
		h.constants[width] = append(h.constants[width], v)
	}
}

// selects are the parse edges a switch or an equality test makes: a port
// taken when a field has a value, leading straight to an extract.
func selects(n *dataflow.Node) []packet.ParseEdge {
	var out []packet.ParseEdge
	edge := func(f packet.FieldRef, v packet.Value, port string) {
		p := n.Port(port)
		if p == nil {
			return
		}
		for _, e := range p.Out {
			if t := e.To; t.Kind == dataflow.FNode && t.Op.Kind == packet.OpExtract {
				out = append(out, packet.ParseEdge{From: f.Header, Field: f.Field, Value: v, Mask: packet.Mask(128), To: t.Op.Header})
			}
		}
	}
	switch op := n.Op; {
	case op.Kind == packet.OpSwitch && op.Expr.Kind == packet.EField:
		for _, c := range op.Cases {
			edge(op.Expr.Field, c.Value, c.Port)
		}
	case op.Kind == packet.OpTest && op.Cond.Kind == packet.EEq && op.Cond.A.Kind == packet.EField && op.Cond.B.Kind == packet.EConst:
		edge(op.Cond.A.Field, op.Cond.B.Const, packet.PortTrue)
	}
	return out
}

// build makes a frame for a class, for packets from LPG source src:
// headers from the one it begins with, or, for a source that takes
// payloads, random bytes with the class's metadata.
func (fs *frames) build(src string, c predicate.Class, rnd *rand.Rand) ([]byte, []packet.Value) {
	s := fs.schema
	if start, ok := fs.starts[src]; ok && start >= 0 {
		return frameIn(s, start, &fs.hints, c, rnd)
	}
	payload := make([]byte, rnd.IntN(65))
	for i := range payload {
		payload[i] = byte(rnd.UintN(256))
	}
	meta := make([]packet.Value, s.MetaFields)
	for _, h := range s.Headers {
		if !h.Metadata {
			continue
		}
		for i, f := range h.Fields {
			v := packet.Value{Hi: rnd.Uint64(), Lo: rnd.Uint64()}.And(packet.Mask(f.Width))
			for _, fc := range c.Fields() {
				if fc.Field.Name == h.Name+"."+f.Name {
					v = v.And(fc.Mask.Not()).Or(fc.Value)
				}
			}
			meta[h.MetaBase+i] = v
		}
	}
	return payload, meta
}

// parseStart is the header the packets of source src are parsed from: the
// source's own (input parse H) or that of the first parse or extract
// operation after it; -1 for sources that take payloads.
func parseStart(src *dataflow.Node, g *dataflow.Graph) int {
	if src == nil {
		return -1
	}
	if src.Op.Header >= 0 {
		return src.Op.Header
	}
	seen := map[*dataflow.Node]bool{}
	queue := []*dataflow.Node{src}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		if n.Kind == dataflow.FNode {
			switch n.Op.Kind {
			case packet.OpParse, packet.OpExtract:
				return n.Op.Header
			case packet.OpPush:
				return -1 // a Tx path builds its headers
			}
		}
		for _, p := range n.Ports {
			for _, e := range p.Out {
				queue = append(queue, e.To)
			}
		}
	}
	return -1
}

const puntWhy = "handed to the host"

// puntCases makes up to n frames of the classes that reach the device's
// ends marked [host] (its punt among them), round-robin over them.
func puntCases(em *embed.Embedding, fs *frames, space *predicate.Space, n int, rnd *rand.Rand) []Case {
	ps := em.Device.PredicatesIn(space)
	var ends []*dataflow.Node
	for _, s := range em.Device.Nodes {
		if s.Host && s.Kind == dataflow.FNode && s.Op.Terminal() {
			ends = append(ends, s)
		}
	}
	var out []Case
	for i := 0; len(ends) > 0 && i < n; i++ {
		end := ends[i%len(ends)]
		c, ok := fs.sample(space, ps.Reaching(end), rnd)
		if !ok {
			continue
		}
		frame, meta := fs.build(lpg.RxEntry, c, rnd)
		out = append(out, Case{Source: lpg.RxEntry, Frame: frame, Meta: meta, Why: fmt.Sprintf("%s at %s, class %s", puntWhy, end.Name, c)})
	}
	return out
}

// sample draws a class of p that a parsed frame can have where p allows
// it: a header valid only behind an edge of the parse graph that leads to
// it. Without this a selector the predicates leave almost free
// (ethernet.type ≠ 8 behind a switch) takes a value that leads nowhere,
// and the class's IPv4/UDP headers are not what the frame parses to
// (seed 20261128, model 379: no packet lacking a claimed UDP checksum was
// UDP). Which headers are valid is drawn from p alone first: drawn under
// the parse edges, a header behind a 16-bit selector would be valid in
// one class of 65,536 (seed 20261130, model 790). Classes only an
// extract or push makes are drawn from p alone.
func (fs *frames) sample(space *predicate.Space, p predicate.Pred, rnd *rand.Rand) (predicate.Class, bool) {
	c, ok := space.Sample(p, rnd)
	if !ok {
		return c, false
	}
	q := p.And(fs.parsable(space))
	for _, h := range fs.schema.Headers {
		if h.Metadata {
			continue
		}
		v, constrained := c.Valid(h.Name)
		if !constrained {
			// A header p says nothing of: a coin, where the parse edges
			// allow it (left to them, the free fields of a header not
			// there outnumber the one selector value that leads to it:
			// seed 20261130, model 2151, a VLAN tag never drawn).
			v = rnd.IntN(2) == 1
		}
		lit := space.Valid(h.Name)
		if !v {
			lit = lit.Not()
		}
		if t := q.And(lit); constrained || predicate.Satisfiable(t) {
			q = t
		}
	}
	q = boundLengths(space, c, q, rnd)
	if parsed, ok := space.Sample(q, rnd); ok {
		return parsed, true
	}
	return c, true
}

// boundLengths bounds, three times in four, each length field that class
// c pins above what a frame here backs (maxPinnedPayload) to at most that,
// where p allows it. A class that leaves a range of lengths draws from it
// uniformly, so mostly tens of kilobytes that no payload backs. Every such
// frame then fails the length check before what comes after it: of the
// packets that tested LinuxUDPRecv's UDP checksum, 3 of 166 reached the
// check. The fourth time keeps the long lengths, which test the length
// check itself.
func boundLengths(space *predicate.Space, c predicate.Class, p predicate.Pred, rnd *rand.Rand) predicate.Pred {
	if rnd.IntN(4) == 0 {
		return p
	}
	for _, fc := range c.Fields() {
		if !isLengthField(fc.Field.Name) || fc.Value.Hi == 0 && fc.Value.Lo <= maxPinnedPayload {
			continue
		}
		if t := p.And(space.Cmp(fc.Field, "<=", packet.V(maxPinnedPayload))); predicate.Satisfiable(t) {
			p = t
		}
	}
	return p
}

// isLengthField reports whether name is one of lengthFields.
func isLengthField(name string) bool {
	return slices.ContainsFunc(lengthFields, func(l lengthField) bool { return l.header+"."+l.field == name })
}

// parsable is, per header with edges into it in the parse graph, "valid
// only behind one of them", made once per space.
func (fs *frames) parsable(space *predicate.Space) predicate.Pred {
	if fs.parsed.space == space {
		return fs.parsed.pred
	}
	s := fs.schema
	field := func(f packet.FieldRef) predicate.Field {
		return predicate.Field{Name: s.FieldName(f), Width: s.FieldSpec(f).Width}
	}
	all := space.True()
	for _, h := range s.Headers {
		var behind []predicate.Pred
		for _, e := range s.Next {
			if e.To == h.ID {
				from := packet.FieldRef{Header: e.From, Field: e.Field}
				behind = append(behind, space.Valid(s.Headers[e.From].Name).And(space.Masked(field(from), e.Value, e.Mask)))
			}
		}
		if len(behind) > 0 {
			all = all.And(space.Valid(h.Name).Not().Or(space.Or(behind...)))
		}
	}
	fs.parsed.space, fs.parsed.pred = space, all
	return all
}
