package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/fuzz"
)

// runFuzz generates random models and holds every target to the
// interpreter on them (package fuzz, docs/testing.md).
func runFuzz(e *env, args []string) error {
	fs := newFlags("fuzz", e)
	models := fs.Int("models", 100, "how many models to generate")
	seed := fs.Uint64("seed", 0, "the run's seed (0: from the clock, printed)")
	start := fs.Int("start", 0, "the first model's index (--start I --models 1 reruns model I)")
	packets := fs.Int("packets", 200, "frames per model made from its predicates, besides the fixed corpus")
	targets := fs.String("targets", "go,xdp,p4", "targets held to the interpreter: go, xdp, p4 (xdp needs root and clang; p4 runs v1model programs in the P4 interpreter); p4c compiles those programs with p4c-bm2-ss too (on PATH, or built by p4-oracle.sh in /tmp/p4build)")
	out := fs.String("o", "", "write each failing model (.nsc and .tables) into this directory")
	batch := fs.Int("batch", 50, "models per build of the generated Go")
	shrink := fs.Duration("shrink", time.Minute, "how long to shrink each failing model (with -o)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return usagef("nsc fuzz takes no files, got %s", strings.Join(files, " "))
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	ts := []string{} // none: the embeddings alone
	var p4c *p4.P4c
	for _, t := range strings.Split(*targets, ",") {
		switch t = strings.TrimSpace(t); t {
		case "go", "xdp", "p4":
			ts = append(ts, t)
		case "p4c":
			if p4c, err = p4.FindP4c(); err != nil {
				return usagef("--targets p4c: %v", err)
			}
		case "", "none":
		default:
			return usagef("unknown target %q (go, xdp, p4, p4c, none)", t)
		}
	}
	if p4c != nil && !slices.Contains(ts, "p4") {
		ts = append(ts, "p4") // p4c compiles what p4 runs
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stderr, "nsc fuzz: seed %d, models %d from %d, targets %s\n", *seed, *models, *start, strings.Join(ts, ","))
	rep, err := fuzz.Run(fuzz.Options{Models: *models, Seed: *seed, Start: *start, Packets: *packets, Targets: ts, P4c: p4c, Dir: *out, Batch: *batch, Shrink: *shrink,
		Log: func(format string, args ...any) { fmt.Fprintf(e.stderr, "nsc fuzz: "+format+"\n", args...) }})
	if err != nil {
		return err
	}
	for _, s := range rep.Skips {
		fmt.Fprintf(e.stderr, "nsc fuzz: not run: %s\n", s)
	}
	for i, d := range rep.Diffs {
		if i == 20 {
			fmt.Fprintf(e.stdout, "... and %d more\n", len(rep.Diffs)-20)
			break
		}
		fmt.Fprintln(e.stdout, d)
	}
	if len(rep.Failed) > 0 {
		fmt.Fprintf(e.stdout, "differing models: %s (rerun one: nsc fuzz --seed %d --start I --models 1 -o DIR)\n", strings.Join(rep.Failed, " "), *seed)
	}
	fmt.Fprintf(e.stdout, "seed %d: %s\n", *seed, rep.Summary())
	if len(rep.Diffs) > 0 {
		return fmt.Errorf("nsc fuzz: seed %d: %d differences in %d models", *seed, len(rep.Diffs), len(rep.Failed))
	}
	return nil
}
