package dot

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

var update = flag.Bool("update", false, "rewrite testdata/*.dot")

// ipGraph is a small I/P stack after seed 003: a source outside clusters,
// a two-level cluster Rx > P, an AND node with an unconnected false port, a
// software sink, a spawn edge into cluster Tx, and a C-node.
func ipGraph(t testing.TB) *dataflow.Graph {
	t.Helper()
	s := &packet.Schema{
		Headers: []*packet.HeaderSpec{{Name: "p", Fields: []packet.FieldSpec{
			{Name: "proto", Width: 8}, {Name: "csum", Offset: 8, Width: 16}, {Name: "port", Offset: 24, Width: 16},
		}}},
		Tables: []*packet.TableDef{{Spec: &packet.TableSpec{Name: "sockets",
			Actions: []packet.ActionSpec{{Name: "deliver"}, {Name: "miss"}}}}},
	}
	g := dataflow.New("ip", dataflow.LPG, s)
	add := func(n *dataflow.Node, ports ...string) *dataflow.Node {
		t.Helper()
		if err := g.AddNode(n); err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			n.AddPort(p, "")
		}
		return n
	}
	f := func(name string, cluster []string, op *packet.Op, ports ...string) *dataflow.Node {
		return add(&dataflow.Node{Name: name, Cluster: cluster, Kind: dataflow.FNode, Op: op}, ports...)
	}
	rx, rxp, tx := []string{"Rx"}, []string{"Rx", "P"}, []string{"Tx"}

	queue := f("RxQueue", nil, &packet.Op{Kind: packet.OpInput}, "out")
	queue.Source, queue.Hardware = true, true
	isP := f("RxIsP", rx, &packet.Op{Kind: packet.OpTest, Cond: &packet.Expr{Kind: packet.EEq, Text: "p.proto == 1"}}, "true", "false")
	csum := f("RxPCsum", rxp, &packet.Op{Kind: packet.OpChecksumVerify, Header: 0}, "true", "false")
	valid := add(&dataflow.Node{Name: "RxPValid", Cluster: rxp, Kind: dataflow.ONode, Logic: dataflow.And}, "true", "false")
	sock := f("RxPSocket", rxp, &packet.Op{Kind: packet.OpLookup, Table: 0}, "deliver", "miss")
	in1 := f("SockIn1", rxp, &packet.Op{Kind: packet.OpSteer, Label: "sock1"})
	in1.Sink, in1.Software = true, true
	drop := f("RxDrop", rx, &packet.Op{Kind: packet.OpDrop, Label: "no socket"})
	drop.Sink = true
	ping := f("RxIsPing", rx, &packet.Op{Kind: packet.OpNop}, "out")
	pong := f("TxPong", tx, &packet.Op{Kind: packet.OpSet, Assign: []packet.Assign{{Dst: packet.FieldRef{Header: 0, Field: 2}}}}, "out")
	emit := f("TxQueue", tx, &packet.Op{Kind: packet.OpEmit})
	emit.Sink, emit.Hardware = true, true
	add(&dataflow.Node{Name: "RxCsumOffload", Cluster: rx, Kind: dataflow.CNode, Config: &dataflow.Config{Type: "bool", Value: "true"}})

	dataflow.Connect(queue.Port("out"), isP, false)
	dataflow.Connect(isP.Port("true"), csum, false)
	dataflow.Connect(isP.Port("true"), valid, false)
	dataflow.Connect(isP.Port("false"), ping, false)
	dataflow.Connect(csum.Port("true"), valid, false)
	dataflow.Connect(csum.Port("false"), valid, false)
	dataflow.Connect(valid.Port("true"), sock, false)
	// valid's false port has no edge: packets end there.
	dataflow.Connect(sock.Port("deliver"), in1, false)
	dataflow.Connect(sock.Port("miss"), drop, false)
	dataflow.Connect(ping.Port("out"), pong, true)
	dataflow.Connect(pong.Port("out"), emit, false)
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	return g
}

func render(t testing.TB, g *dataflow.Graph, opts Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, g, opts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// picture is DOT text as emicklei/dot writes it, read back.
type picture struct {
	attrs map[string]string // graph attributes
	nodes map[string]*pnode // by DOT id ("n3")
	order []string          // node ids, in text order
	edges []pedge
}

type pnode struct {
	attrs   map[string]string
	cluster []string // labels of the enclosing subgraphs, outermost first
}

type pedge struct {
	from, to string
	attrs    map[string]string
}

// block is one `{ ... }`; its attributes come after its nested blocks.
type block struct {
	header string
	attrs  map[string]string
	parent *block
}

var (
	edgeRE = regexp.MustCompile(`^(n\d+)->(n\d+)(?:\[(.*)\])?;$`)
	nodeRE = regexp.MustCompile(`^(n\d+)(?:\[(.*)\])?;$`)
)

// parse reads back the line-per-statement DOT that Write produces.
func parse(t *testing.T, src []byte) *picture {
	t.Helper()
	pic := &picture{nodes: map[string]*pnode{}}
	var cur *block
	var root *block
	nodeBlock := map[string]*block{}
	for i, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("line %d %q: %s", i+1, line, fmt.Sprintf(format, args...))
		}
		switch {
		case line == "" || strings.HasPrefix(line, "//"):
		case strings.HasSuffix(line, "{"):
			b := &block{header: strings.TrimSuffix(line, "{"), attrs: map[string]string{}, parent: cur}
			if cur == nil {
				if root != nil {
					fail("second graph")
				}
				root = b
			} else if !strings.HasPrefix(b.header, "subgraph cluster_") {
				fail("subgraph is not a cluster")
			}
			cur = b
		case line == "}":
			if cur == nil {
				fail("unbalanced }")
			}
			cur = cur.parent
		case cur == nil:
			fail("statement outside the graph")
		case edgeRE.MatchString(line):
			m := edgeRE.FindStringSubmatch(line)
			pic.edges = append(pic.edges, pedge{m[1], m[2], attrs(t, m[3])})
		case nodeRE.MatchString(line):
			m := nodeRE.FindStringSubmatch(line)
			if _, dup := pic.nodes[m[1]]; dup {
				fail("node declared twice")
			}
			pic.nodes[m[1]] = &pnode{attrs: attrs(t, m[2])}
			pic.order = append(pic.order, m[1])
			nodeBlock[m[1]] = cur
		default:
			for k, v := range attrs(t, line) {
				cur.attrs[k] = v
			}
		}
	}
	if cur != nil || root == nil {
		t.Fatal("unbalanced braces")
	}
	pic.attrs = root.attrs
	for id, b := range nodeBlock {
		for ; b != root; b = b.parent {
			pic.nodes[id].cluster = append([]string{b.attrs["label"]}, pic.nodes[id].cluster...)
		}
	}
	for _, e := range pic.edges {
		if pic.nodes[e.from] == nil || pic.nodes[e.to] == nil {
			t.Fatalf("edge %s->%s: undeclared node", e.from, e.to)
		}
	}
	return pic
}

// attrs parses `k="v",k="v"` (or ';'-separated), values quoted as Go quotes.
func attrs(t *testing.T, s string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for s != "" {
		k, rest, ok := strings.Cut(s, "=")
		q, err := strconv.QuotedPrefix(rest)
		if !ok || err != nil {
			t.Fatalf("attributes %q: %v", s, err)
		}
		m[k], _ = strconv.Unquote(q)
		s = strings.TrimLeft(rest[len(q):], ",;")
	}
	return m
}

// node is the id of the node whose label has a line equal to name.
func (pic *picture) node(t *testing.T, name string) string {
	t.Helper()
	var found []string
	for _, id := range pic.order {
		if slices.Contains(strings.Split(pic.nodes[id].attrs["label"], "\n"), name) {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		t.Fatalf("node %s: %d DOT nodes carry its name", name, len(found))
	}
	return found[0]
}

func TestClusters(t *testing.T) {
	g := ipGraph(t)
	pic := parse(t, render(t, g, Options{}))
	for _, n := range g.Nodes {
		got := pic.nodes[pic.node(t, n.Name)].cluster
		if !slices.Equal(got, n.Cluster) {
			t.Errorf("node %s drawn in cluster %q, want %q", n.Name, got, n.Cluster)
		}
	}
	if got := pic.attrs["rankdir"]; got != "LR" {
		t.Errorf("rankdir = %q, want LR", got)
	}
}

func TestNodeStyles(t *testing.T) {
	g := ipGraph(t)
	pic := parse(t, render(t, g, Options{}))
	for _, n := range g.Nodes {
		a := pic.nodes[pic.node(t, n.Name)].attrs
		style := strings.Split(a["style"], ",")
		if got := slices.Contains(style, "dotted"); got != n.Software {
			t.Errorf("node %s (software %v): style %q", n.Name, n.Software, a["style"])
		}
		if !slices.Contains(style, "filled") {
			t.Errorf("node %s: style %q is not filled", n.Name, a["style"])
		}
		if got := a["peripheries"] == "2"; got != n.Sink {
			t.Errorf("node %s (sink %v): peripheries %q", n.Name, n.Sink, a["peripheries"])
		}
		if got := a["penwidth"] == "2"; got != n.Source {
			t.Errorf("node %s (source %v): penwidth %q", n.Name, n.Source, a["penwidth"])
		}
		var shape, fill string
		rounded := false
		switch n.Kind {
		case dataflow.FNode:
			shape, fill = "box", "white"
		case dataflow.ONode:
			shape, fill, rounded = "box", "gray80", true
		case dataflow.CNode:
			shape, fill = "hexagon", "white"
		}
		if a["shape"] != shape || a["fillcolor"] != fill || slices.Contains(style, "rounded") != rounded {
			t.Errorf("node %s: shape %q fill %q style %q; want shape %s fill %s rounded %v",
				n.Name, a["shape"], a["fillcolor"], a["style"], shape, fill, rounded)
		}
	}
}

func TestLabels(t *testing.T) {
	pic := parse(t, render(t, ipGraph(t), Options{}))
	for name, want := range map[string]string{
		"RxQueue":       "RxQueue\ninput",
		"RxIsP":         "RxIsP\ntest p.proto == 1",
		"RxPCsum":       "RxPCsum\nchecksum verify p",
		"RxPValid":      "AND\nRxPValid",
		"RxPSocket":     "RxPSocket\nlookup sockets",
		"SockIn1":       "SockIn1\nsteer sock1",
		"RxDrop":        "RxDrop\ndrop no socket",
		"RxIsPing":      "RxIsPing\nnop",
		"TxPong":        "TxPong\nset p.port",
		"TxQueue":       "TxQueue\nemit",
		"RxCsumOffload": "RxCsumOffload\nbool = true",
	} {
		if got := pic.nodes[pic.node(t, name)].attrs["label"]; got != want {
			t.Errorf("node %s: label %q, want %q", name, got, want)
		}
	}
}

func TestEdges(t *testing.T) {
	g := ipGraph(t)
	pic := parse(t, render(t, g, Options{}))
	type edge struct{ from, port, to string }
	name := map[string]string{} // DOT id -> node name; "" for port ends
	for _, n := range g.Nodes {
		name[pic.node(t, n.Name)] = n.Name
	}
	var got []edge
	for _, e := range pic.edges {
		if e.attrs["style"] == "dashed" {
			got = append(got, edge{name[e.from], e.attrs["label"], "spawn " + name[e.to]})
			continue
		}
		if e.attrs["style"] != "" {
			t.Errorf("edge %s->%s: style %q on a normal edge", e.from, e.to, e.attrs["style"])
		}
		to := name[e.to]
		if to == "" {
			if a := pic.nodes[e.to].attrs; a["shape"] != "point" || a["label"] != "" {
				t.Errorf("port end %s: %v, want an unlabelled point", e.to, a)
			}
			to = "end"
		}
		got = append(got, edge{name[e.from], e.attrs["label"], to})
	}
	var want []edge
	for _, n := range g.Nodes {
		for _, p := range n.Ports {
			for _, e := range p.Out {
				want = append(want, edge{n.Name, p.Name, e.To.Name})
			}
			for _, e := range p.Spawn {
				want = append(want, edge{n.Name, p.Name, "spawn " + e.To.Name})
			}
			if len(p.Out)+len(p.Spawn) == 0 {
				want = append(want, edge{n.Name, p.Name, "end"})
			}
		}
	}
	cmp := func(a, b edge) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }
	slices.SortFunc(got, cmp)
	slices.SortFunc(want, cmp)
	if !slices.Equal(got, want) {
		t.Errorf("edges\n got %v\nwant %v", got, want)
	}
}

func TestDeterministic(t *testing.T) {
	g := ipGraph(t)
	opts := Options{Title: "I/P", Highlight: map[string]string{"RxPCsum": "palegreen", "TxPong": "palegreen"}}
	first := render(t, g, opts)
	for range 5 {
		if again := render(t, g, opts); !bytes.Equal(first, again) {
			t.Fatalf("same graph, different bytes:\n%s\n---\n%s", first, again)
		}
		if fresh := render(t, ipGraph(t), opts); !bytes.Equal(first, fresh) {
			t.Fatalf("equal graphs, different bytes:\n%s\n---\n%s", first, fresh)
		}
	}
}

func TestHighlight(t *testing.T) {
	g := ipGraph(t)
	pic := parse(t, render(t, g, Options{Highlight: map[string]string{"RxPCsum": "palegreen", "RxPValid": "#a0e0a0"}}))
	for name, want := range map[string]string{"RxPCsum": "palegreen", "RxPValid": "#a0e0a0", "RxIsP": "white"} {
		if got := pic.nodes[pic.node(t, name)].attrs["fillcolor"]; got != want {
			t.Errorf("node %s: fill %q, want %q", name, got, want)
		}
	}
	err := Write(new(bytes.Buffer), g, Options{Highlight: map[string]string{"RxPCsum": "red", "Nope": "red"}})
	if err == nil || !strings.Contains(err.Error(), "Nope") {
		t.Errorf("highlight of a missing node: err = %v, want one naming it", err)
	}
}

func TestTitle(t *testing.T) {
	pic := parse(t, render(t, ipGraph(t), Options{Title: "I/P stack"}))
	if pic.attrs["label"] != "I/P stack" || pic.attrs["labelloc"] != "t" {
		t.Errorf("graph attributes %v, want the title on top", pic.attrs)
	}
	pic = parse(t, render(t, ipGraph(t), Options{}))
	if _, ok := pic.attrs["label"]; ok {
		t.Errorf("graph label %q without a title", pic.attrs["label"])
	}
}

func TestGeneratedMarker(t *testing.T) {
	first, _, _ := bytes.Cut(render(t, ipGraph(t), Options{}), []byte("\n"))
	if !regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`).Match(first) {
		t.Errorf("first line %q is not a generated-code marker", first)
	}
}

// TestGolden compares with testdata/ip.dot, whose first version was read
// by hand against ipGraph: the Rx cluster holds RxIsP, RxDrop, RxIsPing,
// RxCsumOffload and the nested P cluster (RxPCsum, the gray AND RxPValid,
// RxPSocket, the dotted double-bordered SockIn1, and the point ending
// RxPValid's false port); Tx holds TxPong and TxQueue; RxQueue is at the top
// level with a thick border; the only dashed edge is RxIsPing -> TxPong.
// Run `go test -update` to rewrite it, and review the diff.
func TestGolden(t *testing.T) {
	got := render(t, ipGraph(t), Options{Title: "I/P stack", Highlight: map[string]string{"RxPCsum": "palegreen"}})
	path := filepath.Join("testdata", "ip.dot")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, got)
	}
}

// TestOddGraphs checks that graphs outside dataflow's invariants give an
// error or a plain picture, not a panic.
func TestOddGraphs(t *testing.T) {
	s := &packet.Schema{}
	g := dataflow.New("", dataflow.PRG, nil)
	for i, op := range []*packet.Op{
		nil,
		{Kind: packet.OpParse, Header: 3},
		{Kind: packet.OpPush, Header: -1, After: 7},
		{Kind: packet.OpTest},
		{Kind: packet.OpSwitch},
		{Kind: packet.OpLookup, Table: 2},
		{Kind: packet.OpSet, Assign: []packet.Assign{{Dst: packet.FieldRef{Header: 1, Field: 1}}}},
		{Kind: 200},
	} {
		if err := g.AddNode(&dataflow.Node{Name: fmt.Sprint("n", i), Kind: dataflow.FNode, Op: op}); err != nil {
			t.Fatal(err)
		}
	}
	pic := parse(t, render(t, g, Options{}))
	if got := pic.nodes[pic.node(t, "n7")].attrs["label"]; got != "n7\nop(200)" {
		t.Errorf("label %q", got)
	}
	g.Schema = s
	render(t, g, Options{})

	other := dataflow.New("other", dataflow.LPG, s)
	stray := &dataflow.Node{Name: "stray", Kind: dataflow.FNode, Op: &packet.Op{Kind: packet.OpNop}}
	other.AddNode(stray)
	dataflow.Connect(g.Node("n0").AddPort("out", ""), stray, false)
	if err := Write(new(bytes.Buffer), g, Options{}); err == nil || !strings.Contains(err.Error(), "n0") {
		t.Errorf("edge out of the graph: err = %v, want one naming n0", err)
	}
}

func TestSVG(t *testing.T) {
	g := ipGraph(t)
	svg, err := SVG(render(t, g, Options{Title: "I/P stack"}))
	if errors.Is(err, ErrNoGraphviz) {
		t.Skipf("skipping: %v (apt-get install graphviz)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte("<svg")) {
		t.Fatalf("not SVG:\n%.200s", svg)
	}
	for _, n := range g.Nodes {
		if !bytes.Contains(svg, []byte(">"+n.Name+"</text>")) {
			t.Errorf("SVG has no text %s", n.Name)
		}
	}
	for _, c := range []string{"Rx", "P", "Tx", "I/P stack"} {
		if !bytes.Contains(svg, []byte(">"+c+"</text>")) {
			t.Errorf("SVG has no label %s", c)
		}
	}
}

func TestSVGError(t *testing.T) {
	if _, err := exec.LookPath("dot"); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if _, err := SVG([]byte("digraph {")); err == nil || errors.Is(err, ErrNoGraphviz) {
		t.Errorf("SVG of broken DOT: err = %v, want a dot error", err)
	}
}

func TestNoGraphviz(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := SVG([]byte("digraph {}")); !errors.Is(err, ErrNoGraphviz) {
		t.Errorf("SVG without dot on PATH: err = %v, want ErrNoGraphviz", err)
	}
}
