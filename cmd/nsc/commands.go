package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
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
	out := fs.String("o", "", "output file: .dot, or .svg (needs Graphviz); default stdout")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := refuseOverwrite(files, *out); err != nil {
		return err
	}
	defer fileout.AbortOnInterrupt()()
	if *embedded {
		em, err := embedding(files, *lpg, *prg)
		if err != nil {
			return err
		}
		return writeDot(e, em.Graph, *out, dot.EmbeddingOptions(em))
	}
	_, g, err := graphOf(files, *graph)
	if err != nil {
		return err
	}
	return writeDot(e, g, *out, dot.Options{})
}

// writeDot writes g as DOT, or as SVG when out ends in .svg.
func writeDot(e *env, g *dataflow.Graph, out string, opts dot.Options) error {
	var buf bytes.Buffer
	if err := dot.Write(&buf, g, opts); err != nil {
		return err
	}
	data := buf.Bytes()
	if strings.EqualFold(filepath.Ext(out), ".svg") {
		svg, err := dot.SVG(data)
		if err != nil {
			return fmt.Errorf("%s: %w (install Graphviz, or write .dot)", out, err)
		}
		data = svg
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
