package fuzz

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/p4/p4sim"
	"github.com/dragonet-go/nsc/backends/p4/tableadd"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
)

// P4PRG is the PRG the p4 target embeds into: BMv2 of
// models/ejfat/p4.nsc (v1model, no table limits, no payload access).
const P4PRG = "BMv2"

// P4Case is one embedding into a P4 PRG to compile to P4 (v1model) and
// run in the P4 interpreter (backends/p4/p4sim), with an XDPCase's
// fields: Graph is what the program is generated from (the embedded
// graph, or a split's device part), Ref what the interpreter runs (the
// whole embedding; nil: Graph), Limits the PRG's. Else, if not nil, is
// the model's variant with its entry's parse written out as extract and
// switch nodes, run where the backend refuses the model as written.
type P4Case struct {
	XDPCase
	Else *XDPCase
}

// RunP4 generates each case's P4 program and its table entries, runs the
// frames through it in the P4 interpreter and through nsc's interpreter
// on the reference graph, and compares them as backends/p4's tests do:
// the same bytes leave, or both drop; a split's program punts to the host
// exactly the frames the interpreter takes to a host node, unchanged (what
// the host then does is not compared); and, for a program that punts
// nothing, every counter counts what the interpreter counts under its
// label. A case the generator refuses is reported in refused.
//
// With p4c (p4c's BMv2 back end, p4c-bm2-ss) each program is also
// compiled by it: a program p4c refuses or warns about is a difference
// ("p4c").
func RunP4(cases []P4Case, p4c *p4.P4c) (diffs []Diff, refused map[string]string, err error) {
	refused = map[string]string{}
	generate := func(c *XDPCase) (*p4.Program, error) {
		return p4.Generate(c.Graph, p4.Options{Arch: p4.V1Model, Name: "g", PRG: P4PRG, Limits: c.Limits})
	}
	for _, pc := range cases {
		c := pc.XDPCase
		prog, err := generate(&c)
		if err != nil && pc.Else != nil {
			if alt, err2 := generate(pc.Else); err2 == nil {
				prog, err, c = alt, nil, *pc.Else
			}
		}
		if err != nil {
			refused[c.Name] = err.Error()
			continue
		}
		ds, err := runP4(prog, c)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		diffs = append(diffs, ds...)
		if p4c != nil {
			if d, err := compileP4c(p4c, c.Name, prog.Source); err != nil {
				return nil, nil, err
			} else if d != nil {
				diffs = append(diffs, *d)
			}
		}
	}
	return diffs, refused, nil
}

func runP4(prog *p4.Program, c XDPCase) ([]Diff, error) {
	ref := c.Graph
	if c.Ref != nil {
		ref = c.Ref
	}
	ts, err := loadTables(ref, c.Name, c.Tables)
	if err != nil {
		return nil, err
	}
	m, err := sim.New(ref, ts)
	if err != nil {
		return nil, err
	}
	// The program holds the entries of the tables it looks up.
	es, err := packet.ParseEntries(c.Name+".tables", strings.NewReader(c.Tables), c.Graph.Schema.TableSpec)
	if err != nil {
		return nil, err
	}
	es = slices.DeleteFunc(es, func(te packet.TableEntry) bool {
		return !slices.ContainsFunc(prog.Tables, func(t *tableadd.Table) bool { return t.Model == te.Table })
	})
	var lines bytes.Buffer
	if err := prog.Tables.Entries(&lines, es); err != nil {
		return []Diff{{Model: c.Name, Check: "p4 entries", Want: "converted", Got: err.Error()}}, nil
	}
	parsed, err := p4sim.Parse(string(prog.Source))
	if err != nil {
		return []Diff{{Model: c.Name, Check: "p4 parse", Want: "the P4 interpreter reads the program", Got: err.Error()}}, nil
	}
	pts, err := p4sim.Tables(prog, lines.Bytes())
	if err != nil {
		return []Diff{{Model: c.Name, Check: "p4 entries", Want: "loaded", Got: err.Error()}}, nil
	}
	run := p4sim.New(parsed, p4.V1Model, pts)
	var host []string // a split's host nodes: a frame that reaches one is punted
	if c.Ref != nil {
		for _, n := range c.Ref.Nodes {
			if c.Graph.Node(n.Name) == nil {
				host = append(host, n.Name)
			}
		}
	}
	var diffs []Diff
	punted := 0
	for _, f := range c.Frames {
		before := hostRuns(m, host)
		o := Interp(m, f)
		toHost := hostRuns(m, host) > before
		want := "dropped"
		if strings.HasPrefix(o.Where, "sink ") {
			want = "sent " + o.Data
		}
		got, punt := p4Outcome(run, f)
		if toHost || punt {
			punted++
			if toHost {
				want = "punted " + hex.EncodeToString(f)
			}
			if punt {
				got = "punted " + strings.TrimPrefix(got, "sent ")
			}
		}
		if want != got {
			diffs = append(diffs, Diff{Model: c.Name, Check: "interp/p4", Frame: f, Want: want + " (" + o.Where + ")", Got: got})
		}
	}
	if punted == 0 {
		if d := p4sim.CounterDiff(m, prog.Source, run); d != "" {
			diffs = append(diffs, Diff{Model: c.Name, Check: "interp/p4 counters", Want: "the interpreter's counts", Got: "(-interpreter +P4)\n" + d})
		}
	}
	return diffs, nil
}

// p4Outcome runs one frame through the program: "sent BYTES", "dropped",
// or why the program stopped (a field of an invalid header); punt says
// it went to the CPU port. A panic of the P4 interpreter is an outcome
// too, so one bad program does not end the run.
func p4Outcome(run *p4sim.Machine, f []byte) (got string, punt bool) {
	defer func() {
		if r := recover(); r != nil {
			got, punt = fmt.Sprintf("the P4 interpreter panicked: %v", r), false
		}
	}()
	out, err := run.Run(f)
	switch {
	case err != nil:
		return "stopped: " + err.Error(), false
	case out == nil:
		return "dropped", false
	}
	return "sent " + hex.EncodeToString(out), run.Egress() == p4.PuntPort
}

// hostRuns is how many times the interpreter ran the nodes named.
func hostRuns(m *sim.Machine, names []string) uint64 {
	if len(names) == 0 {
		return 0
	}
	var n uint64
	nodes := m.Counters().Nodes
	for _, name := range names {
		n += nodes[name]
	}
	return n
}

// P4CaseOf is model m's case for the p4 target, on frames: m made
// expressible in P4 and embedded into P4PRG (every steer an emit, since a
// pipeline has no queues; ejfat/p4.nsc included), and, when its entry is
// the generator's, the variant with the entry's parse written out as
// extract and switch nodes over the model's parse graph (Else). The
// interpreter runs the same variant as the program, so what is compared
// is the P4 program against the graph it was generated from. Without a
// case, it says why (a refusal, like the backend's).
func P4CaseOf(m Model, frames [][]byte) (P4Case, string) {
	if _, err := Load(m); err != nil {
		return P4Case{}, err.Error()
	}
	c, why := p4Case(m, asP4(m.Source), frames)
	if why != "" {
		return P4Case{}, why
	}
	if src, why := p4Source(m); why == "" {
		if alt, why := p4Case(m, src, frames); why == "" {
			c.Else = &alt.XDPCase
		}
	}
	return c, ""
}

// p4Case embeds the model text src (m's, made for P4) into P4PRG.
func p4Case(m Model, src string, frames [][]byte) (P4Case, string) {
	lm, err := Load(Model{Name: m.Name, Source: src})
	if err != nil {
		return P4Case{}, "variant: " + err.Error()
	}
	g, _ := lm.Graph(m.LPG)
	pg, _ := lm.Graph(P4PRG)
	em, err := embed.Embed(g, pg)
	if err != nil {
		return P4Case{}, "embed: " + err.Error()
	}
	c := XDPCase{Name: m.Name, Graph: em.Graph, Limits: pg.Limits, Tables: m.Tables, Frames: frames}
	if em.Device != nil {
		c.Graph, c.Ref = em.Device, em.Graph
	}
	return P4Case{XDPCase: c}, ""
}

// asP4 is model text with every steer an emit and the P4 PRGs included.
func asP4(src string) string {
	src = steer.ReplaceAllString(src, "op emit")
	return strings.Replace(src, `include "ejfat/xdp.nsc"`, `include "ejfat/xdp.nsc"`+"\ninclude \"ejfat/p4.nsc\"", 1)
}

var (
	entryParse = regexp.MustCompile(`(?m)^    node RxQueue \{\n        op input parse ethernet\n        port out -> (\w+)\n    \}\n`)
	entryNode  = regexp.MustCompile(`(?m)^    node RxQueue \{\n        op input\n        port out -> Parse\n    \}\n    node Parse \{\n        op parse ethernet\n        port true -> (\w+)\n        port false -> (\w+)\n    \}\n`)
	steer      = regexp.MustCompile(`op steer queue \d+`)
)

// p4Source is the model text of P4CaseOf's Else, or why it cannot be
// made.
func p4Source(m Model) (string, string) {
	lm, err := Load(m)
	if err != nil {
		return "", err.Error()
	}
	re := entryParse
	if !re.MatchString(m.Source) {
		re = entryNode
	}
	loc := re.FindStringSubmatchIndex(m.Source)
	if loc == nil {
		return "", "the entry is not the generator's"
	}
	// A parse that fails goes to a drop (one outcome, as a P4 parser
	// has), unless the Parse node's false port is the only way to the
	// node it led to: then there, so that node is still reached.
	fail := "PFail"
	if len(loc) > 4 {
		if to := m.Source[loc[4]:loc[5]]; strings.Count(m.Source, "-> "+to+"\n") == 1 {
			fail = to
		}
	}
	chain, why := parseChain(lm.Schema, m.Source[loc[2]:loc[3]], fail)
	if why != "" {
		return "", why
	}
	return asP4(m.Source[:loc[0]] + "    node RxQueue { op input  port out -> PX_ethernet }\n" + chain + m.Source[loc[1]:]), ""
}

// parseChain writes the parse graph from ethernet as LPG nodes: PX_h
// extracts h (failing to fail; PFail is a drop "parse"), PS_h switches on the field
// that selects the next header; a value no edge takes, or a header
// nothing follows, goes on to done, as the interpreter's parse stops
// there. Only a graph of exact, single-field selectors without loops is
// written.
func parseChain(s *packet.Schema, done, fail string) (string, string) {
	eth := -1
	for i, h := range s.Headers {
		if h.Name == "ethernet" {
			eth = i
		}
	}
	if eth < 0 {
		return "", "no ethernet header"
	}
	var b strings.Builder
	seen := map[int]bool{}
	var visit func(h int, path []int) string
	visit = func(h int, path []int) string {
		if slices.Contains(path, h) {
			return "the parse graph loops at " + s.Headers[h].Name
		}
		if seen[h] {
			return ""
		}
		seen[h] = true
		name := s.Headers[h].Name
		var edges []packet.ParseEdge
		for _, e := range s.Next {
			if e.From == h {
				edges = append(edges, e)
			}
		}
		if len(edges) == 0 {
			fmt.Fprintf(&b, "    node PX_%s { op extract %s  port true -> %s  port false -> %s }\n", name, name, done, fail)
			return ""
		}
		fmt.Fprintf(&b, "    node PX_%s { op extract %s  port true -> PS_%s  port false -> %s }\n", name, name, name, fail)
		var cases, ports []string
		for _, e := range edges {
			w := s.Headers[h].Fields[e.Field].Width
			if e.Field != edges[0].Field || e.Mask != packet.Mask(w) {
				return "the parse graph selects " + s.Headers[e.To].Name + " by more than one exact field"
			}
			to := s.Headers[e.To].Name
			cases = append(cases, fmt.Sprintf("%s -> %s", e.Value.String(), to))
			ports = append(ports, fmt.Sprintf("port %s -> PX_%s", to, to))
		}
		fmt.Fprintf(&b, "    node PS_%s { op switch %s.%s { %s, default -> other }  %s  port other -> %s }\n",
			name, name, s.Headers[h].Fields[edges[0].Field].Name, strings.Join(cases, ", "), strings.Join(ports, "  "), done)
		for _, e := range edges {
			if why := visit(e.To, append(path, h)); why != "" {
				return why
			}
		}
		return ""
	}
	if why := visit(eth, nil); why != "" {
		return "", why
	}
	if fail == "PFail" {
		b.WriteString("    node PFail { op drop \"parse\" }\n")
	}
	return b.String(), ""
}

// refusalClass is a refusal's reason without where it is and the names
// in it, for the tally of refusals by reason: its first clause, each
// name of the model (a word other than P4 and P4_16 with a digit, a dot
// or an underscore, or one of the Internet library's headers) as X.
func refusalClass(msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	msg = refusalWhere.ReplaceAllString(msg, "")
	msg, _, _ = strings.Cut(msg, ";")
	msg, _, _ = strings.Cut(msg, " (")
	words := strings.Fields(msg)
	for i, w := range words {
		bare := strings.TrimRight(w, ",:")
		if bare != "P4" && bare != "P4_16" && strings.ContainsAny(bare, "0123456789._") || slices.Contains(inetHeaders, bare) {
			words[i] = "X" + w[len(bare):]
		}
	}
	return strings.Join(words, " ")
}

// refusalWhere is the position, target and node in front of a refusal's
// reason (backends.Refusal.Error).
var refusalWhere = regexp.MustCompile(`^(?:\S+:\d+:\d+: )?(?:p4 \(\w+\)|go|xdp)(?:: node \S+)?: `)

var inetHeaders = []string{"ethernet", "vlan", "arp", "ipv4", "ipv6", "icmp", "icmpv6", "udp"}

// compileP4c compiles a v1model program with p4c's BMv2 back end, and
// returns a difference when p4c refuses it or says anything of it but
// the warning every parser that may reject gets (p4.P4c.Compile).
func compileP4c(p4c *p4.P4c, name string, src []byte) (*Diff, error) {
	dir, err := os.MkdirTemp("", "nsc-p4c-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, name+".p4")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		return nil, err
	}
	said, err := p4c.Compile(file, filepath.Join(dir, name+".json"))
	if err != nil || said != "" {
		got := strings.ReplaceAll(said, dir+string(filepath.Separator), "")
		if err != nil {
			got = fmt.Sprintf("refused (%v): %s", err, got)
		}
		return &Diff{Model: name, Check: "p4c", Want: "p4c-bm2-ss compiles the program, saying nothing", Got: got}, nil
	}
	return nil, nil
}
