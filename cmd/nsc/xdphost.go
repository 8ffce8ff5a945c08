package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/rdma"
)

// xdpHost is the host's part of a model split between an XDP program and
// the host (docs/embedding.md, "Devices and the host"): it runs the whole
// graph on every frame the program passes, which the frame reaches
// unchanged, and sends out of the interface what the part says to send.
type xdpHost struct {
	name, dev string
	conn      *xdprun.PacketConn
	part      hostPart
	in        int
	sent      uint64
	unsent    uint64 // writes that failed
	lastErr   error
	long      uint64 // frames longer than the read buffer
}

// hostPart is what runs on the host: an LB's host part, or an RDMA
// responder's with its runtime.
type hostPart interface {
	// run runs the frame buf[packet.Headroom:][:n] (headroom on both
	// sides): the frame to send out of the interface, or nil.
	run(buf []byte, n int) []byte
	// report prints the part's counters: in frames ran; dev is the
	// interface.
	report(e *env, in int, dev string)
}

// lbHost is an LB's host part: what leaves at a sink the program would
// transmit from (XDP_TX) is sent; what leaves at a sink the program
// passes (ToHost) is left to the kernel, which has the frame already.
type lbHost struct {
	pl      fastpath.Pipeline
	verdict map[string]string // the program's, by sink
}

func (h *lbHost) run(buf []byte, n int) []byte {
	r := h.pl.Process(buf, packet.Headroom, n)
	if r.Sink < 0 || h.verdict[h.pl.SinkName(int(r.Sink))] != "XDP_TX" {
		return nil
	}
	return r.Data
}

func (h *lbHost) report(e *env, in int, dev string) {
	c := golang.Counters(h.pl)
	paths := map[string]string{}
	for k := range c.Sinks {
		paths[k] = "left to the kernel, which has the frame"
		if h.verdict[k] == "XDP_TX" {
			paths[k] = "sent out of " + dev
		}
	}
	printCounters(e, in, c, paths)
}

// rdmaHost is an RDMA responder's host part and the runtime around it
// (rdma.Responder): payloads are written into the regions, ACK and NAK
// frames sent, completions printed as they come.
type rdmaHost struct {
	r       *rdma.Responder
	out     io.Writer
	replies uint64
}

func (h *rdmaHost) run(buf []byte, n int) []byte {
	reply, done := h.r.Handle(buf[packet.Headroom : packet.Headroom+n])
	for _, c := range done {
		if c.Send {
			fmt.Fprintf(h.out, "QP %#x: SEND of %d bytes\n", c.QPN, len(c.Msg))
		} else {
			fmt.Fprintf(h.out, "QP %#x: message complete, immediate %#x\n", c.QPN, c.Imm)
		}
	}
	if reply != nil {
		h.replies++
	}
	return reply
}

func (h *rdmaHost) report(e *env, in int, dev string) {
	c := golang.Counters(h.r.Pipeline())
	paths := map[string]string{
		"RxMemory": "placed in its region (and answered out of " + dev + " when asked)",
		"RxReply":  "answered out of " + dev,
	}
	printCounters(e, in, c, paths)
	fmt.Fprintf(e.stdout, "  %d ACK/NAK frames made\n", h.replies)
	for _, g := range h.r.Regions() {
		fmt.Fprintf(e.stdout, "region R_Key %#x at %#x, %d bytes: sha256 %x\n", g.RKey, g.Base, len(g.Mem), sha256.Sum256(g.Mem))
	}
}

// hostBuffer is the socket's receive buffer: room for a burst of frames
// while the host part is busy.
const hostBuffer = 4 << 20

// openXDPHost opens the host part of model (an LB, or the RDMA responder
// naa or irn) for the program of meta on dev, with the table entries the
// program has.
func openXDPHost(e *env, model, dev, tables string, meta *xdprun.Meta) (*xdpHost, error) {
	h := &xdpHost{name: model, dev: dev}
	var err error
	if model == "naa" || model == "irn" {
		var r *rdma.Responder
		err = openTables(tables, func(f *os.File) (err error) {
			if f == nil {
				r, err = rdma.XDPHost(model, meta.Graph, "", nil)
			} else {
				r, err = rdma.XDPHost(model, meta.Graph, tables, f)
			}
			return err
		})
		h.part = &rdmaHost{r: r, out: e.stdout}
	} else {
		h.part, err = openLBHost(model, tables, meta)
	}
	if err != nil {
		return nil, err
	}
	if h.conn, err = xdprun.ListenPacket(dev, hostBuffer); err != nil {
		return nil, err
	}
	return h, nil
}

// openLBHost is the host part of LB lb for the program of meta.
func openLBHost(lb, tables string, meta *xdprun.Meta) (*lbHost, error) {
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
	h := &lbHost{pl: pl, verdict: map[string]string{}}
	for _, s := range meta.Sinks {
		h.verdict[s.Node] = s.Verdict
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
		out := h.part.run(buf, n)
		if out == nil {
			continue
		}
		if err := h.conn.Write(out); err != nil {
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
	fmt.Fprintf(e.stdout, "host part of %s:\n", h.name)
	h.part.report(e, h.in, h.dev)
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
