package wireshark

import (
	"fmt"
	"slices"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/packet"
)

// stepKind is what the model does next after a header.
type stepKind uint8

const (
	stepEnd    stepKind = iota // parsing stops: the rest is payload
	stepFail                   // a drop: the header is malformed for the model
	stepNext                   // another header follows
	stepIf                     // a test on the header's fields
	stepSwitch                 // a switch on one of its fields
)

// step is a decision tree over one header's fields: what the model's
// parser does after extracting it.
type step struct {
	kind   stepKind
	at     string // "graph node", where the model decides
	header int    // stepNext
	reason string // stepFail: the drop's reason
	cond   *packet.Expr
	then   *step // stepIf
	els    *step // stepIf; stepSwitch: the default
	field  packet.FieldRef
	arms   []arm // stepSwitch
}

// arm is the values of a switch that lead to one port.
type arm struct {
	values []uint64
	port   string
	body   *step
}

// maxDepth bounds how many nodes a tree follows after an extract.
const maxDepth = 64

// builder makes the decision tree after header h.
type builder struct {
	s *packet.Schema
	g *dataflow.Graph
	h int
}

// from follows a port: its first edge (a fork's other branches are not
// parsing).
func (b *builder) from(p *dataflow.Port, depth int) *step {
	if len(p.Out) == 0 { // the packet ends (unconnected) or leaves by a sink
		return &step{kind: stepEnd, at: b.g.Name + " node " + p.Node.Name + " port " + p.Name}
	}
	return b.node(p.Out[0].To, depth+1)
}

func (b *builder) node(n *dataflow.Node, depth int) *step {
	at := b.g.Name + " node " + n.Name
	end := &step{kind: stepEnd, at: at}
	if depth > maxDepth || n.Kind != dataflow.FNode {
		return end
	}
	op := n.Op
	switch op.Kind {
	case packet.OpExtract:
		return &step{kind: stepNext, at: at, header: op.Header}
	case packet.OpDrop:
		return &step{kind: stepFail, at: at, reason: op.Label}
	case packet.OpTest:
		if !b.own(op.Cond) {
			return end
		}
		return &step{kind: stepIf, at: at, cond: op.Cond,
			then: b.from(n.Port(packet.PortTrue), depth), els: b.from(n.Port(packet.PortFalse), depth)}
	case packet.OpSwitch:
		return b.switchStep(n, at, depth)
	case packet.OpSet:
		for _, a := range op.Assign {
			if !b.s.Headers[a.Dst.Header].Metadata {
				return end
			}
		}
		return b.from(n.Port(packet.PortOut), depth)
	case packet.OpCount, packet.OpNop, packet.OpContext:
		return b.from(n.Port(packet.PortOut), depth)
	}
	return end
}

// own reports whether e reads fields of the header only.
func (b *builder) own(e *packet.Expr) bool {
	fs, ok := reads(e)
	for _, f := range fs {
		ok = ok && f.Header == b.h
	}
	return ok && len(fs) > 0
}

func (b *builder) switchStep(n *dataflow.Node, at string, depth int) *step {
	op := n.Op
	if op.Expr.Kind != packet.EField || op.Expr.Field.Header != b.h || op.Expr.Width > 64 {
		return &step{kind: stepEnd, at: at}
	}
	st := &step{kind: stepSwitch, at: at, field: op.Expr.Field}
	for _, c := range op.Cases {
		i := slices.IndexFunc(st.arms, func(a arm) bool { return a.port == c.Port })
		if i < 0 {
			st.arms = append(st.arms, arm{port: c.Port, body: b.from(n.Port(c.Port), depth)})
			i = len(st.arms) - 1
		}
		st.arms[i].values = append(st.arms[i].values, c.Value.Lo)
	}
	st.els = b.from(n.Port(op.Default), depth)
	return st
}

// nextStep is the tree of header h's `next` edges: in declaration order,
// the defaults after the values.
func nextStep(s *packet.Schema, h int) *step {
	var edges, defaults []packet.ParseEdge
	for _, e := range s.Next {
		switch {
		case e.From != h:
		case e.Mask.IsZero():
			defaults = append(defaults, e)
		default:
			edges = append(edges, e)
		}
	}
	if len(edges)+len(defaults) == 0 {
		return nil
	}
	tail := &step{kind: stepEnd, at: "next " + s.Headers[h].Name}
	if len(defaults) > 0 {
		tail = &step{kind: stepNext, at: tail.at, header: defaults[0].To}
	}
	for i := len(edges) - 1; i >= 0; i-- {
		e := edges[i]
		f := packet.FieldRef{Header: h, Field: e.Field}
		w := s.FieldSpec(f).Width
		cond := &packet.Expr{Kind: packet.EMasked, Width: 1, Value: e.Value, Mask: e.Mask,
			A:    &packet.Expr{Kind: packet.EField, Width: w, Field: f},
			Text: fmt.Sprintf("%s & %#x == %#x", s.FieldName(f), e.Mask.Lo, e.Value.Lo)}
		tail = &step{kind: stepIf, at: tail.at, cond: cond, then: &step{kind: stepNext, at: tail.at, header: e.To}, els: tail}
	}
	return tail
}

// trees are, per header, the decision trees after it: one per extract
// node (LPGs first, then PRGs, each in declaration order), then the one of
// its `next` edges. After a `parse H` (or `input parse H`), any header the
// parse graph may reach from H may be the last one parsed: the nodes after
// it give a tree to each such header Wireshark dissects, for the ports of
// the headers extracted there.
func trees(m *lang.Model) map[int][]*step {
	out := map[int][]*step{}
	s := m.Schema
	for _, kind := range []dataflow.Kind{dataflow.LPG, dataflow.PRG} {
		for _, g := range m.Graphs {
			if g.Kind != kind {
				continue
			}
			for _, n := range g.Nodes {
				if n.Kind != dataflow.FNode {
					continue
				}
				switch op := n.Op; {
				case op.Kind == packet.OpExtract:
					b := &builder{s: s, g: g, h: op.Header}
					out[b.h] = append(out[b.h], b.from(n.Port(packet.PortTrue), 0))
				case op.Kind == packet.OpParse || op.Kind == packet.OpInput && op.Header >= 0:
					for _, h := range reachable(s, op.Header) {
						if nativeTables[s.Headers[h].Name] != nil {
							b := &builder{s: s, g: g, h: h}
							out[h] = append(out[h], b.from(n.Ports[0], 0))
						}
					}
				}
			}
		}
	}
	for _, h := range m.Schema.Headers {
		if st := nextStep(m.Schema, h.ID); st != nil {
			out[h.ID] = append(out[h.ID], st)
		}
	}
	return out
}

// reachable lists h and the headers the parse graph may reach from it.
func reachable(s *packet.Schema, h int) []int {
	out := []int{h}
	for i := 0; i < len(out); i++ {
		for _, e := range s.Next {
			if e.From == out[i] && !slices.Contains(out, e.To) {
				out = append(out, e.To)
			}
		}
	}
	return out
}

// follows lists the headers a tree may lead to, in order.
func (st *step) follows() []int {
	var out []int
	st.walk(func(x *step) {
		if x.kind == stepNext && !slices.Contains(out, x.header) {
			out = append(out, x.header)
		}
	})
	return out
}

// walk calls f on st and every step under it, depth first.
func (st *step) walk(f func(*step)) {
	if st == nil {
		return
	}
	f(st)
	st.then.walk(f)
	st.els.walk(f)
	for _, a := range st.arms {
		a.body.walk(f)
	}
}
