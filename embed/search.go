package embed

import (
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/prg/search"
)

// ForSearch embeds l into p for the C-node search (search.Embedder): the
// Rx sinks each copy of an LPG node runs behind.
func ForSearch(l, p *dataflow.Graph) (*search.Embedded, error) {
	em, err := Embed(l, p)
	if err != nil {
		return nil, err
	}
	serves := map[string][]string{}
	for name, o := range em.Origin {
		if o.LPG != "" {
			serves[name] = o.Serves
		}
	}
	return &search.Embedded{Graph: em.Graph, Space: em.Space, Serves: serves}, nil
}
