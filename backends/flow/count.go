package flow

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// The interpreter counts the frames every node runs on. Generated code
// that stored one increment per node would pay a memory write per node
// per frame; most of them follow from the others, because frames are
// conserved: every frame that enters a node leaves it by one edge, to
// another node or out of the graph, where a sink or drop counter counts it
// anyway. So a generator records the flow graph as it emits code (Edges),
// gives a counter only to the edges outside a spanning forest of it
// (Knuth's placement of counters, PlaceGraph), and node runs are solved for
// from the counters (Flow.Runs, or code a generator writes from Flow).

// Exit is the flow graph's vertex outside the graph: every end leads to
// it, and the entry edge leads from it to the start node.
const Exit = -1

// Counter names what counts an edge.
type Counter struct {
	Kind  string `json:"kind,omitempty"` // "sink", "drop", "edge", "total"; "" none
	Index int    `json:"index,omitempty"`
}

// Counter kinds.
const (
	CountSink  = "sink"  // a sink's counter, by sink index
	CountDrop  = "drop"  // a drop site's counter, by site index
	CountEdge  = "edge"  // an edge counter placed by PlaceGraph
	CountTotal = "total" // all frames: the sum of the end counters
)

type edge struct {
	from, to int64
	known    Counter
	marker   string
	owner    int64 // the F-node whose code has the edge
	force    bool  // an end whose counter other ends share
}

// Edges records a graph's flow edges while a generator emits code.
type Edges struct {
	es []edge
}

// marker is the placeholder text for edge i, valid in Go and C code.
func marker(i int) string { return fmt.Sprintf("/*@edge %d@*/", i) }

// Jump records an edge from vertex from to vertex to in the code of F-node
// owner and returns the marker to emit where it is taken.
func (r *Edges) Jump(owner, from, to int64) string {
	m := marker(len(r.es))
	r.es = append(r.es, edge{from: from, to: to, marker: m, owner: owner})
	return m
}

// End records that a frame ends at vertex from, counted by c.
func (r *Edges) End(owner, from int64, c Counter) {
	r.es = append(r.es, edge{from: from, to: Exit, known: c, owner: owner})
}

// Shared records an end whose counter other ends share (so it does not
// say which); the edge gets a counter of its own. It returns the marker.
func (r *Edges) Shared(owner, from int64) string {
	m := marker(len(r.es))
	r.es = append(r.es, edge{from: from, to: Exit, marker: m, owner: owner, force: true})
	return m
}

// Flow says how to compute node runs from the counters: the value of
// every flow edge, known from a counter or solved in order, and per node
// the edges into it.
type Flow struct {
	// Known[i] is what counts edge i, if anything.
	Known []Counter `json:"known"`
	// Solve lists the other edges in an order in which each follows from
	// those before: f[Edge] = sum(f[Plus]) - sum(f[Minus]).
	Solve []Step `json:"solve"`
	// In[n] are the edges into node n (by node ID).
	In [][]int `json:"in"`
	// Ends are the end edges' counters; their sum is the total.
	Ends []Counter `json:"ends"`
}

// Step is one step of the solution.
type Step struct {
	Edge  int   `json:"edge"`
	Plus  []int `json:"plus"`
	Minus []int `json:"minus"`
}

// Plan is where counters go.
type Plan struct {
	Flow
	// Counters is how many edge counters there are.
	Counters int
	counted  map[string]int // marker -> edge counter
}

// PlaceGraph is place for the code generated for graph g from start, live
// holding the nodes whose code is kept; drops are the cold ends, and the
// edges from each node of hot (a profile's hot path, if any) to the next
// one the hot ones (not every edge between two of its nodes: a branch
// around part of the path would take the path's place).
func (r *Edges) PlaceGraph(g *dataflow.Graph, start *dataflow.Node, live map[*dataflow.Node]bool, hot []*dataflow.Node) (*Plan, error) {
	byID := map[int64]*dataflow.Node{}
	for _, n := range g.Nodes {
		byID[n.ID] = n
	}
	next := map[int64]int64{}
	for i := 1; i < len(hot); i++ {
		next[hot[i-1].ID] = hot[i].ID
	}
	return r.place(
		func(owner int64) bool { return live[byID[owner]] },
		start.ID, len(g.Nodes),
		func(from, to int64) int {
			if n := byID[to]; n != nil && n.Kind == dataflow.FNode && n.Op.Kind == packet.OpDrop {
				return 1 // frames rarely go there
			}
			if t, ok := next[from]; ok && t == to {
				return -1
			}
			return 0
		})
}

// place decides which edges of the live code (live reports whether an
// owner's code is kept) get counters, and how to solve for the rest.
// start is the start node, nodes the number of nodes (IDs are 0..nodes-1).
// heat orders the edges for the forest: hot ones (-1) join it first and
// get no counter, cold ones (1: to nodes frames rarely reach, drops) last,
// so that counters sit on the way to them.
func (r *Edges) place(live func(owner int64) bool, start int64, nodes int, heat func(from, to int64) int) (*Plan, error) {
	var es []edge
	seen := map[string]bool{}
	for _, e := range r.es {
		if !live(e.owner) {
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
	p := &Plan{counted: map[string]int{}}
	count := func(i int) {
		p.counted[es[i].marker] = p.Counters
		es[i].known = Counter{Kind: CountEdge, Index: p.Counters}
		p.Counters++
	}
	for i, e := range es {
		if e.force {
			count(i)
		}
	}
	for _, e := range es {
		if e.to == Exit {
			p.Ends = append(p.Ends, e.known)
		}
	}
	es = append(es, edge{from: Exit, to: start, known: Counter{Kind: CountTotal}})

	// Unknown edges join a spanning forest while they connect two parts;
	// the others get counters.
	parent := map[int64]int64{}
	var find func(v int64) int64
	find = func(v int64) int64 {
		if q, ok := parent[v]; ok && q != v {
			root := find(q)
			parent[v] = root
			return root
		}
		parent[v] = v
		return v
	}
	order := make([]int, len(es))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(heat(es[a].from, es[a].to), heat(es[b].from, es[b].to))
	})
	for _, i := range order {
		if es[i].known.Kind != "" {
			continue
		}
		if a, b := find(es[i].from), find(es[i].to); a != b {
			parent[a] = b
			continue
		}
		count(i)
	}

	// Solve: peel vertices with one unknown edge left (a forest always
	// peels). The exit's balance is the total by definition.
	unknown := map[int]bool{}
	incident := map[int64][]int{}
	for i, e := range es {
		p.Known = append(p.Known, e.known)
		if e.known.Kind == "" {
			unknown[i] = true
		}
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
			var open []int
			for _, i := range incident[v] {
				if unknown[i] {
					open = append(open, i)
				}
			}
			if len(open) != 1 || v == Exit {
				continue
			}
			u := open[0]
			st := Step{Edge: u, Plus: []int{}, Minus: []int{}}
			for _, i := range incident[v] {
				if i == u {
					continue
				}
				// Conservation at v: what enters equals what leaves.
				if (es[i].to == v) == (es[u].to == v) {
					st.Minus = append(st.Minus, i)
				} else {
					st.Plus = append(st.Plus, i)
				}
			}
			p.Solve = append(p.Solve, st)
			delete(unknown, u)
			progress = true
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%d flow edges left unsolved", len(unknown))
	}
	p.In = make([][]int, nodes)
	for i := range p.In {
		p.In[i] = []int{}
	}
	for i, e := range es {
		if e.to >= 0 && int(e.to) < nodes {
			p.In[e.to] = append(p.In[e.to], i)
		}
	}
	return p, nil
}

// Replace puts into code, for every marker, inc(k) where edge counter k
// goes and nothing elsewhere.
func (p *Plan) Replace(code string, inc func(k int) string) string {
	if !strings.Contains(code, "/*@edge ") {
		return code
	}
	var b strings.Builder
	for {
		i := strings.Index(code, "/*@edge ")
		if i < 0 {
			b.WriteString(code)
			return b.String()
		}
		j := strings.Index(code[i:], "@*/")
		m := code[i : i+j+3]
		b.WriteString(code[:i])
		if k, ok := p.counted[m]; ok {
			b.WriteString(inc(k))
		}
		code = code[i+j+3:]
	}
}

// Runs solves for the frames each node ran on, given the value of every
// counter (the total is computed here).
func (f *Flow) Runs(value func(Counter) uint64) []uint64 {
	val := make([]uint64, len(f.Known))
	var total uint64
	for _, k := range f.Ends {
		total += value(k)
	}
	for i, k := range f.Known {
		switch k.Kind {
		case "":
		case CountTotal:
			val[i] = total
		default:
			val[i] = value(k)
		}
	}
	at := func(i int) uint64 {
		if i >= 0 && i < len(val) {
			return val[i]
		}
		return 0
	}
	for _, s := range f.Solve {
		v := uint64(0)
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
	r := make([]uint64, len(f.In))
	for n, in := range f.In {
		for _, i := range in {
			r[n] += at(i)
		}
	}
	return r
}
