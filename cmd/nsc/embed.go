package main

import (
	"fmt"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/lang"
)

func runEmbed(e *env, args []string) error {
	fs := newFlags("embed", e)
	lpg := fs.String("lpg", "", "the LPG")
	prg := fs.String("prg", "", "the PRG")
	asJSON := fs.Bool("json", false, "print the placements as JSON")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	em, err := embedding(files, *lpg, *prg)
	if err != nil {
		return err
	}
	if *asJSON {
		return em.WriteJSON(e.stdout)
	}
	return em.WriteReport(e.stdout)
}

// embedding loads the model and embeds lpg into prg.
func embedding(files []string, lpg, prg string) (*embed.Embedding, error) {
	if lpg == "" || prg == "" {
		return nil, usagef("--lpg and --prg are required")
	}
	m, err := loadModel(files)
	if err != nil {
		return nil, err
	}
	l, err := graphKind(m, lpg, dataflow.LPG)
	if err != nil {
		return nil, err
	}
	p, err := graphKind(m, prg, dataflow.PRG)
	if err != nil {
		return nil, err
	}
	return embed.Embed(l, p)
}

func graphKind(m *lang.Model, name string, kind dataflow.Kind) (*dataflow.Graph, error) {
	g, ok := m.Graph(name)
	if !ok {
		return nil, fmt.Errorf("no graph %s in the model (it has %s)", name, graphList(m))
	}
	if g.Kind != kind {
		return nil, fmt.Errorf("%s is a %s, not a %s", name, g.Kind, kind)
	}
	return g, nil
}
