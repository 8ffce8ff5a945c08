// Command dragonet-offload retells Dragonet's checksum-offload story (seed
// 003) with nsc's packages: the I/P stack (an LPG) meets its imaginary NIC
// (PRGs), and embedding decides which stack stages the NIC does.
//
//	go run ./examples/dragonet-offload [-o DIR]
//
// It prints the predicate at the NIC's software Tx output, then embeds the
// stack into the NIC with and without its checksum engine (Tx) and into the
// NIC's three Rx sinks, printing where every stack node went. With -o it
// draws the graphs into DIR: SVG when Graphviz is installed, DOT otherwise.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dragonet-go/nsc/backends/dot"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
)

// model is seed 003's stack and NIC, from the models shipped with nsc.
const model = "dragonet/offload.nsc"

var loader = lang.Loader{
	ReadFile: func(name string) ([]byte, error) { return fs.ReadFile(models.FS, name) },
	Library:  models.FS,
}

// steps are the embeddings of the story, in seed 003's order.
var steps = []struct{ prg, title string }{
	{"IPNicTx", "Tx offload: the NIC computes the P checksum"},
	{"IPNicTxPlain", "Tx without the checksum engine"},
	{"IPNicRx", "Rx offload: one LPG copy per NIC sink, pruned by the sink's predicate"},
}

func main() {
	dir := flag.String("o", "", "draw the graphs into this directory")
	flag.Parse()
	if err := run(os.Stdout, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "dragonet-offload:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, dir string) error {
	m, err := loader.Load(model)
	if err != nil {
		return err
	}
	graph := func(name string) *dataflow.Graph {
		g, _ := m.Graph(name) // the names are the model's; a nil here panics in a test
		return g
	}

	fmt.Fprintf(w, "== The LPG and the PRGs (%s)\n", model)
	for _, g := range m.Graphs {
		fmt.Fprintf(w, "%s %s: %d nodes\n", g.Kind, g.Name, len(g.Nodes))
		if err := draw(w, dir, g.Name, g, dot.Options{}); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "\n== Which packets reach the NIC's software Tx output")
	tx := graph("IPNicTx")
	n := tx.Node("TxSwOut")
	fmt.Fprintln(w, tx.Predicates().Reaching(n).Format(n.Name))

	lpg := graph("IPStack")
	for _, s := range steps {
		fmt.Fprintf(w, "\n== %s\n", s.title)
		em, err := embed.Embed(lpg, graph(s.prg))
		if err != nil {
			return err
		}
		if err := em.WriteReport(w); err != nil {
			return err
		}
		if err := draw(w, dir, lpg.Name+"-in-"+s.prg, em.Graph, dot.EmbeddingOptions(em)); err != nil {
			return err
		}
	}
	return nil
}

// draw writes g into dir as name.svg, or as name.dot without Graphviz; with
// no dir it does nothing.
func draw(w io.Writer, dir, name string, g *dataflow.Graph, opts dot.Options) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var src bytes.Buffer
	if err := dot.Write(&src, g, opts); err != nil {
		return err
	}
	file, data := filepath.Join(dir, name+".svg"), src.Bytes()
	svg, err := dot.SVG(data)
	switch {
	case err == nil:
		data = svg
	case errors.Is(err, dot.ErrNoGraphviz):
		file = filepath.Join(dir, name+".dot")
	default:
		return err
	}
	fmt.Fprintf(w, "  picture: %s\n", file)
	return os.WriteFile(file, data, 0o644)
}
