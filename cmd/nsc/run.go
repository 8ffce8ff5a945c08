package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
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
	frames, link, err := readPcap(*in)
	if err != nil {
		return err
	}
	w, err := createPcap(*out, link)
	if err != nil {
		return err
	}
	defer w.close()
	paths := map[string]string{}
	write := func(i int, sink string, data []byte) {
		paths[sink] = *out
		w.write(frames[i].ci, data)
	}
	var counters sim.Counters
	if *interp {
		counters, err = runInterp(*lb, *tables, frames, write)
	} else {
		counters, err = runFast(*lb, *tables, frames, write)
	}
	if err != nil {
		return err
	}
	if err := w.close(); err != nil {
		return err
	}
	if *profile != "" {
		if err := writeProfile(*profile, counters.Nodes); err != nil {
			return err
		}
	}
	printCounters(e, len(frames), counters, paths)
	return nil
}

// pcapOut writes frames to a pcap file; the first error sticks.
type pcapOut struct {
	f   *os.File
	bw  *bufio.Writer
	w   *pcapgo.Writer
	err error
}

func createPcap(name string, link layers.LinkType) (*pcapOut, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	o := &pcapOut{f: f, bw: bufio.NewWriter(f)}
	o.w = pcapgo.NewWriter(o.bw)
	if err := o.w.WriteFileHeader(65536, link); err != nil {
		f.Close()
		return nil, err
	}
	return o, nil
}

// write writes data with the capture info of the frame it came from.
func (o *pcapOut) write(ci gopacket.CaptureInfo, data []byte) {
	ci.CaptureLength, ci.Length = len(data), len(data)
	if err := o.w.WritePacket(ci, data); err != nil && o.err == nil {
		o.err = err
	}
}

// close flushes and closes the file (again: a no-op), with the first
// error of the writes.
func (o *pcapOut) close() error {
	if o.f == nil {
		return o.err
	}
	err := errors.Join(o.err, o.bw.Flush(), o.f.Close())
	o.f = nil
	o.err = err
	return err
}

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

func runFast(lb, tables string, frames []frame, write func(int, string, []byte)) (sim.Counters, error) {
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
		return sim.Counters{}, err
	}
	pl, err := lbfast.New(lb, ts)
	if err != nil {
		return sim.Counters{}, err
	}
	// The fast path takes frames of any length its buffer holds: room for
	// the longest frame of the capture, and headroom either side.
	longest := 0
	for _, fr := range frames {
		longest = max(longest, len(fr.data))
	}
	buf := make([]byte, 2*packet.Headroom+longest)
	for i, fr := range frames {
		n := copy(buf[packet.Headroom:], fr.data)
		if r := pl.Process(buf, packet.Headroom, n); r.Sink >= 0 {
			write(i, pl.SinkName(int(r.Sink)), r.Data)
		}
	}
	return golang.Counters(pl), nil
}

func runInterp(lb, tables string, frames []frame, write func(int, string, []byte)) (sim.Counters, error) {
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
		return sim.Counters{}, err
	}
	for i, fr := range frames {
		mach.Run(fr.data, func(sink *dataflow.Node, data []byte) { write(i, sink.Name, data) })
	}
	return mach.Counters(), nil
}

func writeProfile(name string, runs map[string]uint64) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := golang.Profile(runs).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
