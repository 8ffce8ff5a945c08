package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/fileout"
)

func runCompile(e *env, args []string) error {
	fs := newFlags("compile", e)
	lpg := fs.String("lpg", "", "the LPG")
	prg := fs.String("prg", "", "the PRG to embed it in (none: the LPG alone)")
	target := fs.String("target", "go", "what to generate: go, xdp or p4")
	arch := fs.String("arch", "v1model", "P4 architecture (--target p4): v1model or xsa")
	tables := fs.String("tables", "", "table_add script to convert to the P4 program's names (--target p4)")
	out := fs.String("o", "", "output directory")
	pkg := fs.String("package", "", "Go package name (default: the output directory's name)")
	profile := fs.String("profile", "", "node runs (nsc run --profile) whose most common path is laid out first (--target go)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef("-o DIR is required")
	}
	if *tables != "" && *target != "p4" {
		return usagef("--tables is for --target p4 (the table_add script to convert)")
	}
	if *profile != "" && *target != "go" {
		return usagef("--profile is for --target go")
	}
	defer fileout.AbortOnInterrupt()()
	switch *target {
	case "go":
	case "xdp":
		return compileXDP(e, files, *lpg, *prg, *out)
	case "p4":
		return compileP4(e, files, *lpg, *prg, *arch, *tables, *out)
	default:
		return usagef("unknown target %q (have: go, xdp, p4)", *target)
	}
	file := filepath.Join(*out, "fastpath.go")
	if err := refuseOverwrite(append(files, *profile), file); err != nil {
		return err
	}
	g, err := compileGraph(files, *lpg, *prg)
	if err != nil {
		return err
	}
	name := *pkg
	if name == "" {
		name = strings.ReplaceAll(filepath.Base(filepath.Clean(*out)), "-", "")
	}
	opt := golang.Options{Package: name, Command: golang.Command(files, *lpg, *prg, filepath.ToSlash(*profile), filepath.ToSlash(*out))}
	if *profile != "" {
		f, err := os.Open(*profile)
		if err != nil {
			return err
		}
		opt.Profile, err = golang.ReadProfile(*profile, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	src, err := golang.Generate(g, opt)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := fileout.WriteFile(file, src); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s (package %s, graph %s, %d nodes)\n", file, name, g.Name, len(g.Nodes))
	return nil
}

// compileGraph loads the model and returns the graph to compile: the LPG
// embedded in the PRG, or the LPG alone.
func compileGraph(files []string, lpg, prg string) (*dataflow.Graph, error) {
	if lpg == "" {
		return nil, usagef("--lpg is required")
	}
	if prg != "" {
		em, err := embedding(files, lpg, prg)
		if err != nil {
			return nil, err
		}
		return em.Graph, nil
	}
	m, err := loadModel(files)
	if err != nil {
		return nil, err
	}
	return graphKind(m, lpg, dataflow.LPG)
}
