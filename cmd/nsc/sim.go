package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/fileout"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

func runSim(e *env, args []string) error {
	fs := newFlags("sim", e)
	graph := fs.String("graph", "", "graph to run")
	in := fs.String("in", "", "input pcap (or pcapng)")
	out := fs.String("out", "", "output directory: one pcap per sink")
	source := fs.String("source", "", "source node packets enter by (default: the graph's first)")
	tables := fs.String("tables", "", "table entries (table_add lines) to load")
	profile := fs.String("profile", "", "write the frames each node ran on here (for nsc compile --profile)")
	asJSON := fs.Bool("json", false, "print the counters as JSON (docs/json.md)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return usagef("--in and --out are required")
	}
	m, g, err := graphOf(files, *graph)
	if err != nil {
		return err
	}
	inputs := append([]string{*in, *tables}, files...)
	if err := refuseOverwrite(inputs, sinkPaths(g, *out, *profile)...); err != nil {
		return err
	}
	defer fileout.AbortOnInterrupt()()
	start, err := pickSource(g, *source)
	if err != nil {
		return err
	}
	rts, err := loadTables(m, *tables)
	if err != nil {
		return err
	}
	mach, err := sim.New(g, rts)
	if err != nil {
		return err
	}
	frames, err := pcapio.ReadFile(*in)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	sinks := newSinkWriters(*out)
	defer sinks.abort()
	var now time.Time // keyed state's timeouts run on the capture's clock
	mach.SetClock(func() time.Time { return now })
	for _, f := range frames {
		now = f.CI.Timestamp
		mach.RunAt(start, f.Data, func(sink *dataflow.Node, data []byte) { sinks.write(sink.Name, f.CI, data) })
	}
	return report(e, m, frames, *tables, ran{mach.Counters(), mach.InProgress(), sinks}, *profile, *asJSON)
}

// ran is what a run of a capture did: its counters, keyed state's live
// entries, and the sinks' pcaps, not yet committed.
type ran struct {
	counters   sim.Counters
	inProgress map[string]int
	sinks      *sinkWriters
}

// report ends nsc sim and nsc run alike: the profile, the sinks' pcaps
// put in place, the counters (text or JSON), and a hint when the frames
// look like a common mistake.
func report(e *env, m *lang.Model, frames []pcapio.Frame, tables string, r ran, profile string, asJSON bool) error {
	if profile != "" {
		if err := writeProfile(profile, r.counters.Nodes); err != nil {
			return err
		}
	}
	if err := r.sinks.commit(); err != nil {
		return err
	}
	if asJSON {
		j := countersOf(len(frames), r.counters, r.sinks.paths)
		j.InProgress = r.inProgress
		return printJSON(e.stdout, j)
	}
	printCounters(e, len(frames), r.counters, r.sinks.paths)
	for _, st := range sortedKeys(r.inProgress) {
		fmt.Fprintf(e.stdout, "  state %-23s %6d  (in progress)\n", st, r.inProgress[st])
	}
	fmt.Fprint(e.stderr, lbHeadedHint(m, frames, tables))
	return nil
}

// sinkPaths are the files nsc sim may write: DIR/NODE.pcap for every node
// (any may end a packet's run), and the profile.
func sinkPaths(g *dataflow.Graph, dir, profile string) []string {
	paths := []string{profile}
	for _, n := range g.Nodes {
		paths = append(paths, sinkPath(dir, n.Name))
	}
	return paths
}

func sinkPath(dir, sink string) string { return filepath.Join(dir, sink+".pcap") }

func pickSource(g *dataflow.Graph, name string) (*dataflow.Node, error) {
	srcs := g.Sources()
	if name == "" {
		if len(srcs) == 0 {
			return nil, fmt.Errorf("graph %s has no source (a node with op input)", g.Name)
		}
		return srcs[0], nil
	}
	n := g.Node(name)
	if n == nil || !n.Source {
		names := make([]string, len(srcs))
		for i, s := range srcs {
			names[i] = s.Name
		}
		return nil, fmt.Errorf("graph %s has no source %s (sources: %v)", g.Name, name, names)
	}
	return n, nil
}

// loadTables makes the runtime tables and fills them from a table_add file.
func loadTables(m *lang.Model, file string) ([]*table.Table, error) {
	if file == "" {
		return table.Load(m.Schema, "", nil)
	}
	return loadTablesFile(m.Schema, file)
}

// sinkWriters opens one pcap per sink on first use; the first error
// sticks.
type sinkWriters struct {
	dir   string
	ws    map[string]*pcapio.Writer
	paths map[string]string
	err   error
}

func newSinkWriters(dir string) *sinkWriters {
	return &sinkWriters{dir: dir, ws: map[string]*pcapio.Writer{}, paths: map[string]string{}}
}

func (s *sinkWriters) write(sink string, ci gopacket.CaptureInfo, data []byte) {
	w, ok := s.ws[sink]
	if !ok && s.err == nil {
		p := sinkPath(s.dir, sink)
		if w, s.err = pcapio.Create(p); s.err != nil {
			return
		}
		s.ws[sink], s.paths[sink] = w, p
	}
	if w != nil {
		w.WritePacket(ci, data)
	}
}

// commit puts every sink's pcap in place, each all or nothing.
func (s *sinkWriters) commit() error {
	if s.err != nil {
		return s.err
	}
	var errs []error
	for _, k := range sortedKeys(s.ws) {
		errs = append(errs, s.ws[k].Commit())
	}
	return errors.Join(errs...)
}

// abort removes the pcaps not committed.
func (s *sinkWriters) abort() {
	for _, w := range s.ws {
		w.Abort()
	}
}

func printCounters(e *env, in int, c sim.Counters, paths map[string]string) {
	fmt.Fprintf(e.stdout, "%s in\n", plural(in, "packet"))
	for _, k := range sortedKeys(c.Sinks) {
		fmt.Fprintf(e.stdout, "  sink %-24s %6d  -> %s\n", k, c.Sinks[k], paths[k])
	}
	for _, k := range sortedKeys(c.Counts) {
		fmt.Fprintf(e.stdout, "  count %-23s %6d\n", k, c.Counts[k])
	}
	for _, k := range c.DropKeys() {
		fmt.Fprintf(e.stdout, "  drop %-24s %6d  (%s)\n", k.Node, c.Drops[k], k.Reason)
	}
}
