package flow

import (
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Checked computes, per node, the headers whose state a printer checked
// (a pointer it can reuse) and that are still fresh on every path to the
// node, or that cannot be valid there. A node leaves checked the headers
// its code checks unconditionally (tops) and, on an extract's true port,
// the header it extracted; a push or pop (the frame moves) or a parse
// (the headers are found anew) leaves fresh only what cannot be valid.
func Checked(g *dataflow.Graph, start *dataflow.Node, v *Validity, tops map[*dataflow.Node]HSet) map[*dataflow.Node]HSet {
	nh := len(g.Schema.Headers)
	in := map[*dataflow.Node]HSet{}
	merge := func(n *dataflow.Node, s HSet) {
		cur, ok := in[n]
		if !ok {
			in[n] = s.Clone()
			return
		}
		for i := range cur {
			cur[i] &= s[i]
		}
	}
	all := NewHSet(nh)
	for h := 0; h < nh; h++ {
		all.Add(h)
	}
	in[start] = all
	for _, n := range g.Order() {
		st, ok := in[n]
		if !ok {
			continue
		}
		vs := v.In[n]
		for _, p := range n.Ports {
			out := st.Clone()
			if n.Kind == dataflow.FNode && vs != nil {
				after := v.Transfer(n, p, *vs)
				moves := false
				switch n.Op.Kind {
				case packet.OpPush, packet.OpPop, packet.OpParse:
					moves = true
				case packet.OpInput:
					moves = n.Op.Header >= 0
				case packet.OpExtract:
					h := n.Op.Header
					if p.Name != packet.PortTrue || !vs.May.Has(h) {
						out.Add(h) // invalid, or just extracted and checked
					}
				}
				if moves {
					out = NewHSet(nh)
					for h := 0; h < nh; h++ {
						if !after.May.Has(h) {
							out.Add(h)
						}
					}
				}
				if t := tops[n]; t != nil {
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
