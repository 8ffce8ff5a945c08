package p4

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
)

// The model's parse graph (`next` selectors) runs at `input parse H` and
// `parse H`: forget the headers, go back to the frame's start, extract H,
// follow the first edge whose masked field matches to the next header,
// and stop where no edge matches or the next header is valid already;
// a header that does not fit fails the whole parse. Where nothing has
// been extracted or changed before it (so the cursor is at the frame's
// start and no header is valid), a P4 parser runs exactly that: the
// backend writes such a parse out as extract, switch and test nodes of
// its own, on a copy of the graph, and builds its parser from them as
// from the model's. A parse after the frame's headers were extracted or
// changed reads the frame again from its start, which a P4 parser cannot.
//
// The Go and C printers print a parse through lower.UnrollParse, a tree
// with one site per path, straight-line code; here a header's extract is
// one node per set of valid headers that can still stop the parse
// (parseWriter.extract), shared by every path that meets it so, because
// each becomes a parser state and a path per state would multiply them.
// The rules are the same: the first matching edge is taken, a default
// edge ends the edges tried, a header met again ends the parse.

// parseAt reports whether n runs the parse graph.
func parseAt(n *dataflow.Node) bool {
	return n.Kind == dataflow.FNode && (n.Op.Kind == packet.OpParse || n.Op.Kind == packet.OpInput && n.Op.Header >= 0)
}

// expandParse writes out the parse nodes a P4 parser can run (no node
// before them extracts, parses or changes the frame) on a copy of the
// graph, which then replaces c.g.
func (c *gen) expandParse() {
	// A device that parses in front of its program hands the program the
	// frame's bytes: the program parses them again, from its sink on.
	parses := map[*dataflow.Node]*packet.Op{}
	if sink := c.front(); sink != nil {
		parses[sink] = c.start.Op
		c.start = sink
		c.walk()
	}
	clean := map[*dataflow.Node]bool{}
	for _, n := range c.order {
		if !c.reached[n] || n.Kind != dataflow.FNode {
			continue
		}
		ok := true
		for _, p := range c.preds[n] {
			ok = ok && clean[p] && !parseAt(p) && c.parserOp(p) && p.Op.Kind != packet.OpExtract
		}
		clean[n] = ok
		if ok && parseAt(n) && parses[n] == nil {
			parses[n] = n.Op
		}
	}
	for n, op := range parses {
		if slices.ContainsFunc(c.parseHeaders(op.Header), func(h int) bool { return c.s.Headers[h].Metadata }) {
			delete(parses, n)
		}
	}
	if len(parses) == 0 {
		return
	}
	g := dataflow.New(c.g.Name, c.g.Kind, c.s)
	g.Limits, g.Declared = c.g.Limits, c.g.Declared
	copies := map[*dataflow.Node]*dataflow.Node{}
	for _, n := range c.g.Nodes {
		m := *n
		m.Ports, m.In = nil, nil
		_ = g.AddNode(&m) // the names are the graph's, so new
		copies[n] = &m
	}
	for _, n := range c.g.Nodes {
		if parses[n] != nil {
			continue
		}
		for _, p := range n.Ports {
			copyPort(p, copies[n].AddPort(p.Name, p.Pos), copies)
		}
	}
	for _, n := range c.g.Nodes { // in the graph's order: the names are deterministic
		if op := parses[n]; op != nil {
			x := &parseWriter{c: c, g: g, n: copies[n], copies: copies, nodes: map[string]*dataflow.Node{}}
			x.write(n, op)
		}
	}
	c.g, c.start, c.order = g, copies[c.start], g.Order()
	c.walk()
}

// front is the program's sink when the device parses in front of it and
// only checks: its source is `input parse H`, and every node before the
// sink is hardware that reads the frame without changing it, or drops it
// (a RoCE core that checks the ICRC, which a P4 program cannot). The
// program then starts at the sink, with the frame as the wire gave it,
// and parses it again from H; what the front checked holds there (the
// graph's predicates carry it). nil when there is no such front.
func (c *gen) front() *dataflow.Node {
	if !parseAt(c.start) || c.start.Op.Kind != packet.OpInput {
		return nil
	}
	var sink *dataflow.Node
	for _, n := range c.order {
		if c.reached[n] && n.Program {
			if sink != nil {
				return nil
			}
			sink = n
		}
	}
	if sink == nil {
		return nil
	}
	behind := dataflow.Reachable(sink)
	for n := range c.reached {
		if behind[n] || n.Kind != dataflow.FNode {
			continue
		}
		switch n.Op.Kind {
		case packet.OpInput, packet.OpTest, packet.OpSwitch, packet.OpChecksumVerify, packet.OpICRCVerify, packet.OpNop, packet.OpDrop:
		default:
			return nil
		}
		if !n.Hardware {
			return nil
		}
	}
	return sink
}

// copyPort gives port to the edges of port from, between the copies.
func copyPort(from, to *dataflow.Port, copies map[*dataflow.Node]*dataflow.Node) {
	to.Pred = from.Pred
	for _, e := range from.Out {
		dataflow.Connect(to, copies[e.To], false)
	}
	for _, e := range from.Spawn {
		dataflow.Connect(to, copies[e.To], true)
	}
}

// parseHeaders lists the headers the parse graph reaches from h, h first.
func (c *gen) parseHeaders(h int) []int {
	out := []int{h}
	for i := 0; i < len(out); i++ {
		for _, e := range c.s.Next {
			if e.From == out[i] && !slices.Contains(out, e.To) {
				out = append(out, e.To)
			}
		}
	}
	return out
}

// parseWriter writes one parse node out.
type parseWriter struct {
	c      *gen
	g      *dataflow.Graph
	n      *dataflow.Node // the parse node's copy: now the entry into what is written
	copies map[*dataflow.Node]*dataflow.Node
	orig   *dataflow.Node
	// nodes are the extract nodes written, by header and the valid headers
	// that can still stop the parse (those the header can lead back to).
	nodes map[string]*dataflow.Node
	fail  *dataflow.Node // input parse: the malformed drop
}

// write writes parse op out at orig.
func (x *parseWriter) write(orig *dataflow.Node, op *packet.Op) {
	x.orig = orig
	h := op.Header
	if op.Kind == packet.OpInput {
		x.n.Op = newOp(packet.OpInput)
		// The interpreter drops a frame whose parse fails at input as
		// malformed, counted under that reason.
		x.fail = x.node("malformed", newOp(packet.OpDrop))
		x.fail.Op.Label = sim.ReasonMalformed
	} else {
		x.n.Op = newOp(packet.OpNop)
	}
	x.n.AddPort(packet.PortOut, x.n.Pos)
	dataflow.Connect(x.n.Ports[0], x.extract(h, []int{h}), false)
}

// name is a new node's name: the parse node's, with suffix before its
// embedding's "@…".
func (x *parseWriter) name(suffix string) string {
	base, at, found := strings.Cut(x.n.Name, "@")
	name := base + "_" + suffix
	for i := 2; x.g.Node(name) != nil || found && x.g.Node(name+"@"+at) != nil; i++ {
		name = fmt.Sprintf("%s_%s%d", base, suffix, i)
	}
	if found {
		name += "@" + at
	}
	return name
}

// node adds an F-node with op, declared where the parse node is.
func (x *parseWriter) node(suffix string, op *packet.Op) *dataflow.Node {
	// The program's nodes: a program sink's [software] says where the
	// program runs, not that these are the host's.
	n := &dataflow.Node{Name: x.name(suffix), Cluster: x.n.Cluster, Kind: dataflow.FNode, Op: op, Pos: x.n.Pos, Hardware: x.n.Hardware, Software: x.n.Software && !x.n.Program}
	_ = x.g.AddNode(n) // name is new
	return n
}

// success connects port p where the parse ends well, fail where it fails.
func (x *parseWriter) success(p *dataflow.Port) {
	copyPort(x.orig.Ports[0], p, x.copies)
}

func (x *parseWriter) failure(p *dataflow.Port) {
	if x.fail != nil {
		dataflow.Connect(p, x.fail, false)
		return
	}
	copyPort(x.orig.Ports[1], p, x.copies)
}

// extract is the node extracting h with the headers valid before it
// valid (h among them), and what follows it.
func (x *parseWriter) extract(h int, valid []int) *dataflow.Node {
	s := x.c.s
	var stop []int // valid headers h can lead to: the parse stops there
	for _, v := range valid {
		if v != h && slices.Contains(x.c.parseHeaders(h), v) {
			stop = append(stop, v)
		}
	}
	slices.Sort(stop)
	key := fmt.Sprint(h, stop)
	if n, ok := x.nodes[key]; ok {
		return n
	}
	name := s.Headers[h].Name
	op := newOp(packet.OpExtract)
	op.Header = h
	n := x.node(name, op)
	x.nodes[key] = n
	ok := n.AddPort(packet.PortTrue, n.Pos)
	x.failure(n.AddPort(packet.PortFalse, n.Pos))
	var edges []packet.ParseEdge
	for _, e := range s.Next {
		if e.From == h {
			edges = append(edges, e)
		}
	}
	// next is where edge e leads: the parse ends when its header is valid.
	next := func(p *dataflow.Port, e packet.ParseEdge) {
		if slices.Contains(valid, e.To) {
			x.success(p)
			return
		}
		dataflow.Connect(p, x.extract(e.To, append(slices.Clone(valid), e.To)), false)
	}
	// A `default` edge (mask 0) takes every value: the edges after it are
	// never tried.
	dflt := slices.IndexFunc(edges, func(e packet.ParseEdge) bool { return e.Mask.IsZero() })
	if dflt >= 0 {
		edges = edges[:dflt+1]
	}
	full := len(edges) > 0
	for i, e := range edges {
		w := s.Headers[h].Fields[e.Field].Width
		full = full && (i == dflt || e.Field == edges[0].Field && e.Mask.And(packet.Mask(w)) == packet.Mask(w))
	}
	switch {
	case len(edges) == 0:
		x.success(ok)
	case dflt == 0:
		next(ok, edges[0])
	case full:
		// One field, exact values: a switch, first case first.
		ref := packet.FieldRef{Header: h, Field: edges[0].Field}
		w := s.FieldSpec(ref).Width
		op := newOp(packet.OpSwitch)
		op.Default = ".stop" // no header is named so
		op.Expr = &packet.Expr{Kind: packet.EField, Width: w, Field: ref, Text: s.FieldName(ref)}
		cases := edges
		if dflt > 0 {
			cases = edges[:dflt]
			op.Default = ".default"
		}
		for _, e := range cases {
			op.Cases = append(op.Cases, packet.Case{Value: e.Value.And(packet.Mask(w)), Port: s.Headers[e.To].Name})
		}
		op.Resolve(s)
		sw := x.node(name+"_next", op)
		dataflow.Connect(ok, sw, false)
		for _, port := range op.Ports(s) {
			p := sw.AddPort(port, sw.Pos)
			switch {
			case port == op.Default && dflt > 0:
				next(p, edges[dflt])
			case port == op.Default:
				x.success(p)
			default:
				next(p, cases[slices.IndexFunc(cases, func(e packet.ParseEdge) bool { return s.Headers[e.To].Name == port })])
			}
		}
	default:
		// Masks or several fields: a test per edge, in order.
		from := ok
		for _, e := range edges {
			ref := packet.FieldRef{Header: h, Field: e.Field}
			w := s.FieldSpec(ref).Width
			op := newOp(packet.OpTest)
			op.Cond = &packet.Expr{Kind: packet.EMasked, Width: 1, Value: e.Value, Mask: e.Mask.And(packet.Mask(w)),
				A: &packet.Expr{Kind: packet.EField, Width: w, Field: ref, Text: s.FieldName(ref)}}
			t := x.node(name+"_"+s.Headers[e.To].Name, op)
			dataflow.Connect(from, t, false)
			next(t.AddPort(packet.PortTrue, t.Pos), e)
			from = t.AddPort(packet.PortFalse, t.Pos)
		}
		x.success(from)
	}
	return n
}

// newOp is an operation of kind k on no header or table, as the loader
// makes them.
func newOp(k packet.OpKind) *packet.Op {
	return &packet.Op{Kind: k, Header: -1, After: -1, Table: -1}
}
