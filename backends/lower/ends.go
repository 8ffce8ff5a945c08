package lower

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
)

// Where frames end and what counts them, once for every printer: drop
// sites, sinks and count labels are numbered in the order the walk first
// meets them (the generated counters' indices), and the flow edges the
// printed code takes are recorded for counter placement (flow.Edges).

// Names numbers names in the order they are first seen.
type Names[K comparable] struct {
	List  []K
	index map[K]int
}

// Add returns k's number, numbering it if it is new.
func (r *Names[K]) Add(k K) int {
	if i, ok := r.index[k]; ok {
		return i
	}
	if r.index == nil {
		r.index = map[K]int{}
	}
	r.index[k] = len(r.List)
	r.List = append(r.List, k)
	return len(r.List) - 1
}

// Index returns k's number, if it has one.
func (r *Names[K]) Index(k K) (int, bool) {
	i, ok := r.index[k]
	return i, ok
}

// DropSite is where and why frames are dropped: a node (or node.port)
// and a reason.
type DropSite struct{ Node, Reason string }

// owner is the block being printed, as a flow vertex.
func (w *Walker) owner() int64 {
	if w.cur == nil {
		return -2 // outside any block: never live
	}
	return w.cur.Node.ID
}

// DropEnd numbers drop site (node, reason) and records that a frame
// coming from flow vertex from ends there; it returns the site's number.
func (w *Walker) DropEnd(from int64, node, reason string) int {
	d := w.Drops.Add(DropSite{node, reason})
	w.Edges.End(w.owner(), from, flow.Counter{Kind: flow.CountDrop, Index: d})
	return d
}

// sinkEnd numbers sink node n and records that a frame coming from flow
// vertex from leaves there.
func (w *Walker) sinkEnd(from int64, n *dataflow.Node) int {
	s := w.Sinks.Add(n.Name)
	w.Edges.End(w.owner(), from, flow.Counter{Kind: flow.CountSink, Index: s})
	return s
}
