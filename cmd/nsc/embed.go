package main

import (
	"fmt"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/prg"
	"github.com/dragonet-go/nsc/prg/search"
)

func runEmbed(e *env, args []string) error {
	fs := newFlags("embed", e)
	lpg := fs.String("lpg", "", "the LPG")
	prgName := fs.String("prg", "", "the PRG")
	asJSON := fs.Bool("json", false, "print the placements as JSON")
	config := fs.String("config", "", "configure the PRG's C-nodes from this file of NODE = VALUE lines")
	configure := fs.Bool("configure", false, "search the configuration of the PRG's five-tuple filters that suits the LPG's receive threads best")
	port := fs.Int("port", 19522, "with --configure: the first UDP port the LPG receives on (a receive thread per port)")
	ports := fs.Int("ports", 1, "with --configure: how many consecutive ports (the member's port range)")
	ipv6 := fs.Bool("ipv6", false, "with --configure: the receive threads' packets come over IPv6")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *config != "" && *configure {
		return usagef("--config and --configure exclude each other")
	}
	if !*configure && *config == "" {
		em, err := embedding(files, *lpg, *prgName)
		if err != nil {
			return err
		}
		return writeEmbedding(e, em, *asJSON)
	}
	m, l, p, err := graphs(files, *lpg, *prgName)
	if err != nil {
		return err
	}
	if *config != "" {
		src, err := readFile(*config)
		if err != nil {
			return err
		}
		vals, err := lang.ParseConfig(*config, src)
		if err != nil {
			return err
		}
		if p, err = prg.Configure(p, vals); err != nil {
			return err
		}
		em, err := embed.Embed(l, p)
		if err != nil {
			return err
		}
		return writeEmbedding(e, em, *asJSON)
	}
	flows, err := search.PortFlows(m.Schema, *ipv6, *port, *ports)
	if err != nil {
		return usagef("%v", err)
	}
	r, err := search.Search(l, p, flows, embed.ForSearch)
	if err != nil {
		return err
	}
	if err := r.Write(e.stdout, flows); err != nil {
		return err
	}
	if p, err = r.Configured(p); err != nil {
		return err
	}
	em, err := embed.Embed(l, p)
	if err != nil {
		return err
	}
	return writeEmbedding(e, em, *asJSON)
}

func writeEmbedding(e *env, em *embed.Embedding, asJSON bool) error {
	if asJSON {
		return em.WriteJSON(e.stdout)
	}
	return em.WriteReport(e.stdout)
}

// embedding loads the model and embeds lpg into prg.
func embedding(files []string, lpg, prg string) (*embed.Embedding, error) {
	_, l, p, err := graphs(files, lpg, prg)
	if err != nil {
		return nil, err
	}
	return embed.Embed(l, p)
}

// graphs loads the model and finds the LPG and the PRG in it.
func graphs(files []string, lpg, prg string) (*lang.Model, *dataflow.Graph, *dataflow.Graph, error) {
	if lpg == "" || prg == "" {
		return nil, nil, nil, usagef("--lpg and --prg are required")
	}
	m, err := loadModel(files)
	if err != nil {
		return nil, nil, nil, err
	}
	l, err := graphKind(m, lpg, dataflow.LPG)
	if err != nil {
		return nil, nil, nil, err
	}
	p, err := graphKind(m, prg, dataflow.PRG)
	if err != nil {
		return nil, nil, nil, err
	}
	return m, l, p, nil
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
