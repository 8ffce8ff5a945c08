package xdp

import (
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Which headers are valid where: a forward analysis over the graph, from
// the start node (no header valid) along the ports, so that the generated
// code leaves out what it knows. A header that is valid on every path to
// a node (must) needs no validity check there; one that is valid on none
// (may) is invalid there, and a push or pop need not move its offset.

type hset []uint64

func newHset(n int) hset { return make(hset, (n+63)/64+1) }

func (s hset) has(h int) bool { return h >= 0 && h/64 < len(s) && s[h/64]>>(h%64)&1 == 1 }
func (s hset) add(h int)      { s[h/64] |= 1 << (h % 64) }
func (s hset) del(h int)      { s[h/64] &^= 1 << (h % 64) }
func (s hset) clone() hset    { return append(hset(nil), s...) }

// A vstate is what is known of the headers when a node runs: those that
// may and must be valid, and, per header h, behind[h]: the headers that
// may lie behind h (at a higher offset) when both are valid. Every valid
// header ends at or before the parse cursor, so a header extracted lies
// behind every header valid then; a parse puts a header behind those the
// parse graph leads to it from; a push may put its header anywhere; a pop
// changes no order. A pop need not move the offset of a header that
// cannot lie behind the popped one.
type vstate struct {
	may, must hset
	behind    []hset
}

func (v vstate) clone() vstate {
	out := vstate{may: v.may.clone(), must: v.must.clone(), behind: make([]hset, len(v.behind))}
	for i, b := range v.behind {
		out.behind[i] = b.clone()
	}
	return out
}

func newVstate(n int) vstate {
	v := vstate{may: newHset(n), must: newHset(n), behind: make([]hset, n)}
	for i := range v.behind {
		v.behind[i] = newHset(n)
	}
	return v
}

// analyzeValid computes, per node, the headers that may and must be valid
// when it runs.
func (c *gen) analyzeValid() {
	nh := len(c.s.Headers)
	in := map[*dataflow.Node]*vstate{}
	merge := func(n *dataflow.Node, st vstate) {
		cur, ok := in[n]
		if !ok {
			v := st.clone()
			in[n] = &v
			return
		}
		for i := range cur.may {
			cur.may[i] |= st.may[i]
			cur.must[i] &= st.must[i]
		}
		for h, b := range st.behind {
			for i := range b {
				cur.behind[h][i] |= b[i]
			}
		}
	}
	v := newVstate(nh)
	in[c.start] = &v
	for _, n := range c.g.Order() {
		st, ok := in[n]
		if !ok {
			continue // not reached from the start
		}
		for k, p := range n.Ports {
			out := c.transfer(n, p, k, *st)
			for _, e := range p.Out {
				merge(e.To, out)
			}
		}
	}
	c.valid = in
}

// transfer is what node n's operation does to validity on its port p.
func (c *gen) transfer(n *dataflow.Node, p *dataflow.Port, _ int, st vstate) vstate {
	out := st.clone()
	if n.Kind != dataflow.FNode {
		return out
	}
	o := n.Op
	nh := len(c.s.Headers)
	switch o.Kind {
	case packet.OpExtract:
		if p.Name == packet.PortTrue {
			// At the cursor: behind every header valid before.
			for x := 0; x < nh; x++ {
				if x != o.Header && st.may.has(x) {
					out.behind[x].add(o.Header)
				}
			}
			out.may.add(o.Header)
			out.must.add(o.Header)
		} else {
			out.may.del(o.Header)
			out.must.del(o.Header)
		}
	case packet.OpParse, packet.OpInput:
		if o.Kind == packet.OpInput && o.Header < 0 {
			break
		}
		// Every wire header forgotten, then the parse graph's from o.Header.
		out = newVstate(nh)
		for _, h := range c.s.Headers {
			if h.Metadata {
				continue
			}
			if h.ID == o.Header || c.follows(o.Header, h.ID) {
				out.may.add(h.ID)
			}
		}
		for a := 0; a < nh; a++ {
			for b := 0; b < nh; b++ {
				if a != b && out.may.has(a) && out.may.has(b) && c.follows(a, b) {
					out.behind[a].add(b)
				}
			}
		}
		if o.Kind == packet.OpInput || p.Name == packet.PortTrue {
			out.must.add(o.Header)
		}
	case packet.OpTest:
		valid, invalid := implied(o.Cond, p.Name == packet.PortTrue)
		for _, h := range valid {
			out.must.add(h)
		}
		for _, h := range invalid {
			out.may.del(h)
			out.must.del(h)
		}
	case packet.OpPush:
		for x := 0; x < nh; x++ {
			if x != o.Header && st.may.has(x) {
				out.behind[x].add(o.Header)
				out.behind[o.Header].add(x)
			}
		}
		out.may.add(o.Header)
		out.must.add(o.Header)
	case packet.OpPop:
		out.may.del(o.Header)
		out.must.del(o.Header)
	}
	return out
}

// implied lists the headers condition e says are valid, and those it says
// are invalid, when it comes out as truth.
func implied(e *packet.Expr, truth bool) (valid, invalid []int) {
	if e == nil {
		return nil, nil
	}
	switch {
	case e.Kind == packet.EValid && truth:
		return []int{e.Header}, nil
	case e.Kind == packet.EValid:
		return nil, []int{e.Header}
	case e.Kind == packet.ENot:
		return implied(e.A, !truth)
	case e.Kind == packet.EAnd && truth, e.Kind == packet.EOr && !truth:
		v1, i1 := implied(e.A, truth)
		v2, i2 := implied(e.B, truth)
		return append(v1, v2...), append(i1, i2...)
	}
	return nil, nil
}

// follows reports whether the parse graph can lead from header a to b.
func (c *gen) follows(a, b int) bool {
	seen := map[int]bool{a: true}
	todo := []int{a}
	for len(todo) > 0 {
		x := todo[0]
		todo = todo[1:]
		for _, e := range c.s.Next {
			if e.From == x && !seen[e.To] {
				if e.To == b {
					return true
				}
				seen[e.To] = true
				todo = append(todo, e.To)
			}
		}
	}
	return false
}

// mustValid reports whether header h is valid whenever the node being
// generated runs (and nothing in it has changed that yet).
func (c *gen) mustValid(h int) bool {
	if c.node == nil || c.noFacts {
		return false
	}
	st := c.valid[c.node]
	return st != nil && st.must.has(h)
}

// mayValid reports whether header h can be valid when the node runs.
func (c *gen) mayValid(h int) bool {
	if c.node == nil || c.noFacts {
		return true
	}
	st := c.valid[c.node]
	return st == nil || st.may.has(h)
}

// mayBehind reports whether header x can lie behind header h (both
// valid) when the node runs.
func (c *gen) mayBehind(x, h int) bool {
	if c.node == nil || c.noFacts {
		return true
	}
	st := c.valid[c.node]
	return st == nil || h < 0 || h >= len(st.behind) || st.behind[h].has(x)
}

func (s hset) with(h, n int) hset {
	if s == nil {
		s = newHset(n)
	}
	s.add(h)
	return s
}

// hasAvail reports whether header h's pointer variable is checked and
// fresh on every path to the node being generated (h is valid there and
// fresh wherever it is valid), and the node has not moved the frame since.
func (c *gen) hasAvail(h int) bool {
	if c.node == nil || c.moved || c.noFacts || c.avail == nil || !c.mustValid(h) {
		return false
	}
	a := c.avail[c.node]
	return a != nil && a.has(h)
}

// analyzeAvail computes, from a first generation, the headers whose
// pointer variable is fresh (checked since the frame last moved) or that
// are invalid, on every path to each node. A real extraction and an
// unconditional check in a node's code (topHdr) make a pointer fresh; a
// push or pop (the frame moves) or a parse (the headers are found anew)
// leaves fresh only what cannot be valid.
func (c *gen) analyzeAvail() map[*dataflow.Node]hset {
	nh := len(c.s.Headers)
	in := map[*dataflow.Node]hset{}
	merge := func(n *dataflow.Node, s hset) {
		cur, ok := in[n]
		if !ok {
			in[n] = s.clone()
			return
		}
		for i := range cur {
			cur[i] &= s[i]
		}
	}
	all := newHset(nh)
	for h := 0; h < nh; h++ {
		all.add(h)
	}
	in[c.start] = all
	for _, n := range c.g.Order() {
		st, ok := in[n]
		if !ok {
			continue
		}
		vs := c.valid[n]
		for k, p := range n.Ports {
			out := st.clone()
			if n.Kind == dataflow.FNode && vs != nil {
				after := c.transfer(n, p, k, *vs)
				moves := false
				switch n.Op.Kind {
				case packet.OpPush, packet.OpPop, packet.OpParse:
					moves = true
				case packet.OpInput:
					moves = n.Op.Header >= 0
				case packet.OpExtract:
					h := n.Op.Header
					if p.Name != packet.PortTrue || !vs.may.has(h) {
						out.add(h) // invalid, or just extracted and checked
					}
				}
				if moves {
					out = newHset(nh)
					for h := 0; h < nh; h++ {
						if !after.may.has(h) {
							out.add(h)
						}
					}
				}
				if t := c.topHdr[n]; t != nil {
					for i := range out {
						out[i] |= t[i]
					}
				}
			}
			for _, e := range p.Out {
				merge(e.To, out)
			}
		}
	}
	return in
}
