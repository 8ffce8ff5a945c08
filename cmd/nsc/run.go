package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/golang/gorun"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/fileout"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

func runRun(e *env, args []string) error {
	fs := newFlags("run", e)
	lb := fs.String("lb", "", "an EJFAT LB's checked-in fast path instead of a model: "+fmt.Sprint(ejfat.Versions))
	lpg := fs.String("lpg", "", "the LPG of the model FILE… to run")
	prg := fs.String("prg", "", "with --lpg: the PRG to embed it in (none: the LPG alone)")
	tables := fs.String("tables", "", "table entries (table_add lines)")
	in := fs.String("in", "", "input pcap (or pcapng)")
	out := fs.String("out", "", "output: a directory with one pcap per sink (a model), or a pcap of every frame sent (--lb)")
	interp := fs.Bool("interp", false, "with --lb: run the reference interpreter instead of the generated fast path")
	profile := fs.String("profile", "", "write the frames each node ran on here (for nsc compile --profile)")
	asJSON := fs.Bool("json", false, "print the counters as JSON (docs/json.md)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return usagef("--in and --out are required")
	}
	if *lb == "" {
		if *interp {
			return usagef("--interp is for --lb; nsc sim runs a model in the interpreter")
		}
		return runModel(e, files, *lpg, *prg, *tables, *in, *out, *profile, *asJSON)
	}
	if len(files) > 0 || *lpg != "" || *prg != "" {
		return usagef("--lb runs a shipped LB: no model files, --lpg or --prg")
	}
	if err := refuseOverwrite([]string{*in, *tables}, *out, *profile); err != nil {
		return err
	}
	defer fileout.AbortOnInterrupt()()
	frames, err := pcapio.ReadFile(*in)
	if err != nil {
		return err
	}
	load := loadFast
	if *interp {
		load = loadInterp
	}
	runLB, err := load(*lb, *tables)
	if err != nil {
		return err
	}
	w, err := pcapio.Create(*out)
	if err != nil {
		return err
	}
	defer w.Abort()
	paths := map[string]string{}
	counters := runLB(frames, func(i int, sink string, data []byte) {
		paths[sink] = *out
		w.WritePacket(frames[i].CI, data)
	})
	if *profile != "" {
		if err := writeProfile(*profile, counters.Nodes); err != nil {
			return err
		}
	}
	if err := w.Commit(); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, countersOf(len(frames), counters, paths))
	}
	printCounters(e, len(frames), counters, paths)
	return nil
}

// runModel runs a capture through the generated Go fast path of a
// model's LPG (embedded in a PRG when given), built and cached by
// gorun, and writes what nsc sim writes: a pcap per sink in dir, the
// counters.
func runModel(e *env, files []string, lpgName, prgName, tables, in, dir, profile string, asJSON bool) error {
	if lpgName == "" {
		return usagef("--lpg is required (or --lb for a shipped EJFAT LB)")
	}
	m, err := loadModel(files)
	if err != nil {
		return err
	}
	g, err := graphKind(m, lpgName, dataflow.LPG)
	if err != nil {
		return err
	}
	if prgName != "" {
		p, err := graphKind(m, prgName, dataflow.PRG)
		if err != nil {
			return err
		}
		em, err := embed.Embed(g, p)
		if err != nil {
			return err
		}
		g = em.Graph
	}
	inputs := append([]string{in, tables}, files...)
	if err := refuseOverwrite(inputs, sinkPaths(g, dir, profile)...); err != nil {
		return err
	}
	defer fileout.AbortOnInterrupt()()
	script := ""
	if tables != "" {
		// Read and checked here, so a bad line is reported as nsc sim
		// reports it, before anything is built.
		b, err := os.ReadFile(tables)
		if err != nil {
			return err
		}
		if _, err := table.Load(g.Schema, tables, bytes.NewReader(b)); err != nil {
			return err
		}
		script = string(b)
	}
	frames, err := pcapio.ReadFile(in)
	if err != nil {
		return err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return fmt.Errorf("no cache directory for the built fast path: %w", err)
	}
	prog, err := gorun.Build(g, filepath.Join(cache, "nsc", "run"), prefixed{e.stderr, "nsc run: "})
	if errors.Is(err, backends.ErrUnsupported) {
		return fmt.Errorf("%w\nhint: nsc sim runs any graph in the interpreter", err)
	}
	if err != nil {
		return err
	}
	toRun := make([]gorun.Frame, len(frames))
	for i, f := range frames {
		toRun[i] = gorun.Frame{Time: f.CI.Timestamp, Data: f.Data}
	}
	res, err := prog.Run(toRun, tables, script)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sinks := newSinkWriters(dir)
	defer sinks.abort()
	for i, o := range res.Outputs {
		if o.Sink != "" {
			sinks.write(o.Sink, frames[i].CI, o.Data)
		}
	}
	return report(e, m, frames, tables, ran{res.Counters, res.InProgress, sinks}, profile, asJSON)
}

// prefixed writes each line written to it to w behind a prefix (one
// Write a line).
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

// lbRunner runs frames through a loaded LB, handing write what it sends.
type lbRunner func(frames []pcapio.Frame, write func(i int, sink string, data []byte)) sim.Counters

// openTables opens a table script, or returns a nil reader for none.
func openTables(file string, use func(*os.File) error) error {
	if file == "" {
		return use(nil)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	return use(f)
}

// loadFast loads an LB's generated fast path with its tables.
func loadFast(lb, tables string) (lbRunner, error) {
	var ts []*table.Table
	err := openTables(tables, func(f *os.File) (err error) {
		if f == nil {
			ts, err = lbfast.Tables(lb, "", nil)
		} else {
			ts, err = lbfast.Tables(lb, tables, f)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	pl, err := lbfast.New(lb, ts)
	if err != nil {
		return nil, err
	}
	return func(frames []pcapio.Frame, write func(int, string, []byte)) sim.Counters {
		// The fast path takes frames of any length its buffer holds: room
		// for the longest frame of the capture, and headroom either side.
		longest := 0
		for _, fr := range frames {
			longest = max(longest, len(fr.Data))
		}
		buf := make([]byte, 2*packet.Headroom+longest)
		for i, fr := range frames {
			n := copy(buf[packet.Headroom:], fr.Data)
			if r := pl.Process(buf, packet.Headroom, n); r.Sink >= 0 {
				write(i, pl.SinkName(int(r.Sink)), r.Data)
			}
		}
		return golang.Counters(pl)
	}, nil
}

// loadInterp loads the reference interpreter of an LB with its tables.
func loadInterp(lb, tables string) (lbRunner, error) {
	var mach *sim.Machine
	err := openTables(tables, func(f *os.File) (err error) {
		if f == nil {
			mach, err = ejfat.Interpreter(lb, ejfat.HostPRG, "", nil)
		} else {
			mach, err = ejfat.Interpreter(lb, ejfat.HostPRG, tables, f)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return func(frames []pcapio.Frame, write func(int, string, []byte)) sim.Counters {
		for i, fr := range frames {
			mach.Run(fr.Data, func(sink *dataflow.Node, data []byte) { write(i, sink.Name, data) })
		}
		return mach.Counters()
	}, nil
}

func writeProfile(name string, runs map[string]uint64) error {
	f, err := fileout.Create(name)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := golang.Profile(runs).WriteTo(f); err != nil {
		return err
	}
	return f.Commit()
}
