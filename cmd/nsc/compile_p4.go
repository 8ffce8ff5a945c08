package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/internal/fileout"
	"github.com/dragonet-go/nsc/packet"
)

// compileP4 writes the P4 program for the LPG embedded in the PRG, as
// DIR/NAME.p4 (NAME: the LPG's name in lower case), and with --tables the
// script's entries in the program's names as DIR/NAME.entries.
func compileP4(e *env, files []string, lpg, prg, arch, tables, out string) error {
	name := strings.ToLower(lpg)
	file := filepath.Join(out, name+".p4")
	entriesFile := filepath.Join(out, name+".entries")
	if err := refuseOverwrite(append(files, tables), file, entriesFile); err != nil {
		return err
	}
	g, err := compileGraph(files, lpg, prg)
	if err != nil {
		return err
	}
	opt := p4.Options{Arch: arch, Name: name, PRG: prg, Command: p4Command(files, lpg, prg, arch, tables, filepath.ToSlash(out))}
	if prg != "" {
		m, err := loadModel(files)
		if err != nil {
			return err
		}
		if p, ok := m.Graph(prg); ok {
			opt.Limits = p.Limits
		}
	}
	prog, err := p4.Generate(g, opt)
	if err != nil {
		return err
	}
	var entries []byte
	if tables != "" {
		data, err := os.ReadFile(tables)
		if err != nil {
			return err
		}
		es, err := packet.ParseEntries(tables, bytes.NewReader(data), g.Schema.TableSpec)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := prog.Entries(&buf, es); err != nil {
			return err
		}
		entries = buf.Bytes()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := fileout.WriteFile(file, prog.Source); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s (%s, graph %s, %d tables)\n", file, arch, g.Name, len(prog.Tables))
	if entries != nil {
		if err := fileout.WriteFile(entriesFile, entries); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "wrote %s (%d entries)\n", entriesFile, bytes.Count(entries, []byte("\n")))
	}
	return nil
}

// p4Command is the command line that generates a program, for its header.
func p4Command(files []string, lpg, prg, arch, tables, out string) string {
	cmd := append([]string{"nsc compile"}, files...)
	cmd = append(cmd, "--lpg", lpg)
	if prg != "" {
		cmd = append(cmd, "--prg", prg)
	}
	cmd = append(cmd, "--target", "p4", "--arch", arch)
	if tables != "" {
		cmd = append(cmd, "--tables", tables)
	}
	return strings.Join(append(cmd, "-o", out), " ")
}
