package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/fileout"
)

// compileXDP writes the XDP program for the LPG embedded in the PRG:
// DIR/PROGRAM.c and, when clang is on PATH, DIR/PROGRAM.o. PROGRAM is the
// LPG's name in lower case.
func compileXDP(e *env, files []string, lpg, prg, out string) error {
	name := strings.ToLower(lpg)
	src := filepath.Join(out, name+".c")
	obj := filepath.Join(out, name+".o")
	if err := refuseOverwrite(files, src, obj); err != nil {
		return err
	}
	var g *dataflow.Graph
	var limits map[string]int
	if prg != "" {
		em, err := embedding(files, lpg, prg)
		if err != nil {
			return err
		}
		g, limits = em.Graph, em.PRG.Limits
	} else {
		var err error
		if g, err = compileGraph(files, lpg, ""); err != nil {
			return err
		}
	}
	cmd := append([]string{"nsc compile"}, files...)
	cmd = append(cmd, "--lpg", lpg)
	if prg != "" {
		cmd = append(cmd, "--prg", prg)
	}
	cmd = append(cmd, "--target", "xdp", "-o", filepath.ToSlash(out))
	p, err := xdp.Generate(g, xdp.Options{Command: strings.Join(cmd, " "), Limits: limits})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := fileout.WriteFile(src, p.C); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s (graph %s, %d nodes, %d tables in maps)\n", src, g.Name, len(g.Nodes), usedTables(p.Meta))
	if _, err := exec.LookPath("clang"); err != nil {
		fmt.Fprintf(e.stdout, "clang is not on PATH: compile it with clang -O2 -g -target bpf -c %s\n", src)
		return nil
	}
	if err := clangObject(src, obj); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s: run it with nsc xdp run --obj %s --tables FILE --in in.pcap --out out.pcap\n", obj, obj)
	return nil
}

// clangObject compiles src into obj, all or nothing: clang writes the
// temporary file.
func clangObject(src, obj string) error {
	o, err := fileout.Create(obj)
	if err != nil {
		return err
	}
	defer o.Abort()
	if err := xdp.Clang(src, o.TempName()); err != nil {
		return err
	}
	return o.Commit()
}

func usedTables(m *xdp.Meta) int {
	n := 0
	for _, t := range m.Tables {
		if t.Used {
			n++
		}
	}
	return n
}
