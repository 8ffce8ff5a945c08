package p4

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
)

// A P4 program knows at compile time which headers a frame may have at each
// point only as far as its own control flow tells. The backend works it out
// the same way: it runs the graph abstractly, keeping for every node the
// set of header layouts (the valid wire headers, in wire order) a frame can
// have there, and the fields that hold the same constant on every path.
// The layouts decide where a validity check is needed, which bytes a
// checksum covers, and the order the deparser emits headers in.

// layout is the valid wire headers of a frame, in wire order.
type layout []int

func (l layout) has(h int) bool { return slices.Contains(l, h) }

func (l layout) key() string {
	var b strings.Builder
	for _, h := range l {
		fmt.Fprintf(&b, "%d,", h)
	}
	return b.String()
}

// tri is a three-valued truth: a fact that holds, does not, or depends on
// the frame's bytes.
type tri uint8

const (
	no tri = iota
	yes
	maybe
)

func or3(a, b tri) tri {
	switch {
	case a == yes || b == yes:
		return yes
	case a == no && b == no:
		return no
	}
	return maybe
}

func and3(a, b tri) tri {
	switch {
	case a == no || b == no:
		return no
	case a == yes && b == yes:
		return yes
	}
	return maybe
}

func not3(a tri) tri {
	switch a {
	case yes:
		return no
	case no:
		return yes
	}
	return maybe
}

// state is what the analysis knows where a node starts.
type state struct {
	layouts map[string]layout
	// consts are the fields that hold the same value on every path here;
	// nil until a first path arrives.
	consts map[packet.FieldRef]packet.Value
}

// info is the analysis' result for one node.
type info struct {
	layouts []layout
	// always: valid in every layout; ever: valid in some.
	always, ever map[int]bool
	consts       map[packet.FieldRef]packet.Value
}

// maxLayouts bounds the layouts per node, so a graph with exponentially
// many header combinations is refused instead of analysed forever.
const maxLayouts = 4096

// analyze fills c.info for every node the start reaches.
func (c *gen) analyze() error {
	states := map[*dataflow.Node]*state{}
	init := &state{layouts: map[string]layout{"": nil}, consts: map[packet.FieldRef]packet.Value{}}
	for _, h := range c.s.Headers {
		if h.Metadata {
			for i := range h.Fields {
				init.consts[packet.FieldRef{Header: h.ID, Field: i}] = packet.Value{}
			}
		}
	}
	states[c.start] = init
	c.info = map[*dataflow.Node]*info{}
	// The graph's port predicates know more than validity tests: a version
	// switch in the parser, say, decides which header a later valid(…)
	// finds. A layout no packet reaching the node can have is dropped.
	space := predicate.NewSpace()
	preds := c.g.PredicatesIn(space)
	for _, n := range c.order {
		st := states[n]
		if st == nil || n.Kind != dataflow.FNode {
			continue
		}
		c.prune(st, space, preds.Reaching(n))
		if len(st.layouts) > maxLayouts {
			return c.refuse(n, "more than %d combinations of valid headers reach it; the analysis gives up", maxLayouts)
		}
		in := &info{always: map[int]bool{}, ever: map[int]bool{}, consts: st.consts}
		for _, k := range slices.Sorted(maps.Keys(st.layouts)) {
			in.layouts = append(in.layouts, st.layouts[k])
		}
		for _, h := range c.s.Headers {
			if h.Metadata {
				continue
			}
			all, some := len(in.layouts) > 0, false
			for _, l := range in.layouts {
				if l.has(h.ID) {
					some = true
				} else {
					all = false
				}
			}
			in.always[h.ID], in.ever[h.ID] = all, some
		}
		c.info[n] = in
		if terminal(n) {
			continue
		}
		outs := c.transfer(n, in.layouts)
		consts := c.constsAfter(n, st.consts)
		for k, d := range c.succs(n) {
			if d.node == nil {
				continue
			}
			t := states[d.node]
			if t == nil {
				t = &state{layouts: map[string]layout{}}
				states[d.node] = t
			}
			for _, l := range outs[k] {
				t.layouts[l.key()] = l
			}
			if t.consts == nil {
				t.consts = maps.Clone(consts)
			} else {
				for f, v := range t.consts {
					if w, ok := consts[f]; !ok || w != v {
						delete(t.consts, f)
					}
				}
			}
		}
	}
	return nil
}

// prune drops the layouts the predicate of the packets reaching a node
// rules out.
func (c *gen) prune(st *state, s *predicate.Space, reach predicate.Pred) {
	if len(st.layouts) < 2 {
		return
	}
	// A layout says which headers are valid and that every other one is
	// not: the predicates leave the latter open where no node tested it.
	var hs []int
	for _, h := range c.s.Headers {
		if !h.Metadata {
			hs = append(hs, h.ID)
		}
	}
	for k, l := range st.layouts {
		p := reach
		for _, h := range hs {
			v := s.Valid(c.s.Headers[h].Name)
			if !l.has(h) {
				v = v.Not()
			}
			p = p.And(v)
		}
		if !predicate.Satisfiable(p) {
			delete(st.layouts, k)
		}
	}
}

// transfer runs n's operation on each layout and returns, per operation
// port, the layouts that leave by it. A layout on which the operation is
// malformed for sure leaves by no port.
func (c *gen) transfer(n *dataflow.Node, in []layout) [][]layout {
	o := n.Op
	out := make([][]layout, c.nports(n))
	for _, l := range in {
		if c.malformedIn(n, l) == yes {
			continue
		}
		switch o.Kind {
		case packet.OpExtract:
			if l.has(o.Header) {
				out[0] = append(out[0], l)
				continue
			}
			out[0] = append(out[0], append(slices.Clone(l), o.Header))
			out[1] = append(out[1], l)
		case packet.OpTest:
			switch c.validIn(o.Cond, l) {
			case yes:
				out[0] = append(out[0], l)
			case no:
				out[1] = append(out[1], l)
			default:
				out[0] = append(out[0], l)
				out[1] = append(out[1], l)
			}
		case packet.OpPush:
			if l.has(o.Header) || o.After >= 0 && !l.has(o.After) {
				continue
			}
			at := 0
			if o.After >= 0 {
				at = slices.Index(l, o.After) + 1
			}
			out[0] = append(out[0], slices.Insert(slices.Clone(l), at, o.Header))
		case packet.OpPop:
			i := slices.Index(l, o.Header)
			if i < 0 {
				continue
			}
			out[0] = append(out[0], slices.Delete(slices.Clone(l), i, i+1))
		case packet.OpChecksumCompute:
			if !l.has(o.Header) {
				continue
			}
			out[0] = append(out[0], l)
		default:
			for k := range out {
				out[k] = append(out[k], l)
			}
		}
	}
	return out
}

// malformedIn says whether n's operation is malformed on a frame with
// layout l: it reads or writes a field of a header l lacks.
func (c *gen) malformedIn(n *dataflow.Node, l layout) tri {
	o := n.Op
	r := no
	exprs := func(es ...*packet.Expr) {
		for _, e := range es {
			r = or3(r, c.malIn(e, l))
		}
	}
	dst := func(f packet.FieldRef) {
		if !c.s.Headers[f.Header].Metadata && !l.has(f.Header) {
			r = yes
		}
	}
	switch o.Kind {
	case packet.OpTest:
		exprs(o.Cond)
	case packet.OpSwitch:
		exprs(o.Expr)
	case packet.OpSet:
		for _, a := range o.Assign {
			exprs(a.Src)
			dst(a.Dst)
		}
	case packet.OpLookup:
		exprs(c.s.Tables[o.Table].Keys...)
	}
	return r
}

// validIn evaluates what a condition's validity tests say on layout l.
func (c *gen) validIn(e *packet.Expr, l layout) tri {
	switch e.Kind {
	case packet.EValid:
		if c.s.Headers[e.Header].Metadata || l.has(e.Header) {
			return yes
		}
		return no
	case packet.ENot:
		return not3(c.validIn(e.A, l))
	case packet.EAnd:
		return and3(c.validIn(e.A, l), c.validIn(e.B, l))
	case packet.EOr:
		return or3(c.validIn(e.A, l), c.validIn(e.B, l))
	}
	return maybe
}

// malIn says whether evaluating e on layout l reads a missing header,
// short-circuits included.
func (c *gen) malIn(e *packet.Expr, l layout) tri {
	if e == nil {
		return no
	}
	switch e.Kind {
	case packet.EConst, packet.EParam, packet.EValid:
		return no
	case packet.EField:
		if c.s.Headers[e.Field.Header].Metadata || l.has(e.Field.Header) {
			return no
		}
		return yes
	case packet.ELen:
		if l.has(e.Header) {
			return no
		}
		return yes
	case packet.EAnd, packet.EOr:
		ma := c.malIn(e.A, l)
		a := c.validIn(e.A, l)
		if e.Kind == packet.EOr {
			a = not3(a) // B runs when A is false
		}
		if ma == yes || a == no {
			return ma
		}
		mb := c.malIn(e.B, l)
		if a == maybe {
			mb = and3(maybe, mb)
		}
		return or3(ma, mb)
	case packet.ENot, packet.EBitNot, packet.EMasked, packet.ERange:
		return c.malIn(e.A, l)
	}
	return or3(c.malIn(e.A, l), c.malIn(e.B, l))
}

// constsAfter is what is known of constant fields after n runs.
func (c *gen) constsAfter(n *dataflow.Node, in map[packet.FieldRef]packet.Value) map[packet.FieldRef]packet.Value {
	out := maps.Clone(in)
	o := n.Op
	header := func(h int) {
		for f := range out {
			if f.Header == h {
				delete(out, f)
			}
		}
	}
	checksums := func(us []int) {
		for _, u := range us {
			if cs := c.s.Headers[u].Checksum; cs >= 0 {
				delete(out, packet.FieldRef{Header: u, Field: cs})
			}
		}
	}
	switch o.Kind {
	case packet.OpSet:
		for _, a := range o.Assign {
			if a.Src.Kind == packet.EConst {
				out[a.Dst] = a.Src.Const.And(packet.Mask(c.s.FieldSpec(a.Dst).Width))
			} else {
				delete(out, a.Dst)
			}
		}
		checksums(o.Update)
	case packet.OpLookup:
		for _, ai := range c.s.Tables[o.Table].Actions {
			for _, a := range c.s.Actions[ai].Body {
				delete(out, a.Dst)
			}
		}
	case packet.OpExtract:
		header(o.Header)
	case packet.OpPush:
		header(o.Header)
		for i, f := range c.s.Headers[o.Header].Fields {
			if !f.Variable() {
				out[packet.FieldRef{Header: o.Header, Field: i}] = packet.Value{}
			}
		}
	case packet.OpPop:
		header(o.Header)
		checksums(o.Update)
	case packet.OpChecksumCompute:
		checksums([]int{o.Header})
	}
	return out
}

// wireOrder is the order the deparser emits headers in: one that every
// layout a frame leaves with agrees on. Headers first seen earlier come
// first where the layouts leave a choice.
func (c *gen) wireOrder() ([]int, error) {
	seen := map[int]int{} // header -> order of discovery
	after := map[int]map[int]bool{}
	var leaving []layout
	for _, n := range c.order {
		in := c.info[n]
		if in == nil {
			continue
		}
		if k := n.Op.Kind; k == packet.OpExtract || k == packet.OpPush {
			if _, ok := seen[n.Op.Header]; !ok {
				seen[n.Op.Header] = len(seen)
			}
		}
		leaves := n.Op.Kind == packet.OpEmit
		for k := range c.nports(n) {
			if c.succ(n, k).end == endLeave {
				leaves = true
			}
		}
		if leaves {
			leaving = append(leaving, in.layouts...)
		}
	}
	emitted := map[int]bool{}
	for _, l := range leaving {
		for i, h := range l {
			emitted[h] = true
			if i > 0 {
				if after[h] == nil {
					after[h] = map[int]bool{}
				}
				after[h][l[i-1]] = true
			}
		}
	}
	var hs []int
	for h := range emitted {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b int) int { return seen[a] - seen[b] })
	// Among the headers whose predecessors are all out, take the one that
	// follows the latest header out (the way a frame goes on), the first
	// seen on a tie: ethernet, ipv4, icmp, icmp_echo, ipv6, … as a person
	// lists them.
	var out []int
	done := map[int]bool{}
	pos := map[int]int{}
	for len(out) < len(hs) {
		best, bestScore := -1, -2
		for _, h := range hs {
			if done[h] {
				continue
			}
			ready, score := true, -1
			for p := range after[h] {
				if !done[p] {
					ready = false
				}
				score = max(score, pos[p])
			}
			if ready && score > bestScore {
				best, bestScore = h, score
			}
		}
		if best >= 0 {
			pos[best] = len(out)
			out = append(out, best)
			done[best] = true
			continue
		}
		{
			var left []string
			for _, h := range hs {
				if !done[h] {
					left = append(left, c.s.Headers[h].Name)
				}
			}
			return nil, &Unsupported{Reason: fmt.Sprintf("headers %s leave in different orders; a P4 deparser emits headers in one order", strings.Join(left, ", "))}
		}
	}
	return out, nil
}
