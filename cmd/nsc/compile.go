package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/fileout"
)

// runCompile generates a target's artifacts for an LPG (embedded in a
// PRG) into a directory: every target through backends.Target, found in
// the registry with its own flags, every refusal of the graph reported at
// once.
func runCompile(e *env, args []string) error {
	fs := newFlags("compile", e)
	lpg := fs.String("lpg", "", "the LPG")
	prg := fs.String("prg", "", "the PRG to embed it in (none: the LPG alone)")
	regs := backends.Registered()
	have, _ := targets()
	target := fs.String("target", "go", "what to generate: "+strings.Join(have, ", "))
	out := fs.String("o", "", "output directory")
	jobs := map[string]func(backends.Request) (backends.Job, error){}
	common := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { common[f.Name] = true })
	owner := map[string]string{} // a target's flag -> the target
	for _, r := range regs {
		jobs[r.Name] = r.Flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if !common[f.Name] && owner[f.Name] == "" {
				owner[f.Name] = r.Name
				f.Usage += " (--target " + r.Name + ")"
			}
		})
	}
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef("-o DIR is required")
	}
	fs.Visit(func(f *flag.Flag) {
		if t := owner[f.Name]; t != "" && t != *target && err == nil {
			err = usagef("--%s is for --target %s", f.Name, t)
		}
	})
	if err != nil {
		return err
	}
	if *lpg == "" {
		return usagef("--lpg is required")
	}
	i := slices.IndexFunc(regs, func(r backends.Registration) bool { return r.Name == *target })
	if i < 0 {
		return usagef("unknown target %q (have: %s)", *target, strings.Join(have, ", "))
	}
	reg := regs[i]
	defer fileout.AbortOnInterrupt()()
	outSlash := filepath.ToSlash(*out)
	job, err := jobs[reg.Name](backends.Request{Files: files, LPG: *lpg, PRG: *prg, Out: outSlash})
	var ue backends.UsageError
	if errors.As(err, &ue) {
		return usagef("%s", ue)
	}
	if err != nil {
		return err
	}
	t := job.Target
	if t.Needs().PRG && *prg == "" {
		return usagef("--target %s takes its limits from a PRG: give --prg", *target)
	}
	names := job.Outputs
	if reg.Device {
		names = append(names, filepath.Join("host", "fastpath.go"))
	}
	var outputs []string
	for _, n := range names {
		outputs = append(outputs, filepath.Join(*out, n))
	}
	if err := refuseOverwrite(append(files, job.Inputs...), outputs...); err != nil {
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
	split := device != nil && reg.Device
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
		if err := writeHost(e, host, golang.Command(files, *lpg, *prg, "", "", outSlash+"/host"), filepath.Join(*out, "host")); err != nil {
			return err
		}
	}
	if reg.Post != nil {
		return reg.Post(*out, arts, e.stdout)
	}
	return nil
}

// targets are the registered targets' names and what each generates,
// for help.
func targets() (names, generates []string) {
	for _, r := range backends.Registered() {
		names = append(names, r.Name)
		generates = append(generates, r.Generates)
	}
	return names, generates
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
