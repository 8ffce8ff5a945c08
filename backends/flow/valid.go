package flow

import (
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Which headers are valid where: a forward analysis over the graph, from
// the start node (no header valid) along the ports, so that generated code
// leaves out what it knows. A header that is valid on every path to a node
// (must) needs no validity check there; one that is valid on none (may) is
// invalid there, and a push or pop need not move its offset. The Go and
// XDP backends use it.

// HSet is a set of header indices.
type HSet []uint64

// NewHSet returns an empty set for n headers.
func NewHSet(n int) HSet { return make(HSet, (n+63)/64+1) }

// Has reports whether h is in the set.
func (s HSet) Has(h int) bool { return h >= 0 && h/64 < len(s) && s[h/64]>>(h%64)&1 == 1 }

// Add puts h in the set.
func (s HSet) Add(h int) { s[h/64] |= 1 << (h % 64) }

// Del takes h out of the set.
func (s HSet) Del(h int) { s[h/64] &^= 1 << (h % 64) }

// Clone copies the set.
func (s HSet) Clone() HSet { return append(HSet(nil), s...) }

// With adds h to s, making s (for n headers) if it is nil.
func (s HSet) With(h, n int) HSet {
	if s == nil {
		s = NewHSet(n)
	}
	s.Add(h)
	return s
}

// A VState is what is known of the headers when a node runs: those that
// may and must be valid, and, per header h, Behind[h]: the headers that
// may lie behind h (at a higher offset) when both are valid. Every valid
// header ends at or before the parse cursor, so a header extracted lies
// behind every header valid then; a parse puts a header behind those the
// parse graph leads to it from; a push may put its header anywhere; a pop
// changes no order. A pop need not move the offset of a header that
// cannot lie behind the popped one.
type VState struct {
	May, Must HSet
	Behind    []HSet
}

// Clone copies the state.
func (v VState) Clone() VState {
	out := VState{May: v.May.Clone(), Must: v.Must.Clone(), Behind: make([]HSet, len(v.Behind))}
	for i, b := range v.Behind {
		out.Behind[i] = b.Clone()
	}
	return out
}

// NewVState is the state where no header is valid, for n headers.
func NewVState(n int) VState {
	v := VState{May: NewHSet(n), Must: NewHSet(n), Behind: make([]HSet, n)}
	for i := range v.Behind {
		v.Behind[i] = NewHSet(n)
	}
	return v
}

// Validity is the analysis' result for a graph: the state each node
// reached from the start runs in.
type Validity struct {
	s  *packet.Schema
	In map[*dataflow.Node]*VState
}

// AnalyzeValid computes, per node reached from start, the headers that may
// and must be valid when it runs, and which may lie behind which.
func AnalyzeValid(g *dataflow.Graph, start *dataflow.Node) *Validity {
	va := &Validity{s: g.Schema, In: map[*dataflow.Node]*VState{}}
	nh := len(g.Schema.Headers)
	in := va.In
	merge := func(n *dataflow.Node, st VState) {
		cur, ok := in[n]
		if !ok {
			v := st.Clone()
			in[n] = &v
			return
		}
		for i := range cur.May {
			cur.May[i] |= st.May[i]
			cur.Must[i] &= st.Must[i]
		}
		for h, b := range st.Behind {
			for i := range b {
				cur.Behind[h][i] |= b[i]
			}
		}
	}
	v := NewVState(nh)
	in[start] = &v
	for _, n := range g.Order() {
		st, ok := in[n]
		if !ok {
			continue // not reached from the start
		}
		for _, p := range n.Ports {
			out := va.Transfer(n, p, *st)
			for _, e := range p.Out {
				merge(e.To, out)
			}
		}
	}
	return va
}

// Must reports whether header h is valid whenever node n runs (false when
// n was not analysed).
func (va *Validity) Must(n *dataflow.Node, h int) bool {
	st := va.In[n]
	return st != nil && st.Must.Has(h)
}

// May reports whether header h can be valid when node n runs (true when n
// was not analysed).
func (va *Validity) May(n *dataflow.Node, h int) bool {
	st := va.In[n]
	return st == nil || st.May.Has(h)
}

// Behind reports whether header x can lie behind header h (both valid)
// when node n runs (true when n was not analysed).
func (va *Validity) Behind(n *dataflow.Node, x, h int) bool {
	st := va.In[n]
	return st == nil || h < 0 || h >= len(st.Behind) || st.Behind[h].Has(x)
}

// Transfer is what node n's operation does to validity on its port p.
func (va *Validity) Transfer(n *dataflow.Node, p *dataflow.Port, st VState) VState {
	out := st.Clone()
	if n.Kind != dataflow.FNode {
		return out
	}
	o := n.Op
	s := va.s
	nh := len(s.Headers)
	switch o.Kind {
	case packet.OpExtract:
		if p.Name == packet.PortTrue {
			// At the cursor: behind every header valid before.
			for x := 0; x < nh; x++ {
				if x != o.Header && st.May.Has(x) {
					out.Behind[x].Add(o.Header)
				}
			}
			out.May.Add(o.Header)
			out.Must.Add(o.Header)
		} else {
			out.May.Del(o.Header)
			out.Must.Del(o.Header)
		}
	case packet.OpParse, packet.OpInput:
		if o.Kind == packet.OpInput && o.Header < 0 {
			break
		}
		// Every wire header forgotten, then the parse graph's from o.Header.
		out = NewVState(nh)
		for _, h := range s.Headers {
			if h.Metadata {
				continue
			}
			if h.ID == o.Header || follows(s, o.Header, h.ID) {
				out.May.Add(h.ID)
			}
		}
		for a := 0; a < nh; a++ {
			for b := 0; b < nh; b++ {
				if a != b && out.May.Has(a) && out.May.Has(b) && follows(s, a, b) {
					out.Behind[a].Add(b)
				}
			}
		}
		if o.Kind == packet.OpInput || p.Name == packet.PortTrue {
			out.Must.Add(o.Header)
		}
	case packet.OpTest:
		valid, invalid := implied(o.Cond, p.Name == packet.PortTrue)
		for _, h := range valid {
			out.Must.Add(h)
		}
		for _, h := range invalid {
			out.May.Del(h)
			out.Must.Del(h)
		}
	case packet.OpPush:
		for x := 0; x < nh; x++ {
			if x != o.Header && st.May.Has(x) {
				out.Behind[x].Add(o.Header)
				out.Behind[o.Header].Add(x)
			}
		}
		out.May.Add(o.Header)
		out.Must.Add(o.Header)
	case packet.OpPop:
		out.May.Del(o.Header)
		out.Must.Del(o.Header)
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
func follows(s *packet.Schema, a, b int) bool {
	seen := map[int]bool{a: true}
	todo := []int{a}
	for len(todo) > 0 {
		x := todo[0]
		todo = todo[1:]
		for _, e := range s.Next {
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
