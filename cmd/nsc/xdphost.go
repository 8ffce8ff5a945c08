package main

import (
	"context"
	"fmt"
	"os"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

// xdpHost is the host's part of an LB split between an XDP program and
// the host (docs/embedding.md, "Devices and the host"): it runs the whole
// graph on every frame the program passes, which the frame reaches
// unchanged, and sends out of the interface what leaves at a sink the
// program would transmit from (XDP_TX). What leaves at a sink the program
// passes (ToHost) is left to the kernel, which has the frame already.
type xdpHost struct {
	lb, dev string
	conn    *xdprun.PacketConn
	pl      fastpath.Pipeline
	verdict map[string]string // the program's, by sink
	in      int
	sent    uint64
	unsent  uint64 // writes that failed
	lastErr error
	long    uint64 // frames longer than the read buffer
}

// hostBuffer is the socket's receive buffer: room for a burst of frames
// while the host part is busy.
const hostBuffer = 4 << 20

// openXDPHost opens the host part of lb for the program of meta on dev,
// with the table entries the program has.
func openXDPHost(lb, dev, tables string, meta *xdprun.Meta) (*xdpHost, error) {
	part, err := lbfast.Host(lb, meta.Graph)
	if err != nil {
		return nil, err
	}
	var ts []*table.Table
	if err := openTables(tables, func(f *os.File) (err error) {
		if f == nil {
			ts, err = table.Load(part.Schema, "", nil)
		} else {
			ts, err = table.Load(part.Schema, tables, f)
		}
		return err
	}); err != nil {
		return nil, err
	}
	pl, err := part.New(ts)
	if err != nil {
		return nil, err
	}
	h := &xdpHost{lb: lb, dev: dev, pl: pl, verdict: map[string]string{}}
	for _, s := range meta.Sinks {
		h.verdict[s.Node] = s.Verdict
	}
	if h.conn, err = xdprun.ListenPacket(dev, hostBuffer); err != nil {
		return nil, err
	}
	return h, nil
}

// serve runs the host part on every frame the socket receives until ctx
// is done.
func (h *xdpHost) serve(ctx context.Context) error {
	const most = 1 << 16
	buf := make([]byte, packet.Headroom+most+4+packet.Headroom)
	in := buf[packet.Headroom : len(buf)-packet.Headroom]
	for ctx.Err() == nil {
		n, err := h.conn.Read(in)
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		if n > most {
			h.long++
			continue
		}
		h.in++
		r := h.pl.Process(buf, packet.Headroom, n)
		if r.Sink < 0 || h.verdict[h.pl.SinkName(int(r.Sink))] != "XDP_TX" {
			continue
		}
		if err := h.conn.Write(r.Data); err != nil {
			h.unsent++
			h.lastErr = err
		} else {
			h.sent++
		}
	}
	return nil
}

// report prints the host part's counters, and closes its socket.
func (h *xdpHost) report(e *env) error {
	defer h.conn.Close()
	lost, err := h.conn.Dropped()
	if err != nil {
		return err
	}
	c := golang.Counters(h.pl)
	paths := map[string]string{}
	for k := range c.Sinks {
		paths[k] = "left to the kernel, which has the frame"
		if h.verdict[k] == "XDP_TX" {
			paths[k] = "sent out of " + h.dev
		}
	}
	fmt.Fprintf(e.stdout, "host part of %s:\n", h.lb)
	printCounters(e, h.in, c, paths)
	if h.unsent > 0 {
		fmt.Fprintf(e.stdout, "  %d frames not sent (%v); %d sent\n", h.unsent, h.lastErr, h.sent)
	}
	if lost > 0 {
		fmt.Fprintf(e.stdout, "  %d frames lost at the socket (its buffer was full)\n", lost)
	}
	if h.long > 0 {
		fmt.Fprintf(e.stdout, "  %d frames longer than 64 KiB not run\n", h.long)
	}
	return nil
}
