package lbnet

import (
	"context"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/internal/xsk"
	"github.com/dragonet-go/nsc/packet"
)

// xskWait is how long a worker on an AF_XDP socket waits for frames
// before it looks whether the LB stops.
const xskWait = 50 * time.Millisecond

// XSKConfig sizes the AF_XDP sockets of an LB (xsk.Open): each frame
// keeps packet.Headroom free after it, as the fast path asks, so the
// longest frame the LB runs is XSKMaxLen; the kernel gets longer ones,
// and they count as Oversize.
var XSKConfig = xsk.Config{Tailroom: packet.Headroom}

// XSKMaxLen is the longest frame an LB on AF_XDP sockets runs (3,712
// bytes).
const XSKMaxLen = xsk.FrameSize - xsk.Headroom - packet.Headroom

// xskWorker forwards the frames arriving on one AF_XDP socket: each is
// run through the fast path in place in its UMEM chunk (the kernel leaves
// xsk.Headroom bytes before it, more than packet.Headroom), and what the
// LB sends goes out of the socket's tx ring from where the fast path left
// it in the chunk.
type xskWorker struct {
	base
	sock  *xsk.Socket
	descs []unix.XDPDesc
}

func newXSKWorker(lb *LB, id int, s *xsk.Socket) *xskWorker {
	return &xskWorker{base: newBase(lb, id), sock: s, descs: make([]unix.XDPDesc, lb.cfg.Batch)}
}

// stats counts, as Oversize, the frames the socket's program passed to
// the kernel for being longer than a chunk holds.
func (w *xskWorker) stats() Stats {
	s := w.base.stats()
	if long, err := w.sock.Long(); err == nil {
		s.Received += long
		s.Oversize += long
	}
	return s
}

func (w *xskWorker) run(ctx context.Context) error {
	done, err := w.pin()
	if err != nil {
		return err
	}
	defer done()
	for ctx.Err() == nil {
		n, err := w.sock.Receive(w.descs, xskWait)
		if err != nil {
			return err
		}
		if err := w.forward(n); err != nil {
			return err
		}
	}
	// What the rx ring holds, as a socket worker drains its socket.
	for range drainReads {
		n, err := w.sock.Receive(w.descs, 0)
		if n == 0 || err != nil {
			return err
		}
		if err := w.forward(n); err != nil {
			return err
		}
	}
	return nil
}

// forward runs the n frames received in w.descs through the LB, over the
// table set current when the batch starts, and sends what it sends. With
// none (a wait that timed out), it still flushes: chunks the kernel sent
// after the last batch's flush come back to the fill ring, and frames it
// could not send then go now.
func (w *xskWorker) forward(n int) error {
	w.begin()
	pl := w.set.pls[w.id]
	for _, d := range w.descs[:n] {
		w.tally.Received++
		chunk, off := w.sock.Chunk(d.Addr)
		r := pl.Process(chunk, off, int(d.Len))
		switch {
		case r.Sink < 0:
			w.tally.Dropped++
		case !fastpath.Within(chunk, r.Data):
			// Not in the UMEM (an event a stateful model completed):
			// nothing the tx ring can send.
			w.tally.SendErrors++
		case w.sock.Transmit(d.Addr-uint64(off)+uint64(len(chunk)-cap(r.Data)), len(r.Data)):
			w.tally.Forwarded++
			continue
		default:
			w.tally.SendErrors++ // the tx ring stayed full
		}
		w.sock.Recycle(d.Addr)
	}
	err := w.sock.Flush()
	w.publish()
	return err
}
