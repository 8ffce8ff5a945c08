package golang

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// The interpreter counts the frames every node runs on. Counting that in
// the fast path with one increment per node costs a memory write per node
// per frame; most of them follow from the others, because frames are
// conserved: every frame that enters a node leaves it by one edge, to
// another node or out of the graph, where the sink and drop counters count
// it anyway. So the generator counts only the edges outside a spanning
// forest of the flow graph (Knuth's placement of counters) and Each solves
// for the rest.

// exitVertex is the flow graph's vertex outside the graph: every end leads
// to it, and the entry edge leads from it to the start node.
const exitVertex = -1

// flowEdge is one edge of the flow graph.
type flowEdge struct {
	from, to int64
	// known is the counter that already counts the edge (a sink or drop
	// counter), "" if none.
	known string
	// marker is where in the code an increment goes if the edge gets a
	// counter of its own.
	marker string
	owner  *dataflow.Node // the F-node whose code has the edge
	// force: give the edge a counter (an end whose counter it shares
	// with ends elsewhere, so the counter does not say which).
	force bool
}

// jumpEdge records an edge from vertex from to vertex to and returns the
// marker to emit on it.
func (c *gen) jumpEdge(from, to int64) string {
	m := fmt.Sprintf("/*edge %d*/", len(c.edges))
	c.edges = append(c.edges, flowEdge{from: from, to: to, marker: m, owner: c.owner})
	return m
}

// retDrop returns the statement that ends a frame at drop site d, coming
// from vertex from, and records the end.
func (c *gen) retDrop(from int64, d int) string {
	c.edges = append(c.edges, flowEdge{from: from, to: exitVertex, known: fmt.Sprintf("pl.Dropped[%d]", d), owner: c.owner})
	return fmt.Sprintf("return pl.drop(%d)", d)
}

// retSink returns the statement that sends a frame out at sink s.
func (c *gen) retSink(from int64, s int) string {
	c.edges = append(c.edges, flowEdge{from: from, to: exitVertex, known: fmt.Sprintf("pl.Sunk[%d]", s), owner: c.owner})
	return fmt.Sprintf("return pl.sink(%d, p.Data)", s)
}

// retUndecided ends a frame undecided: the site is shared by every place
// this happens, so the edge gets a counter of its own.
func (c *gen) retUndecided(from int64) string {
	m := fmt.Sprintf("/*edge %d*/", len(c.edges))
	c.edges = append(c.edges, flowEdge{from: from, to: exitVertex, marker: m, owner: c.owner, force: true})
	return m + fmt.Sprintf("return pl.drop(%d)", c.drop(c.start.Name, "undecided"))
}

// placeCounters decides which edges of the live code get a counter,
// replaces the markers, and returns the code of the function that solves
// for the node runs.
func (c *gen) placeCounters(code map[*dataflow.Node][]byte, live map[*dataflow.Node]bool) string {
	var es []flowEdge
	seen := map[[3]string]bool{}
	for _, e := range c.edges {
		if !live[e.owner] {
			continue
		}
		if e.known != "" { // one edge per vertex and counter
			k := [3]string{fmt.Sprint(e.from), e.known}
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		es = append(es, e)
	}
	// The entry edge: every frame ends once, so it carries the sum of the
	// end counters.
	counted := map[int]int{} // edge -> counter index
	for i, e := range es {
		if e.force {
			counted[i] = len(counted)
			es[i].known = fmt.Sprintf("pl.edges[%d]", counted[i])
		}
	}
	var ends []string
	for _, e := range es {
		if e.to == exitVertex {
			ends = append(ends, e.known)
		}
	}
	entry := flowEdge{from: exitVertex, to: c.start.ID, known: "total"}
	es = append(es, entry)

	// Unknown edges join a spanning forest while they connect two parts;
	// the others get counters.
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
	// Edges into drop nodes go last, so that the forest takes the edges
	// frames mostly follow and counters sit on the way to drops.
	order := make([]int, len(es))
	for i := range order {
		order[i] = i
	}
	cold := func(i int) bool {
		n := c.g.Node(c.nameOf[es[i].to])
		return n != nil && n.Kind == dataflow.FNode && n.Op.Kind == packet.OpDrop
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
		if e.known != "" {
			continue
		}
		a, b := find(e.from), find(e.to)
		if a != b {
			parent[a] = b
			continue
		}
		counted[i] = len(counted)
		es[i].known = fmt.Sprintf("pl.edges[%d]", counted[i])
	}
	c.counters = len(counted)
	for n, b := range code {
		s := string(b)
		for i, e := range es {
			if e.marker == "" || e.owner != n {
				continue
			}
			if k, ok := counted[i]; ok {
				s = strings.Replace(s, e.marker, fmt.Sprintf("pl.edges[%d]++\n", k), 1)
			} else {
				s = strings.Replace(s, e.marker, "", 1)
			}
		}
		code[n] = []byte(s)
	}

	// Solve: peel vertices with one unknown edge left.
	var w strings.Builder
	fmt.Fprintf(&w, "// runs solves the flow graph for the frames each node ran on.\nfunc (pl *Pipeline) runs() (r [len(NodeNames)]uint64) {\n")
	fmt.Fprintf(&w, "var f [%d]uint64\n", len(es))
	fmt.Fprintf(&w, "total := uint64(0)")
	for _, k := range ends {
		fmt.Fprintf(&w, " + %s", k)
	}
	w.WriteString("\n")
	unknown := map[int]bool{}
	for i, e := range es {
		if e.known != "" {
			fmt.Fprintf(&w, "f[%d] = %s\n", i, e.known)
		} else {
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
			var plus, minus []string
			for _, i := range ids {
				if i == u {
					continue
				}
				in := es[i].to == v
				if in == (es[u].to == v) {
					minus = append(minus, fmt.Sprintf("f[%d]", i))
				} else {
					plus = append(plus, fmt.Sprintf("f[%d]", i))
				}
			}
			fmt.Fprintf(&w, "f[%d] = 0", u)
			for _, t := range plus {
				fmt.Fprintf(&w, " + %s", t)
			}
			for _, t := range minus {
				fmt.Fprintf(&w, " - %s", t)
			}
			w.WriteString("\n")
			delete(unknown, u)
			progress = true
		}
	}
	if len(unknown) > 0 {
		panic(fmt.Sprintf("go backend: %d flow edges left unsolved", len(unknown))) // a forest always peels
	}
	in := map[int64][]int{}
	for i, e := range es {
		if e.to != exitVertex {
			in[e.to] = append(in[e.to], i)
		}
	}
	for _, n := range c.g.Nodes {
		if len(in[n.ID]) == 0 {
			continue
		}
		fmt.Fprintf(&w, "r[%d] = 0", n.ID)
		for _, i := range in[n.ID] {
			fmt.Fprintf(&w, " + f[%d]", i)
		}
		w.WriteString("\n")
	}
	w.WriteString("return r\n}\n")
	return w.String()
}
