package prg

import "github.com/dragonet-go/nsc/dataflow"

// TxEntry is the name of a PRG's Tx entry: the source that takes what an
// LPG sends (its lpg.TxExit).
const TxEntry = "TxQueue"

// Entry is p's Tx entry, or nil when p has no Tx side.
func Entry(p *dataflow.Graph) *dataflow.Node {
	if e := p.Node(TxEntry); e != nil && e.Source {
		return e
	}
	return nil
}

// RxSinks are p's Rx sinks, in declaration order: the sinks its Tx entry
// does not reach. An LPG's Rx part hangs off each.
func RxSinks(p *dataflow.Graph) []*dataflow.Node {
	tx := map[*dataflow.Node]bool{}
	if e := Entry(p); e != nil {
		tx = dataflow.Reachable(e)
	}
	var out []*dataflow.Node
	for _, n := range p.Nodes {
		if n.Sink && !tx[n] {
			out = append(out, n)
		}
	}
	return out
}
