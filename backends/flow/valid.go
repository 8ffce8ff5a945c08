package flow

import (
	"maps"
	"slices"

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
	// Known holds field values a switch case or an equality test fixed on
	// the way here (and nothing wrote since): they let feasible rule out a
	// test's port, as a field value already switched on does.
	Known map[packet.FieldRef]uint64
}

// Clone copies the state.
func (v VState) Clone() VState {
	out := VState{May: v.May.Clone(), Must: v.Must.Clone(), Behind: make([]HSet, len(v.Behind)), Known: maps.Clone(v.Known)}
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
// and must be valid when it runs, and which may lie behind which. It keeps
// the states of up to paths different paths to a node apart (those with
// the same may and must sets joined; with more, all are joined) so that a
// test can rule some out: behind the LB parser's join, `valid(arp)` false,
// `valid(icmp)` false and an ICMPv6 type already switched on leave only
// the paths on which the UDP and LB headers were extracted, and there they
// must be valid. With paths 1 every join merges, as a plain may/must
// analysis does.
func AnalyzeValid(g *dataflow.Graph, start *dataflow.Node, paths int) *Validity {
	va := &Validity{s: g.Schema, In: map[*dataflow.Node]*VState{}}
	nh := len(g.Schema.Headers)
	states := map[*dataflow.Node][]VState{}
	merge := func(n *dataflow.Node, st VState) {
		sts := states[n]
		for i := range sts {
			if slices.Equal(sts[i].May, st.May) && slices.Equal(sts[i].Must, st.Must) {
				sts[i].join(st)
				return
			}
		}
		if len(sts) >= max(paths, 1) {
			for _, o := range sts[1:] {
				sts[0].join(o)
			}
			sts[0].join(st)
			states[n] = sts[:1]
			return
		}
		states[n] = append(sts, st.Clone())
	}
	states[start] = []VState{NewVState(nh)}
	for _, n := range g.Order() {
		sts := states[n]
		if len(sts) == 0 {
			continue // not reached from the start
		}
		all := sts[0].Clone()
		for _, st := range sts[1:] {
			all.join(st)
		}
		va.In[n] = &all
		for _, st := range sts {
			for _, p := range n.Ports {
				if !va.feasible(n, p, st) {
					continue
				}
				out := va.Transfer(n, p, st)
				for _, e := range p.Out {
					merge(e.To, out)
				}
			}
		}
	}
	return va
}

// join makes v the state either v or o can be: may-valid if valid in
// either, must-valid if in both.
func (v *VState) join(o VState) {
	for i := range v.May {
		v.May[i] |= o.May[i]
		v.Must[i] &= o.Must[i]
	}
	for h, b := range o.Behind {
		for i := range b {
			v.Behind[h][i] |= b[i]
		}
	}
	maps.DeleteFunc(v.Known, func(f packet.FieldRef, x uint64) bool {
		y, ok := o.Known[f]
		return !ok || x != y
	})
}

// feasible reports whether a frame in state st can leave node n by port
// p: a test's port is ruled out when its condition would need a header
// valid that cannot be, or invalid that must be.
func (va *Validity) feasible(n *dataflow.Node, p *dataflow.Port, st VState) bool {
	if n.Kind != dataflow.FNode || n.Op.Kind != packet.OpTest {
		return true
	}
	truth, known := st.eval(n.Op.Cond)
	return !known || truth == (p.Name == packet.PortTrue)
}

// eval is condition e's truth in state v, if v decides it: validity that
// must or cannot hold, and equalities of known field values.
func (v *VState) eval(e *packet.Expr) (truth, known bool) {
	if e == nil {
		return false, false
	}
	switch e.Kind {
	case packet.EValid:
		switch {
		case v.Must.Has(e.Header):
			return true, true
		case !v.May.Has(e.Header):
			return false, true
		}
	case packet.ENot:
		t, k := v.eval(e.A)
		return !t, k
	case packet.EAnd, packet.EOr:
		a, ka := v.eval(e.A)
		b, kb := v.eval(e.B)
		and := e.Kind == packet.EAnd
		switch {
		case ka && kb:
			if and {
				return a && b, true
			}
			return a || b, true
		case ka && a != and, kb && b != and: // false && _, true || _
			return !and, true
		}
	case packet.EEq, packet.ENe:
		if f, c, ok := fieldConst(e); ok {
			if x, ok := v.Known[f]; ok {
				return (x == c) == (e.Kind == packet.EEq), true
			}
		}
	}
	return false, false
}

// fieldConst matches field == constant (either way round) of at most 64
// bits.
func fieldConst(e *packet.Expr) (packet.FieldRef, uint64, bool) {
	a, b := e.A, e.B
	if a.Kind == packet.EConst {
		a, b = b, a
	}
	if a.Kind != packet.EField || b.Kind != packet.EConst || b.Const.Hi != 0 || a.Width > 64 {
		return packet.FieldRef{}, 0, false
	}
	return a.Field, b.Const.Lo, true
}

// know records the field values a test's port or a switch case fixes.
func (v *VState) know(n *dataflow.Node, p *dataflow.Port) {
	o := n.Op
	set := func(f packet.FieldRef, x uint64) {
		if v.Known == nil {
			v.Known = map[packet.FieldRef]uint64{}
		}
		v.Known[f] = x
	}
	switch o.Kind {
	case packet.OpTest:
		var walk func(e *packet.Expr)
		walk = func(e *packet.Expr) {
			switch {
			case e == nil:
			case e.Kind == packet.EAnd:
				walk(e.A)
				walk(e.B)
			case e.Kind == packet.EEq:
				if f, c, ok := fieldConst(e); ok {
					set(f, c)
				}
			}
		}
		if p.Name == packet.PortTrue {
			walk(o.Cond)
		}
	case packet.OpSwitch:
		if o.Expr == nil || o.Expr.Kind != packet.EField || o.Expr.Width > 64 {
			return
		}
		var only *packet.Case
		for i, c := range o.Cases {
			if c.Port == p.Name {
				if only != nil {
					return // two values lead here
				}
				only = &o.Cases[i]
			}
		}
		if only != nil && only.Value.Hi == 0 {
			set(o.Expr.Field, only.Value.Lo)
		}
	}
}

// forgetChecksums drops the known values of the checksums of headers us,
// which an update patches.
func (v *VState) forgetChecksums(s *packet.Schema, us []int) {
	for _, u := range us {
		if c := s.Headers[u].Checksum; c >= 0 {
			delete(v.Known, packet.FieldRef{Header: u, Field: c})
		}
	}
}

// forget drops the known values of header h's fields.
func (v *VState) forget(h int) {
	maps.DeleteFunc(v.Known, func(f packet.FieldRef, _ uint64) bool { return f.Header == h })
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
		if !st.Must.Has(o.Header) {
			out.forget(o.Header) // new bytes, unless it was there already
		}
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
		out.know(n, p)
	case packet.OpSwitch:
		out.know(n, p)
	case packet.OpSet:
		for _, a := range o.Assign {
			delete(out.Known, a.Dst)
		}
		out.forgetChecksums(s, o.Update)
	case packet.OpLookup:
		for _, ai := range s.Tables[o.Table].Actions {
			for _, a := range s.Actions[ai].Body {
				delete(out.Known, a.Dst)
			}
		}
	case packet.OpChecksumCompute:
		out.forget(o.Header)
	case packet.OpPush:
		out.forget(o.Header)
		for x := 0; x < nh; x++ {
			if x != o.Header && st.May.Has(x) {
				out.Behind[x].Add(o.Header)
				out.Behind[o.Header].Add(x)
			}
		}
		out.May.Add(o.Header)
		out.Must.Add(o.Header)
	case packet.OpPop:
		out.forget(o.Header)
		out.forgetChecksums(s, o.Update)
		out.May.Del(o.Header)
		out.Must.Del(o.Header)
	case packet.OpPlace:
		if p.Index != packet.PlaceComplete {
			break
		}
		// The packet is the event now: no wire header is valid, the
		// metadata stays (seed 108, model 51: a test of valid(ethernet)
		// behind complete was folded to true and read past the event).
		known := out.Known
		out = NewVState(nh)
		out.Known = known
		for _, h := range s.Headers {
			if !h.Metadata {
				out.forget(h.ID)
			}
		}
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
