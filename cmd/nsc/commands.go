package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/backends/dot"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/fileout"
)

func runCheck(e *env, args []string) error {
	fs := newFlags("check", e)
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usagef("no model file given")
	}
	files, err = expand(files)
	if err != nil {
		return err
	}
	// Each file is a model of its own: it must stand with its includes.
	var failed []error
	for _, f := range files {
		m, err := loader.Load(f)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		var parts []string
		for _, g := range m.Graphs {
			parts = append(parts, fmt.Sprintf("%s %s (%s)", g.Kind, g.Name, plural(len(g.Nodes), "node")))
		}
		if len(parts) == 0 {
			parts = append(parts, fmt.Sprintf("%s, no graphs", plural(len(m.Schema.Headers), "header")))
		}
		fmt.Fprintf(e.stdout, "ok  %s: %s\n", f, strings.Join(parts, ", "))
	}
	return errors.Join(failed...)
}

func runDot(e *env, args []string) error {
	fs := newFlags("dot", e)
	graph := fs.String("graph", "", "graph to draw")
	embedded := fs.Bool("embedded", false, "draw the LPG embedded into the PRG")
	lpg := fs.String("lpg", "", "with --embedded: the LPG")
	prg := fs.String("prg", "", "with --embedded: the PRG")
	hidePruned := fs.Bool("hide-pruned", false, "with --embedded: leave out the pruned LPG nodes (drawn faintly, with why, by default)")
	focus := fs.String("focus", "", "draw only this node and its neighbours (see --depth): a readable part of a large graph")
	depth := fs.Int("depth", 2, "with --focus: how many edges away a node may be")
	out := fs.String("o", "", "output file: .dot or .gv (DOT), .svg, .png or .pdf (rendered by Graphviz); default DOT on stdout")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := refuseOverwrite(files, *out); err != nil {
		return err
	}
	format, err := pictureFormat(*out)
	if err != nil {
		return err
	}
	defer fileout.AbortOnInterrupt()()
	var g *dataflow.Graph
	var opts dot.Options
	if *embedded {
		em, err := embedding(files, *lpg, *prg)
		if err != nil {
			return err
		}
		g, opts = em.Graph, dot.EmbeddingOptions(em)
		if *hidePruned {
			opts.Ghosts = nil
		}
	} else if _, g, err = graphOf(files, *graph); err != nil {
		return err
	}
	if *focus != "" {
		if opts.Only, err = dot.Neighbourhood(g, *focus, *depth); err != nil {
			return err
		}
		opts.Ghosts = nil
	}
	return writeDot(e, g, *out, format, opts)
}

// pictureFormat is the Graphviz format an output file's extension asks
// for: "" for DOT text.
func pictureFormat(out string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(out), "."))
	switch {
	case out == "" || ext == "dot" || ext == "gv":
		return "", nil
	case slices.Contains(dot.Formats, ext):
		return ext, nil
	}
	return "", usagef("-o %s: unknown picture format %q (want .dot, .gv, .svg, .png or .pdf)", out, ext)
}

// writeDot writes g as DOT, or rendered in format (svg, png, pdf).
func writeDot(e *env, g *dataflow.Graph, out, format string, opts dot.Options) error {
	var buf bytes.Buffer
	if err := dot.Write(&buf, g, opts); err != nil {
		return err
	}
	data := buf.Bytes()
	if format != "" {
		pic, err := dot.Render(data, format)
		if err != nil {
			return fmt.Errorf("%s: %w (install Graphviz, or write .dot)", out, err)
		}
		data = pic
	}
	if out == "" {
		_, err := e.stdout.Write(data)
		return err
	}
	return fileout.WriteFile(out, data)
}

func runPred(e *env, args []string) error {
	fs := newFlags("pred", e)
	graph := fs.String("graph", "", "graph")
	node := fs.String("node", "", "node whose incoming predicate to print")
	port := fs.String("port", "", "print the predicate of this port of the node instead")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *node == "" {
		return usagef("--node is required")
	}
	_, g, err := graphOf(files, *graph)
	if err != nil {
		return err
	}
	n := g.Node(*node)
	if n == nil {
		return fmt.Errorf("graph %s has no node %s", g.Name, *node)
	}
	ps := g.Predicates()
	if *port == "" {
		fmt.Fprintln(e.stdout, ps.Reaching(n).Format(n.Name))
		return nil
	}
	p := n.Port(*port)
	if p == nil {
		return fmt.Errorf("node %s has no port %s", n.Name, *port)
	}
	fmt.Fprintln(e.stdout, ps.Port(p).Format(n.Name+"."+p.Name))
	return nil
}
