package embed

import (
	"fmt"
	"slices"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// enode is a node of the embedded graph while it is being built and
// pruned; materialize turns the survivors into a dataflow.Graph.
type enode struct {
	name  string
	tmpl  *dataflow.Node // the LPG or PRG node it was made from
	lpg   bool
	sink  string // for an LPG copy behind a PRG Rx sink: that sink
	op    *packet.Op
	ports []*eport
	// serves lists the PRG Rx sinks behind which the node runs.
	serves []string

	software, hardware, source, isSink, program bool
	removed                                     bool
	// rule: a PRG match-action rule, doing its work only when installed
	// (see dataflow.Node.Rule); a rule not installed is passed by.
	rule, installed bool
	// guardOf names the LPG node a residual guard stands in front of.
	guardOf string
	// claimed: an LPG place behind a sink no hardware place feeds, which
	// pruning may fold when the sink's claims decide how it ends.
	claimed bool
}

type eport struct {
	name, pred string
	out, spawn []*enode
}

// display names the node for people: an LPG node by its LPG name, not by
// the name it has in the embedded graph (RxParse@RxOut_, TxPCsum@lpg).
func (n *enode) display() string {
	if n.lpg {
		return n.tmpl.Name
	}
	return n.name
}

// clone makes an enode from a graph node, ports without edges.
func clone(n *dataflow.Node, name string, lpg bool) *enode {
	e := &enode{name: name, tmpl: n, lpg: lpg, op: n.Op,
		software: n.Software, hardware: n.Hardware, source: n.Source, isSink: n.Sink, program: n.Program, rule: n.Rule && !lpg}
	for _, p := range n.Ports {
		e.ports = append(e.ports, &eport{name: p.Name, pred: p.Pred})
	}
	return e
}

// live reports whether the node is in the graph: not removed, and not a
// rule left uninstalled.
func (n *enode) live() bool { return !n.removed && (!n.rule || n.installed) }

// passedTo lists where an edge to t leads: t, or for a rule not installed,
// what its first port leads to.
func passedTo(t *enode) []*enode {
	if t.removed {
		return nil
	}
	if t.live() {
		return []*enode{t}
	}
	var out []*enode
	for _, u := range t.ports[0].out {
		out = append(out, passedTo(u)...)
	}
	return out
}

// kept are the live nodes the graph keeps: not a PRG node that only a
// rule not installed led to (a flow table's miss drop).
func kept(ns []*enode) map[*enode]bool {
	keep := map[*enode]bool{}
	for _, e := range ns {
		keep[e] = e.live()
	}
	for changed := true; changed; {
		changed = false
		in := map[*enode]bool{}
		for _, e := range ns {
			if !keep[e] {
				continue
			}
			for _, p := range e.ports {
				for _, t := range slices.Concat(p.out, p.spawn) {
					for _, u := range passedTo(t) {
						in[u] = true
					}
				}
			}
		}
		for _, e := range ns {
			if keep[e] && !e.lpg && !e.source && !in[e] && e.guardOf == "" && behindRule(ns, e) {
				keep[e], changed = false, true
			}
		}
	}
	return keep
}

// behindRule reports whether an edge to e leaves a rule not installed.
func behindRule(ns []*enode, e *enode) bool {
	for _, x := range ns {
		if x.rule && !x.installed && !x.removed && slices.ContainsFunc(x.ports, func(p *eport) bool { return slices.Contains(p.out, e) }) {
			return true
		}
	}
	return false
}

// materialize builds a dataflow graph of the live nodes, in order. It
// returns the graph and, for each enode, its node.
func materialize(name string, kind dataflow.Kind, schema *packet.Schema, ns []*enode) (*dataflow.Graph, map[*enode]*dataflow.Node, error) {
	g := dataflow.New(name, kind, schema)
	keep := kept(ns)
	of := map[*enode]*dataflow.Node{}
	for _, e := range ns {
		if !keep[e] {
			continue
		}
		n := &dataflow.Node{Name: e.name, Cluster: e.tmpl.Cluster, Kind: e.tmpl.Kind, Op: e.op, Logic: e.tmpl.Logic,
			Config: e.tmpl.Config, Software: e.software, Hardware: e.hardware, Source: e.source, Sink: e.isSink, Program: e.program, Host: e.tmpl.Host, Rule: e.rule, Pos: e.tmpl.Pos}
		if err := g.AddNode(n); err != nil {
			return nil, nil, fmt.Errorf("embedded graph: %w", err)
		}
		for _, p := range e.ports {
			n.AddPort(p.name, "").Pred = p.pred
		}
		of[e] = n
	}
	for _, e := range ns {
		if !keep[e] {
			continue
		}
		for i, p := range e.ports {
			from := of[e].Ports[i]
			seen := map[*enode]bool{}
			for _, t := range p.out {
				for _, u := range passedTo(t) {
					if !seen[u] && keep[u] {
						seen[u] = true
						dataflow.Connect(from, of[u], false)
					}
				}
			}
			for _, t := range p.spawn {
				for _, u := range passedTo(t) {
					if keep[u] {
						dataflow.Connect(from, of[u], true)
					}
				}
			}
		}
	}
	return g, of, nil
}

// redirect replaces every edge to old by edges to the targets in to.
func redirect(ns []*enode, old *enode, to []*enode) {
	for _, e := range ns {
		if e.removed {
			continue
		}
		for _, p := range e.ports {
			if i := slices.Index(p.out, old); i >= 0 {
				p.out = slices.Delete(p.out, i, i+1)
				for _, t := range to {
					if !slices.Contains(p.out, t) {
						p.out = append(p.out, t)
					}
				}
			}
		}
	}
}

// preds returns, for each live node, the ports that lead to it.
func preds(ns []*enode) map[*enode][]*eport {
	in := map[*enode][]*eport{}
	for _, e := range ns {
		if e.removed {
			continue
		}
		for _, p := range e.ports {
			for _, t := range p.out {
				in[t] = append(in[t], p)
			}
			for _, t := range p.spawn {
				in[t] = append(in[t], p)
			}
		}
	}
	return in
}
