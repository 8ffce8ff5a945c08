// Package fuzz attacks the compiler with models nobody wrote: it
// generates random well-formed models (Generate: user headers of random
// layout on the shipped Internet library, metadata, tables of every match
// kind with random entries, and an LPG of random operations wired forward
// to drops, queues and the Tx exit), and runs each on the same frames
// through the interpreter on the LPG alone, through every embedding of it
// (verify: the LPG alone against the embedded graph, from the wire), and
// through the generated Go, XDP and P4 programs against the interpreter
// on the graph they were generated from (Run). Every difference is a
// Diff; a model the targets refuse is counted, not failed.
//
// It is deterministic: a seed and a model index give one model, and its
// frames come from the same seed.
package fuzz

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dragonet-go/nsc/backends/p4"
)

// Options say what to run.
type Options struct {
	Models  int    // how many models (default 100)
	Seed    uint64 // the run's seed
	Start   int    // the first model's index (to rerun one: Start i, Models 1)
	Packets int    // frames per model made from its predicates (default 200), besides Corpus
	// Targets to compare with the interpreter: "go", "xdp", "p4" (nil:
	// all three; empty: the embeddings alone; xdp needs root and clang,
	// and is skipped with a note without them).
	Targets []string
	// P4c, with the p4 target, is p4c's BMv2 back end (p4c-bm2-ss):
	// every program the P4 interpreter runs is compiled by it too (nil:
	// not).
	P4c *p4.P4c
	// Dir keeps the generated sources of failing models (and scratch
	// space); a temporary directory when empty.
	Dir string
	// Batch is how many models one go build takes (default 50).
	Batch int
	// Shrink is how long to spend shrinking each failing model (default
	// a minute).
	Shrink time.Duration
	// Log, if set, gets progress lines.
	Log func(format string, args ...any)
}

// Report sums up a run.
type Report struct {
	Models, Packets int
	Diffs           []Diff
	// Refused counts, per target ("embed HOST", "go", "xdp", "p4"), the
	// models it refused (a reason a user can act on); Reasons counts
	// them by target and reason, the model's names left out ("p4: push
	// X: a header with a variable-length field cannot be made in P4").
	Refused map[string]int
	Reasons map[string]int
	// Ran counts, per target, the models it compiled and ran.
	Ran map[string]int
	// Ops counts the operation kinds the models used, Features the
	// models that use each declaration or expression the generator
	// writes only sometimes ("len()", "register", …), PRGs the
	// embeddings made.
	Ops      map[string]int
	Features map[string]int
	PRGs     map[string]int
	Skips    []string // targets not run, and why
	Failed   []string // the models that differ (names)
}

// Summary is the one line `nsc fuzz` prints.
func (r *Report) Summary() string {
	return fmt.Sprintf("%d models, %d packets, %d differences", r.Models, r.Packets, len(r.Diffs))
}

// Run generates and checks the models.
func Run(opt Options) (*Report, error) {
	if opt.Models == 0 {
		opt.Models = 100
	}
	if opt.Packets == 0 {
		opt.Packets = 200
	}
	if opt.Batch == 0 {
		opt.Batch = 50
	}
	if opt.Shrink == 0 {
		opt.Shrink = time.Minute
	}
	if opt.Targets == nil {
		opt.Targets = []string{"go", "xdp", "p4"}
	}
	logf := opt.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir := opt.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "nsc-fuzz-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	rep := &Report{Refused: map[string]int{}, Reasons: map[string]int{}, Ran: map[string]int{}, Ops: map[string]int{}, Features: map[string]int{}, PRGs: map[string]int{}}
	xdpOn := slices.Contains(opt.Targets, "xdp")
	if xdpOn {
		if why := xdpUnavailable(); why != "" {
			rep.Skips = append(rep.Skips, "xdp: "+why)
			xdpOn = false
		}
	}
	failed := map[string]Model{}
	runFrames := map[string][][]byte{} // of the failing models, for the shrinker
	start := time.Now()
	for b := 0; b < opt.Models; b += opt.Batch {
		var goCases []GoCase
		var xdpCases []XDPCase
		var p4Cases []P4Case
		models := map[string]Model{}
		frames := map[string][][]byte{}
		for _, r := range prepareAll(opt, b) {
			m, p := r.model, r.prepared
			models[m.Name] = m
			countOps(m, rep.Ops, rep.Features)
			if r.err != nil {
				// A generated model that does not load is the generator's
				// bug or the loader's: a difference either way.
				rep.Diffs = append(rep.Diffs, Diff{Model: m.Name, Check: "load", Want: "loads", Got: r.err.Error()})
				failed[m.Name] = m
				continue
			}
			if r.checkErr != nil {
				return nil, r.checkErr
			}
			rep.Models++
			rep.Packets += len(p.Frames)
			frames[m.Name] = p.Frames
			for prg := range p.Refused {
				rep.Refused["embed "+prg]++
			}
			for prg := range p.Embeddings {
				rep.PRGs[prg]++
			}
			rep.Diffs = append(rep.Diffs, r.diffs...)
			if em := p.Embeddings["Host"]; em != nil && slices.Contains(opt.Targets, "go") {
				goCases = append(goCases, GoCase{Name: m.Name, Graph: em.Graph, Tables: m.Tables, Frames: p.Frames})
			}
			if em := p.Embeddings["XDP"]; em != nil && xdpOn {
				xdpCases = append(xdpCases, XDPCase{Name: m.Name, Graph: em.Graph, Limits: em.PRG.Limits, Tables: m.Tables, Frames: p.Frames})
			}
			if slices.Contains(opt.Targets, "p4") {
				if r.p4Why != "" {
					rep.refuse("p4", map[string]string{m.Name: r.p4Why})
				} else {
					p4Cases = append(p4Cases, r.p4)
				}
			}
		}
		if len(goCases) > 0 {
			ds, refused, err := RunGo(filepath.Join(dir, fmt.Sprintf("go%d", b)), goCases)
			if err != nil {
				return nil, err
			}
			rep.Diffs = append(rep.Diffs, ds...)
			rep.refuse("go", refused)
			rep.Ran["go"] += len(goCases) - len(refused)
		}
		if len(xdpCases) > 0 {
			sub := filepath.Join(dir, fmt.Sprintf("xdp%d", b))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return nil, err
			}
			ds, refused, err := RunXDP(sub, xdpCases)
			if err != nil {
				return nil, err
			}
			rep.Diffs = append(rep.Diffs, ds...)
			rep.refuse("xdp", refused)
			rep.Ran["xdp"] += len(xdpCases) - len(refused)
		}
		if len(p4Cases) > 0 {
			ds, refused, err := RunP4(p4Cases, opt.P4c)
			if err != nil {
				return nil, err
			}
			rep.Diffs = append(rep.Diffs, ds...)
			rep.refuse("p4", refused)
			rep.Ran["p4"] += len(p4Cases) - len(refused)
		}
		for _, d := range rep.Diffs {
			if _, ok := failed[d.Model]; !ok {
				failed[d.Model], runFrames[d.Model] = models[d.Model], frames[d.Model]
			}
		}
		logf("%d of %d models, %d packets, %d differences, %s", rep.Models, opt.Models, rep.Packets, len(rep.Diffs), time.Since(start).Round(time.Second))
	}
	for name, m := range failed {
		rep.Failed = append(rep.Failed, name)
		if opt.Dir == "" {
			continue
		}
		if err := save(opt.Dir, m); err != nil {
			return nil, err
		}
		// The first difference, shrunk, as a regression case.
		for _, d := range rep.Diffs {
			if d.Model != name || d.Frame == nil && !builds(d.Check) {
				continue
			}
			small, frames, err := Shrink(m, d, runFrames[name], filepath.Join(dir, "shrink-"+name), opt.Shrink)
			if err != nil {
				logf("%s: not shrunk: %v", name, err)
				break
			}
			if err := SaveRegression(filepath.Join(opt.Dir, "regress"), small, frames); err != nil {
				return nil, err
			}
			logf("%s: shrunk to %s", name, filepath.Join(opt.Dir, "regress", name+".nsc"))
			break
		}
	}
	slices.Sort(rep.Failed)
	logf("operations: %s", tally(rep.Ops))
	logf("features (models): %s", tally(rep.Features))
	logf("embeddings: %s", tally(rep.PRGs))
	for _, t := range slices.Sorted(maps.Keys(rep.Ran)) {
		logf("%s: %d models compiled and run, %d refused", t, rep.Ran[t], rep.Refused[t])
	}
	for _, r := range slices.Sorted(maps.Keys(rep.Reasons)) {
		logf("refused: %d × %s", rep.Reasons[r], r)
	}
	return rep, nil
}

// prepared is one model of a batch, generated, prepared and checked
// against its embeddings (prepareAll).
type prepared struct {
	model    Model
	prepared *Prepared
	err      error // the model does not load
	checkErr error // the embeddings could not be checked
	diffs    []Diff
	p4       P4Case
	p4Why    string
}

// prepareAll generates, prepares and checks the embeddings of the batch
// of models that begins at b, on as many cores as Go runs on: the models
// are independent, and the results come back in the models' order, so a
// run is the same whatever the number of cores.
func prepareAll(opt Options, b int) []prepared {
	first, n := opt.Start+b, min(opt.Batch, opt.Models-b)
	out := make([]prepared, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for k := range next {
				out[k] = prepareOne(opt, first+k)
			}
		})
	}
	for k := range n {
		next <- k
	}
	close(next)
	wg.Wait()
	return out
}

func prepareOne(opt Options, i int) prepared {
	r := prepared{model: Generate(opt.Seed, i)}
	r.prepared, r.err = Prepare(r.model, opt.Packets, opt.Seed^uint64(i))
	if r.err != nil {
		return r
	}
	r.diffs, r.checkErr = r.prepared.CheckEmbeddings()
	if slices.Contains(opt.Targets, "p4") {
		r.p4, r.p4Why = P4CaseOf(r.model, r.prepared.Frames)
	}
	return r
}

// builds says a check is of a whole program (it compiles, it loads): it
// fails without a frame, and shrinks so.
func builds(check string) bool {
	return check == "go build" || check == "xdp clang" || check == "xdp load" || check == "p4 parse" || check == "p4c"
}

// refuse counts the models target refused, by reason.
func (r *Report) refuse(target string, refused map[string]string) {
	r.Refused[target] += len(refused)
	for _, why := range refused {
		r.Reasons[target+": "+refusalClass(why)]++
	}
}

// save writes a failing model and its tables where a test or a user can
// load them (nsc check, nsc sim --tables): NAME.nsc and NAME.tables.
func save(dir string, m Model) error {
	if err := os.WriteFile(filepath.Join(dir, m.Name+".nsc"), []byte(m.Source), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, m.Name+".tables"), []byte(m.Tables), 0o644)
}

// tally is counts as "key n, …", in key order.
func tally(counts map[string]int) string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		s = append(s, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(s, ", ")
}

// features are what countOps looks for in a model's source, beyond its
// operations.
var features = map[string]string{
	"register": "\nregister ", "state": "\nstate ", "bytes()": ": bytes(", "len()": "len(", "popcount()": "popcount(",
	"push extra": " extra ", "user header": "\nheader u0 ", "table": "\ntable ", "liar": "\nprg Liar ",
}

// countOps adds the operation kinds a model's LPG uses, and the features
// it has.
func countOps(m Model, ops, feats map[string]int) {
	for name, s := range features {
		if strings.Contains(m.Source, s) {
			feats[name]++
		}
	}
	for _, line := range strings.Split(m.Source, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "op "); ok {
			kind, _, _ := strings.Cut(rest, " ")
			if kind == "checksum" || kind == "input" || kind == "steer" {
				f := strings.Fields(rest)
				if len(f) > 1 && (kind != "input" || f[1] == "parse") {
					kind += " " + f[1]
				}
			}
			ops[kind]++
		}
	}
}
