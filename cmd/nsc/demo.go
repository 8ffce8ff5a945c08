package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dragonet-go/nsc/backends/dot"
)

// demoModel is seed 003's I/P stack and NIC.
const demoModel = "models/dragonet/offload.nsc"

// demoPreds are the predicates the demo prints: the NIC's Tx software
// output (seed 003's prPred example), the three Rx sinks, and two LPG
// nodes.
var demoPreds = []struct{ graph, node string }{
	{"IPNicTx", "TxSwOut"},
	{"IPNicRx", "RxOut_"},
	{"IPNicRx", "RxCsumValid"},
	{"IPNicRx", "RxCsumInvalid"},
	{"IPStack", "RxPPort"},
	{"IPStack", "RxPCsumFailed"},
}

func runDemo(e *env, args []string) error {
	fs := newFlags("demo", e)
	out := fs.String("o", "nsc-demo", "directory for the pictures")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	m, err := loadModel([]string{demoModel})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "== check %s\n", demoModel)
	for _, g := range m.Graphs {
		fmt.Fprintf(e.stdout, "ok  %s %s: %s\n", g.Kind, g.Name, plural(len(g.Nodes), "node"))
	}
	fmt.Fprintln(e.stdout, "\n== predicates (which packets reach a node), in Dragonet's prPred form")
	for _, p := range demoPreds {
		g, _ := m.Graph(p.graph)
		n := g.Node(p.node)
		fmt.Fprintf(e.stdout, "-- %s\n%s\n", p.graph, g.Predicates().Reaching(n).Format(n.Name))
	}
	fmt.Fprintf(e.stdout, "\n== pictures in %s/\n", *out)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, g := range m.Graphs {
		base := filepath.Join(*out, g.Name)
		if err := writeDot(e, g, base+".dot", dot.Options{}); err != nil {
			return err
		}
		msg := base + ".dot"
		switch err := writeDot(e, g, base+".svg", dot.Options{}); {
		case err == nil:
			msg += ", " + base + ".svg"
		case errors.Is(err, dot.ErrNoGraphviz):
			msg += " (install Graphviz for SVG)"
		default:
			return err
		}
		fmt.Fprintln(e.stdout, msg)
	}
	return nil
}
