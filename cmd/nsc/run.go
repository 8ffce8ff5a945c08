package main

import (
	"fmt"
	"os"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/internal/fileout"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
)

func runRun(e *env, args []string) error {
	fs := newFlags("run", e)
	lb := fs.String("lb", "", "LB model: "+fmt.Sprint(ejfat.Versions))
	tables := fs.String("tables", "", "table entries (table_add lines)")
	in := fs.String("in", "", "input pcap (or pcapng)")
	out := fs.String("out", "", "output pcap: every frame the LB sends")
	interp := fs.Bool("interp", false, "run the reference interpreter instead of the generated fast path")
	profile := fs.String("profile", "", "write the frames each node ran on here (for nsc compile --profile)")
	asJSON := fs.Bool("json", false, "print the counters as JSON (docs/json.md)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return usagef("unexpected arguments %v (the model is --lb)", files)
	}
	if *lb == "" || *in == "" || *out == "" {
		return usagef("--lb, --in and --out are required")
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
	var ts []*packet.Table
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
