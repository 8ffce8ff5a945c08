package search

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
	"github.com/dragonet-go/nsc/prg"
)

// Cost is a configuration's cost (see the package doc) and its parts.
type Cost struct {
	Total, Software, Demux int
	Filters, Queues        int
	// PerFlow[i] is flow i's software + demux; Queues[i] the sinks its
	// packets are delivered behind.
	PerFlow    []int
	FlowQueues [][]string
}

func (c Cost) less(d Cost) bool {
	if c.Total != d.Total {
		return c.Total < d.Total
	}
	if c.Filters != d.Filters {
		return c.Filters < d.Filters
	}
	return c.Queues < d.Queues
}

// Result is the configuration the search chose.
type Result struct {
	Node    string       // the C-node configured
	Filters []prg.Filter // its value
	Cost    Cost
	// Baseline is the cost with no filter set.
	Baseline Cost
	Method   string // "exhaustive" or "greedy"
	Tried    int    // configurations embedded and costed
	// Why says, per flow, why no configuration does better than none
	// (empty when the chosen one does).
	Why []string
}

// Embedder embeds an LPG into a configured PRG (embed.ForSearch). The
// search sits with the PRGs, below the embedder in the pipeline, so its
// caller hands it in.
type Embedder func(lpg, prg *dataflow.Graph) (*Embedded, error)

// Embedded is what the search reads of an embedding: the graph, its
// predicate space, and the Rx sinks each copy of an LPG node runs behind
// (by node name; PRG nodes have none).
type Embedded struct {
	Graph  *dataflow.Graph
	Space  *predicate.Space
	Serves map[string][]string
}

// Configured is p with the filter list the search chose.
func (r *Result) Configured(p *dataflow.Graph) (*dataflow.Graph, error) {
	return prg.Configure(p, prg.Values{r.Node: prg.Literal(r.Filters)})
}

// Search configures prg's filter list for lpg's flows.
func Search(lpg, p *dataflow.Graph, flows []Flow, embed Embedder) (*Result, error) {
	decl := p
	if p.Declared != nil {
		decl = p.Declared
	}
	var node *dataflow.Node
	var typ prg.Type
	for _, n := range decl.Nodes {
		if n.Kind != dataflow.CNode {
			continue
		}
		if t, err := prg.ParseType(n.Config.Type); err == nil && t.Kind == prg.Filters {
			if node != nil {
				return nil, fmt.Errorf("prg %s has two filter lists, %s and %s; the search configures one", decl.Name, node.Name, n.Name)
			}
			node, typ = n, t
		}
	}
	if node == nil {
		return nil, fmt.Errorf("prg %s has no five-tuple filter list (a list<filter5,N> config node) to configure", decl.Name)
	}
	if len(flows) == 0 {
		return nil, fmt.Errorf("no flows to steer")
	}
	s := &searcher{lpg: lpg, decl: decl, node: node, flows: flows, embed: embed}
	s.sinks = map[string]bool{}
	for _, pt := range node.Ports {
		if pt.Name != prg.MissPort {
			s.queues = append(s.queues, pt.Name)
		}
		for _, e := range pt.Out {
			for n := range dataflow.Reachable(e.To) {
				s.sinks[n.Name] = n.Sink
			}
		}
	}
	base, err := s.eval(s.none())
	if err != nil {
		return nil, err
	}
	res := &Result{Node: node.Name, Baseline: base.cost, Method: "exhaustive"}
	best := base
	consider := func(a []int) error {
		if filters(a) > typ.N {
			return nil
		}
		c, err := s.eval(a)
		if err != nil {
			return err
		}
		if c.cost.less(best.cost) {
			best = c
		}
		return nil
	}
	if all := s.assignments(MaxExhaustive + 1); len(all) <= MaxExhaustive {
		for _, a := range all[1:] { // all[0] is the baseline
			if err := consider(a); err != nil {
				return nil, err
			}
		}
	} else {
		res.Method = "greedy"
		a := s.none()
		for i := range flows {
			opened := 0
			for _, q := range a[:i] {
				opened = max(opened, q+1)
			}
			for q := 0; q <= min(opened, len(s.queues)-1); q++ {
				try := slices.Clone(a)
				try[i] = q
				if err := consider(try); err != nil {
					return nil, err
				}
			}
			copy(a, best.assign)
		}
	}
	res.Tried = s.tried
	res.Filters, res.Cost = s.filters(best.assign), best.cost
	if !best.cost.less(base.cost) {
		res.Why = s.why(base.em)
	}
	return res, nil
}

type searcher struct {
	lpg, decl *dataflow.Graph
	node      *dataflow.Node
	flows     []Flow
	queues    []string
	// sinks are the Rx sinks the filter list leads to: the queues it
	// chooses between. Sinks before it are the same in every configuration.
	sinks map[string]bool
	tried int
	embed Embedder
}

type evaluated struct {
	assign []int
	cost   Cost
	em     *Embedded
}

// none leaves every flow unfiltered (-1).
func (s *searcher) none() []int {
	a := make([]int, len(s.flows))
	for i := range a {
		a[i] = -1
	}
	return a
}

func filters(a []int) int {
	n := 0
	for _, q := range a {
		if q >= 0 {
			n++
		}
	}
	return n
}

// assignments lists, up to limit, the assignments that open queues in
// order, the unfiltered one first.
func (s *searcher) assignments(limit int) [][]int {
	var out [][]int
	a := s.none()
	var rec func(i, opened int)
	rec = func(i, opened int) {
		if len(out) >= limit {
			return
		}
		if i == len(a) {
			out = append(out, slices.Clone(a))
			return
		}
		for q := -1; q <= min(opened, len(s.queues)-1); q++ {
			a[i] = q
			rec(i+1, max(opened, q+1))
		}
		a[i] = -1
	}
	rec(0, 0)
	return out
}

func (s *searcher) filters(a []int) []prg.Filter {
	var fs []prg.Filter
	for i, q := range a {
		if q >= 0 {
			f := s.flows[i].Filter
			f.Priority, f.Port = 1, s.queues[q]
			fs = append(fs, f)
		}
	}
	return fs
}

func (s *searcher) eval(a []int) (*evaluated, error) {
	s.tried++
	g, err := prg.Configure(s.decl, prg.Values{s.node.Name: prg.Literal(s.filters(a))})
	if err != nil {
		return nil, err
	}
	em, err := s.embed(s.lpg, g)
	if err != nil {
		return nil, err
	}
	c := s.cost(em)
	c.Filters = filters(a)
	used := map[int]bool{}
	for _, q := range a {
		used[q] = q >= 0
	}
	delete(used, -1)
	c.Queues = len(used)
	return &evaluated{slices.Clone(a), c, em}, nil
}

// view is what the cost reads of an embedding: the LPG copies behind each
// Rx sink and the flows' predicates.
type view struct {
	g       *dataflow.Graph
	ps      *dataflow.Predicates
	sinks   []string
	copies  map[string][]*dataflow.Node
	flows   []predicate.Pred
	anyFlow predicate.Pred
}

func (s *searcher) view(em *Embedded) *view {
	v := &view{g: em.Graph, ps: em.Graph.PredicatesIn(em.Space), copies: map[string][]*dataflow.Node{}}
	for _, n := range em.Graph.Nodes {
		// A copy merged across sinks (embed's merge) serves each.
		for _, sink := range em.Serves[n.Name] {
			v.copies[sink] = append(v.copies[sink], n)
		}
	}
	for _, n := range s.decl.Nodes {
		if _, ok := v.copies[n.Name]; ok {
			v.sinks = append(v.sinks, n.Name)
		}
	}
	v.anyFlow = em.Space.False()
	for _, f := range s.flows {
		p := v.ps.Cond(f.Cond)
		v.flows = append(v.flows, p)
		v.anyFlow = v.anyFlow.Or(p)
	}
	return v
}

// via narrows p to the packets that came through the sink: embed merges
// equal copies across sinks, so a copy's own predicate covers them all
// (the Rx sinks' predicates are disjoint: a packet takes one).
func (v *view) via(sink string, p predicate.Pred) predicate.Pred {
	return p.And(v.ps.Reaching(v.g.Node(sink)))
}

// delivered: some of p's packets come through the sink, and behind it a
// node hands packets to the application (steer, emit) or its state
// (place): the sink is one of the thread's queues. The delivering node is
// not asked about p itself: its predicate describes packets as they reach
// it, and an LPG that pops the headers a flow is told by (the
// reassembler) has forgotten them there.
func (v *view) delivered(sink string, p predicate.Pred) bool {
	p = v.via(sink, p)
	if !predicate.Satisfiable(p) {
		return false
	}
	for _, n := range v.copies[sink] {
		if n.Kind == dataflow.FNode && (n.Op.Kind == packet.OpSteer || n.Op.Kind == packet.OpEmit || n.Op.Kind == packet.OpPlace) &&
			predicate.Satisfiable(v.ps.Reaching(n)) {
			return true
		}
	}
	return false
}

func (s *searcher) cost(em *Embedded) Cost {
	v := s.view(em)
	c := Cost{PerFlow: make([]int, len(s.flows)), FlowQueues: make([][]string, len(s.flows))}
	for i, fp := range v.flows {
		for _, sink := range v.sinks {
			if s.sinks[sink] && v.delivered(sink, fp) {
				c.FlowQueues[i] = append(c.FlowQueues[i], sink)
			}
		}
	}
	for i, fp := range v.flows {
		sw := 0
		for _, sink := range c.FlowQueues[i] {
			n := 0
			for _, x := range v.copies[sink] {
				if predicate.Satisfiable(v.ps.Reaching(x).And(v.via(sink, fp))) {
					n++
				}
			}
			sw = max(sw, n)
		}
		demux := max(len(c.FlowQueues[i])-1, 0)
		for _, q := range c.FlowQueues[i] {
			for j := range v.flows {
				if j != i && slices.Contains(c.FlowQueues[j], q) {
					demux++
				}
			}
			if v.delivered(q, v.anyFlow.Not()) {
				demux++
			}
		}
		c.Software += sw
		c.Demux += demux
		c.PerFlow[i] = sw + demux
	}
	c.Total = c.Software + c.Demux
	return c
}

// why explains, per flow, why steering it does not help: its packets
// never reach the filters, or no filter matches them, or they are alone
// on their queue already.
func (s *searcher) why(base *Embedded) []string {
	v := s.view(base)
	head := base.Graph.Node(s.node.Name)
	var out []string
	for i, f := range s.flows {
		fp := v.flows[i]
		fc, err := f.Filter.Cond(s.decl.Schema)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", f.Name, err))
			continue
		}
		cond := v.ps.Cond(fc)
		var where []string
		for _, sink := range v.sinks {
			if v.delivered(sink, fp) {
				where = append(where, sink)
			}
		}
		switch {
		case head == nil || !predicate.Satisfiable(v.ps.Reaching(head).And(fp)):
			out = append(out, fmt.Sprintf("%s: its packets never reach %s; %s delivers them behind %s, before the filters", f.Name, s.node.Name, s.decl.Name, orNone(where)))
		case !predicate.Satisfiable(cond.And(fp)):
			out = append(out, fmt.Sprintf("%s: no five-tuple filter matches its packets (a filter tests %s)", f.Name, fc.Text))
		default:
			out = append(out, fmt.Sprintf("%s: on its queue (%s) it runs the same LPG nodes and shares with no one, filtered or not", f.Name, orNone(where)))
		}
	}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no sink"
	}
	return strings.Join(s, ", ")
}

// Write prints the chosen configuration, its cost and why, for people.
func (r *Result) Write(w io.Writer, flows []Flow) error {
	fmt.Fprintf(w, "configuration search: %d flows, %s, %d configurations of %s embedded and costed\n", len(flows), r.Method, r.Tried, r.Node)
	fmt.Fprintf(w, "chosen: %s = %s\n", r.Node, prg.FormatFilters(r.Filters))
	fmt.Fprintf(w, "cost: %d (software %d + demux %d; %d filters, %d queues); with no filter: %d (software %d + demux %d)\n",
		r.Cost.Total, r.Cost.Software, r.Cost.Demux, r.Cost.Filters, r.Cost.Queues, r.Baseline.Total, r.Baseline.Software, r.Baseline.Demux)
	for i, f := range flows {
		fmt.Fprintf(w, "  %-20s queue %-12s cost %d (with no filter: %d)\n", f.Name, orNone(r.Cost.FlowQueues[i]), r.Cost.PerFlow[i], r.Baseline.PerFlow[i])
	}
	if len(r.Why) > 0 {
		fmt.Fprintf(w, "no configuration offloads a stage:\n")
		for _, y := range r.Why {
			fmt.Fprintf(w, "  %s\n", y)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}
