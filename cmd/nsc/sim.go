package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/packet"
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
	frames, link, err := readPcap(*in)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	sinks := newSinkWriters(*out, link)
	var werr error
	for _, f := range frames {
		mach.RunAt(start, f.data, func(sink *dataflow.Node, data []byte) {
			if err := sinks.write(sink.Name, f.ci, data); err != nil && werr == nil {
				werr = err
			}
		})
	}
	if err := errors.Join(werr, sinks.close()); err != nil {
		return err
	}
	if *profile != "" {
		if err := writeProfile(*profile, mach.Counters().Nodes); err != nil {
			return err
		}
	}
	printCounters(e, len(frames), mach.Counters(), sinks.paths)
	return nil
}

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
func loadTables(m *lang.Model, file string) ([]*packet.Table, error) {
	if file == "" {
		return packet.LoadTables(m.Schema, "", nil)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return packet.LoadTables(m.Schema, file, f)
}

type frame struct {
	ci   gopacket.CaptureInfo
	data []byte
}

// readPcap reads every frame of a pcap or pcapng file.
func readPcap(name string) ([]frame, layers.LinkType, error) {
	raw, err := os.ReadFile(name)
	if err != nil {
		return nil, 0, err
	}
	var src gopacket.PacketDataSource
	var link layers.LinkType
	if r, err := pcapgo.NewReader(bytes.NewReader(raw)); err == nil {
		src, link = r, r.LinkType()
	} else if r, err2 := pcapgo.NewNgReader(bytes.NewReader(raw), pcapgo.DefaultNgReaderOptions); err2 == nil {
		src, link = r, r.LinkType()
	} else {
		return nil, 0, fmt.Errorf("%s: not a pcap or pcapng file: %v", name, err)
	}
	var frames []frame
	for {
		data, ci, err := src.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return frames, link, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("%s: frame %d: %v", name, len(frames)+1, err)
		}
		frames = append(frames, frame{ci, data})
	}
}

// sinkWriters opens one pcap per sink on first use.
type sinkWriters struct {
	dir   string
	link  layers.LinkType
	files map[string]*os.File
	bufs  map[string]*bufio.Writer
	ws    map[string]*pcapgo.Writer
	paths map[string]string
}

func newSinkWriters(dir string, link layers.LinkType) *sinkWriters {
	return &sinkWriters{dir: dir, link: link, files: map[string]*os.File{}, bufs: map[string]*bufio.Writer{},
		ws: map[string]*pcapgo.Writer{}, paths: map[string]string{}}
}

func (s *sinkWriters) write(sink string, ci gopacket.CaptureInfo, data []byte) error {
	w, ok := s.ws[sink]
	if !ok {
		p := filepath.Join(s.dir, sink+".pcap")
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		b := bufio.NewWriter(f)
		w = pcapgo.NewWriter(b)
		if err := w.WriteFileHeader(65536, s.link); err != nil {
			f.Close()
			return err
		}
		s.files[sink], s.bufs[sink], s.ws[sink], s.paths[sink] = f, b, w, p
	}
	ci.CaptureLength, ci.Length = len(data), len(data)
	return w.WritePacket(ci, data)
}

func (s *sinkWriters) close() error {
	var errs []error
	for _, k := range sortedKeys(s.files) {
		errs = append(errs, s.bufs[k].Flush(), s.files[k].Close())
	}
	return errors.Join(errs...)
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
