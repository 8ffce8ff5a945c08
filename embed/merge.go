package embed

import (
	"slices"
	"strings"
)

// merge shares what the pruned copies have in common: two copies of one
// LPG node with the same ports leading to the same (already shared) nodes
// become one, serving both sinks. Then copies are named: an LPG node with
// one surviving copy keeps its own name, others get @ and their sinks.
func (b *builder) merge() {
	g, of, err := b.graph()
	if err != nil || g.Order() == nil {
		return
	}
	at := map[string]*enode{}
	for e, n := range of {
		at[n.Name] = e
	}
	canon := map[string]*enode{}
	key := map[*enode]string{}
	order := g.Order()
	for i := len(order) - 1; i >= 0; i-- {
		e := at[order[i].Name]
		if e.sink == "" {
			continue
		}
		var sig strings.Builder
		sig.WriteString(e.tmpl.Name)
		for _, p := range e.ports {
			sig.WriteString("|" + p.name + ":")
			for _, list := range [][]*enode{p.out, p.spawn} {
				var ids []string
				for _, t := range list {
					if k, ok := key[t]; ok {
						ids = append(ids, k)
					} else {
						ids = append(ids, "="+t.name)
					}
				}
				slices.Sort(ids)
				sig.WriteString(strings.Join(ids, ",") + ";")
			}
		}
		s := sig.String()
		if c, ok := canon[s]; ok {
			c.serves = append(c.serves, e.serves...)
			redirect(b.nodes, e, []*enode{c})
			e.removed = true
			continue
		}
		canon[s] = e
		key[e] = e.name
	}
	survivors := map[string][]*enode{}
	for _, e := range b.nodes {
		if !e.removed && e.sink != "" {
			slices.Sort(e.serves)
			survivors[e.tmpl.Name] = append(survivors[e.tmpl.Name], e)
		}
	}
	for name, es := range survivors {
		for _, e := range es {
			if len(es) == 1 {
				e.name = b.lpgName(name)
			} else {
				e.name = name + "@" + strings.Join(e.serves, "+")
			}
		}
	}
}
