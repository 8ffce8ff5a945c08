package xdp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Node runs are counted as the Go backend counts them (see its
// flowcount.go): frames are conserved, every frame that enters a node
// leaves it by one edge, to another node or out of the graph where a sink
// or drop counter counts it, so only the edges outside a spanning forest
// of the flow graph get a counter of their own (Knuth's placement), and
// the runner solves for the rest (Meta.Flow). Count labels are the runs
// of their count nodes.

// exitVertex is the flow graph's vertex outside the graph: every end leads
// to it, and the entry edge leads from it to the start node.
const exitVertex = -1

// flowEdge is one edge of the flow graph.
type flowEdge struct {
	from, to int64
	// known is the counter that counts the edge: FlowSink, FlowDrop or
	// FlowEdge with its index; empty if none (yet).
	known  FlowCounter
	marker string         // where in the code its increment goes
	owner  *dataflow.Node // the F-node whose code has the edge
	force  bool           // an end whose counter other ends share
}

// FlowCounter names a counter of the block (or the total of frames).
type FlowCounter struct {
	Kind  string `json:"kind,omitempty"` // sink, drop, edge, total; "" unknown
	Index int    `json:"index,omitempty"`
}

// Flow is how the runner computes node runs from the counters: the
// values of the flow graph's edges, known or solved in order, and per
// node the edges into it.
type Flow struct {
	// Known[i] is edge i's counter, when it has one.
	Known []FlowCounter `json:"known"`
	// Solve lists the unknown edges in an order in which each follows
	// from known ones: f[Edge] = sum(f[Plus]) - sum(f[Minus]).
	Solve []FlowSolve `json:"solve"`
	// In[n] are the edges into node n (by node ID).
	In [][]int `json:"in"`
	// Ends are the end edges' counters, whose sum is the total.
	Ends []FlowCounter `json:"ends"`
}

// FlowSolve is one step of the solution.
type FlowSolve struct {
	Edge  int   `json:"edge"`
	Plus  []int `json:"plus"`
	Minus []int `json:"minus"`
}

// jumpEdge records an edge from vertex from to vertex to and returns the
// marker to emit on it.
func (c *gen) jumpEdge(from, to int64) string {
	m := fmt.Sprintf("/*@edge %d@*/", len(c.edges))
	c.edges = append(c.edges, flowEdge{from: from, to: to, marker: m, owner: c.node})
	return m
}

// endEdge records that a frame ends at vertex from with the given counter.
func (c *gen) endEdge(from int64, k FlowCounter) {
	c.edges = append(c.edges, flowEdge{from: from, to: exitVertex, known: k, owner: c.node})
}

// forcedEnd records an end whose counter other ends share; it returns
// the marker where its own counter goes.
func (c *gen) forcedEnd(from int64) string {
	m := fmt.Sprintf("/*@edge %d@*/", len(c.edges))
	c.edges = append(c.edges, flowEdge{from: from, to: exitVertex, marker: m, owner: c.node, force: true})
	return m
}

// placeCounters decides which edges of the live code get a counter,
// replaces the markers, and returns how to solve for the node runs.
func (c *gen) placeCounters(code map[*dataflow.Node][]byte, live map[*dataflow.Node]bool) *Flow {
	var es []flowEdge
	seen := map[string]bool{}
	for _, e := range c.edges {
		if e.owner == nil || !live[e.owner] {
			continue
		}
		if e.known.Kind != "" { // one edge per vertex and counter
			k := fmt.Sprint(e.from, e.known)
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		es = append(es, e)
	}
	counted := map[int]int{} // edge -> counter index
	for i, e := range es {
		if e.force {
			counted[i] = len(counted)
			es[i].known = FlowCounter{Kind: "edge", Index: counted[i]}
		}
	}
	var ends []FlowCounter
	for _, e := range es {
		if e.to == exitVertex {
			ends = append(ends, e.known)
		}
	}
	es = append(es, flowEdge{from: exitVertex, to: c.start.ID, known: FlowCounter{Kind: "total"}})

	// Unknown edges join a spanning forest while they connect two parts;
	// the others get counters. Edges into drop nodes go last, so that the
	// forest takes the edges frames mostly follow.
	parent := map[int64]int64{}
	var find func(v int64) int64
	find = func(v int64) int64 {
		if p, ok := parent[v]; ok && p != v {
			r := find(p)
			parent[v] = r
			return r
		}
		parent[v] = v
		return v
	}
	order := make([]int, len(es))
	for i := range order {
		order[i] = i
	}
	cold := func(i int) bool {
		if es[i].to < 0 || int(es[i].to) >= len(c.g.Nodes) {
			return false
		}
		n := c.g.Nodes[es[i].to]
		return n.Kind == dataflow.FNode && n.Op.Kind == packet.OpDrop
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch ca, cb := cold(a), cold(b); {
		case ca == cb:
			return 0
		case ca:
			return 1
		}
		return -1
	})
	for _, i := range order {
		e := es[i]
		if e.known.Kind != "" {
			continue
		}
		a, b := find(e.from), find(e.to)
		if a != b {
			parent[a] = b
			continue
		}
		counted[i] = len(counted)
		es[i].known = FlowCounter{Kind: "edge", Index: counted[i]}
	}
	c.edgeCounters = len(counted)
	for n, b := range code {
		s := string(b)
		for i, e := range es {
			if e.marker == "" || e.owner != n {
				continue
			}
			if k, ok := counted[i]; ok {
				s = strings.Replace(s, e.marker, fmt.Sprintf("NSC_EDGE(%d); ", k), 1)
			} else {
				s = strings.Replace(s, e.marker, "", 1)
			}
		}
		code[n] = []byte(s)
	}

	// Solve: peel vertices with one unknown edge left.
	f := &Flow{Ends: ends, In: make([][]int, len(c.g.Nodes))}
	unknown := map[int]bool{}
	for i, e := range es {
		f.Known = append(f.Known, e.known)
		if e.known.Kind == "" {
			unknown[i] = true
		}
	}
	incident := map[int64][]int{}
	for i, e := range es {
		incident[e.from] = append(incident[e.from], i)
		if e.to != e.from {
			incident[e.to] = append(incident[e.to], i)
		}
	}
	var vertices []int64
	for v := range incident {
		vertices = append(vertices, v)
	}
	slices.Sort(vertices)
	for progress := true; len(unknown) > 0 && progress; {
		progress = false
		for _, v := range vertices {
			ids := incident[v]
			var open []int
			for _, i := range ids {
				if unknown[i] {
					open = append(open, i)
				}
			}
			if len(open) != 1 || v == exitVertex {
				continue
			}
			u := open[0]
			// Conservation at v: what enters equals what leaves.
			st := FlowSolve{Edge: u, Plus: []int{}, Minus: []int{}}
			for _, i := range ids {
				if i == u {
					continue
				}
				in := es[i].to == v
				if in == (es[u].to == v) {
					st.Minus = append(st.Minus, i)
				} else {
					st.Plus = append(st.Plus, i)
				}
			}
			f.Solve = append(f.Solve, st)
			delete(unknown, u)
			progress = true
		}
	}
	if len(unknown) > 0 {
		c.fail("%d flow edges left unsolved", len(unknown)) // a forest always peels
	}
	for i, e := range es {
		if e.to >= 0 && int(e.to) < len(f.In) {
			f.In[e.to] = append(f.In[e.to], i)
		}
	}
	for i := range f.In {
		if f.In[i] == nil {
			f.In[i] = []int{}
		}
	}
	return f
}

// runs solves the flow for the frames each node ran on, from the
// counters' values (sum over CPUs).
func (m *Meta) runs(sum []uint64) []uint64 {
	f := m.Flow
	val := make([]uint64, len(f.Known))
	get := func(k FlowCounter, total uint64) uint64 {
		i := -1
		switch k.Kind {
		case "sink":
			i = m.sinkBase() + k.Index
		case "drop":
			i = m.dropBase() + k.Index
		case "edge":
			i = k.Index
		case "total":
			return total
		}
		if i >= 0 && i < len(sum) {
			return sum[i]
		}
		return 0
	}
	var total uint64
	for _, k := range f.Ends {
		total += get(k, 0)
	}
	for i, k := range f.Known {
		if k.Kind != "" {
			val[i] = get(k, total)
		}
	}
	at := func(i int) uint64 {
		if i >= 0 && i < len(val) {
			return val[i]
		}
		return 0
	}
	for _, s := range f.Solve {
		var v uint64
		for _, i := range s.Plus {
			v += at(i)
		}
		for _, i := range s.Minus {
			v -= at(i)
		}
		if s.Edge >= 0 && s.Edge < len(val) {
			val[s.Edge] = v
		}
	}
	r := make([]uint64, len(m.Nodes))
	for n, in := range f.In {
		if n >= len(r) {
			break
		}
		for _, i := range in {
			r[n] += at(i)
		}
	}
	return r
}
