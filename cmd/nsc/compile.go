package main

import (
	"fmt"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/fileout"
)

// runCompile generates a target's artifacts for an LPG (embedded in a
// PRG) into a directory: every target through backends.Target, every
// refusal of the graph reported at once.
func runCompile(e *env, args []string) error {
	fs := newFlags("compile", e)
	lpg := fs.String("lpg", "", "the LPG")
	prg := fs.String("prg", "", "the PRG to embed it in (none: the LPG alone)")
	target := fs.String("target", "go", "what to generate: go, xdp or p4")
	arch := fs.String("arch", "", "P4 architecture (--target p4): v1model or xsa (default: the PRG's, U280 xsa, BMv2 v1model)")
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
	if *lpg == "" {
		return usagef("--lpg is required")
	}
	defer fileout.AbortOnInterrupt()()
	outSlash := filepath.ToSlash(*out)
	var t backends.Target
	var names []string // the files the target writes, refused if inputs
	switch *target {
	case "go":
		name := *pkg
		if name == "" {
			name = strings.ReplaceAll(filepath.Base(filepath.Clean(*out)), "-", "")
		}
		if !token.IsIdentifier(name) {
			return usagef("package name %q is not a Go identifier: give --package", name)
		}
		names = []string{"fastpath.go"}
		opt := golang.Options{Package: name, Command: golang.Command(files, *lpg, *prg, filepath.ToSlash(*profile), outSlash)}
		if *profile != "" {
			if opt.Profile, err = readProfile(*profile); err != nil {
				return err
			}
		}
		t = golang.Target{Options: opt}
	case "xdp":
		names = []string{strings.ToLower(*lpg) + ".c", strings.ToLower(*lpg) + ".o", filepath.Join("host", "fastpath.go")}
		t = xdp.Target{Options: xdp.Options{Command: compileCommand(files, *lpg, *prg, "--target", "xdp", "-o", outSlash)}, Program: strings.ToLower(*lpg)}
	case "p4":
		if *arch, err = p4Arch(*arch, *prg); err != nil {
			return err
		}
		extra := []string{"--target", "p4", "--arch", *arch}
		if *tables != "" {
			extra = append(extra, "--tables", *tables)
		}
		pt := p4.Target{Options: p4.Options{Arch: *arch, Name: strings.ToLower(*lpg), Command: compileCommand(files, *lpg, *prg, append(extra, "-o", outSlash)...)}, Tables: *tables}
		if *tables != "" {
			if pt.Script, err = os.ReadFile(*tables); err != nil {
				return err
			}
		}
		names = []string{strings.ToLower(*lpg) + ".p4", strings.ToLower(*lpg) + ".entries", filepath.Join("host", "fastpath.go")}
		t = pt
	default:
		return usagef("unknown target %q (have: go, xdp, p4)", *target)
	}
	if t.Needs().PRG && *prg == "" {
		return usagef("--target %s takes its limits from a PRG: give --prg", *target)
	}
	var outputs []string
	for _, n := range names {
		outputs = append(outputs, filepath.Join(*out, n))
	}
	if err := refuseOverwrite(append(files, *profile, *tables), outputs...); err != nil {
		return err
	}
	in, device, err := compileInput(files, *lpg, *prg)
	if err != nil {
		return err
	}
	// A device that cannot run the whole graph (nsc embed says why) gets
	// its part; the host part, in Go, runs the whole graph on the frames
	// the device passes (docs/embedding.md, "Devices and the host").
	host := in
	split := device != nil && *target != "go"
	if split {
		in.Graph = device
	}
	arts, err := t.Generate(in)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, a := range arts {
		file := filepath.Join(*out, a.Name)
		if err := fileout.WriteFile(file, a.Data); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "wrote %s (%s, graph %s, %d nodes)\n", file, t.Name(), in.Graph.Name, len(in.Graph.Nodes))
	}
	if split {
		if err := writeHost(e, host, golang.Command(files, *lpg, *prg, "", outSlash+"/host"), filepath.Join(*out, "host")); err != nil {
			return err
		}
	}
	if *target == "xdp" {
		return clang(e, filepath.Join(*out, arts[0].Name))
	}
	return nil
}

// writeHost writes the host part of a split embedding, a Go package
// host in dir: the frames the device hands over (XDP_PASS, P4's CPU
// port) go through it.
func writeHost(e *env, in backends.Input, command, dir string) error {
	arts, err := golang.Target{Options: golang.Options{Package: "host", Command: command}}.Generate(backends.Input{Graph: in.Graph})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	file := filepath.Join(dir, arts[0].Name)
	if err := fileout.WriteFile(file, arts[0].Data); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s (go, the host part: runs graph %s, %d nodes, on every frame the device hands the host at %s)\n", file, in.Graph.Name, len(in.Graph.Nodes), embed.PuntNode)
	return nil
}

// clang compiles an XDP program's C into its .o beside it, when clang is
// installed.
func clang(e *env, src string) error {
	if _, err := exec.LookPath("clang"); err != nil {
		fmt.Fprintf(e.stdout, "clang is not on PATH: compile it with clang -O2 -g -target bpf -c %s\n", src)
		return nil
	}
	obj := strings.TrimSuffix(src, ".c") + ".o"
	o, err := fileout.Create(obj) // all or nothing: clang writes the temporary file
	if err != nil {
		return err
	}
	defer o.Abort()
	if err := xdp.Clang(src, o.TempName()); err != nil {
		return err
	}
	if err := o.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s: run it with nsc xdp run --obj %s --tables FILE --in in.pcap --out out.pcap\n", obj, obj)
	return nil
}

// compileCommand is the command line that generates a program, for its header.
func compileCommand(files []string, lpg, prg string, extra ...string) string {
	cmd := append([]string{"nsc compile"}, files...)
	cmd = append(cmd, "--lpg", lpg)
	if prg != "" {
		cmd = append(cmd, "--prg", prg)
	}
	return strings.Join(append(cmd, extra...), " ")
}

func readProfile(file string) (golang.Profile, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return golang.ReadProfile(file, f)
}

// compileInput loads the model and returns what to compile: the LPG
// embedded in the PRG, or the LPG alone.
// When the PRG is a device that runs only part of it, device is that part
// (embed.Embedding.Device).
func compileInput(files []string, lpg, prg string) (in backends.Input, device *dataflow.Graph, err error) {
	if prg != "" {
		em, err := embedding(files, lpg, prg)
		if err != nil {
			return backends.Input{}, nil, err
		}
		return backends.Input{Graph: em.Graph, PRG: em.PRG}, em.Device, nil
	}
	m, err := loadModel(files)
	if err != nil {
		return backends.Input{}, nil, err
	}
	g, err := graphKind(m, lpg, dataflow.LPG)
	return backends.Input{Graph: g}, nil, err
}
