package lbnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/internal/udpbatch"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/frame"
)

const (
	// drainReads bounds the reads that empty a socket when the LB stops:
	// a sender that outpaces the LB would otherwise keep it from stopping.
	drainReads = 64
	// outPerIn is how many datagrams a batch sends per message it
	// receives, at most, before it sends the rest in another sendmmsg:
	// room for coalesced messages (UDP_GRO) of up to 4 datagrams each on
	// average, and one of udpbatch.MaxSegments more.
	outPerIn = 4
)

// counters are a worker's Stats, read with atomic loads while it runs.
type counters struct {
	received, forwarded, dropped, oversize, sendErrors atomic.Uint64
	coalesced                                          atomic.Uint64 // UDP_GRO messages received (of more than one datagram)
	cpu                                                atomic.Int64  // ns its pinned thread ran, when run returns
}

// worker forwards the datagrams arriving on one socket.
type worker struct {
	lb    *LB
	id    int // its pipeline in every table set
	conn  *net.UDPConn
	local netip.AddrPort
	count counters
	set   *tableSet // the one the last batch ran over
	// drops are those of the pipelines of earlier sets, by site.
	drops map[fastpath.DropSite]uint64

	raw  syscall.RawConn
	bufs [][]byte
	save []byte // the bytes a coalesced datagram's headers cover
	in   *udpbatch.Receiver
	out  *udpbatch.Sender
}

func newWorker(lb *LB, id int, conn *net.UDPConn) (*worker, error) {
	w := &worker{lb: lb, id: id, conn: conn, drops: map[fastpath.DropSite]uint64{}}
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	ip := local.Addr().Unmap()
	switch {
	case ip.IsUnspecified():
		return nil, fmt.Errorf("lbnet: listen on the LB's own address (the one its IP filter admits), not %v", ip)
	case !ip.Is4():
		return nil, fmt.Errorf("lbnet: IPv6 listen addresses are not supported yet (%v)", ip)
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	w.raw = raw
	if lb.cfg.MaxDatagram == MaxUDPPayload {
		// Coalesced datagrams need the largest buffers: with smaller ones
		// they would come truncated.
		udpbatch.SetGRO(raw)
	}
	w.local = netip.AddrPortFrom(ip, local.Port())
	n, size := lb.cfg.Batch, lb.cfg.MaxDatagram
	hdr := packet.Headroom + frame.EthernetLen + frame.IPv4MinLen + frame.UDPLen
	w.bufs = make([][]byte, n)
	w.save = make([]byte, hdr)
	in := make([][]byte, n)
	for i := range w.bufs {
		w.bufs[i] = make([]byte, hdr+size+packet.Headroom)
		in[i] = w.bufs[i][hdr : hdr+size]
	}
	w.in, w.out = udpbatch.NewReceiver(in), udpbatch.NewSender(n*outPerIn+udpbatch.MaxSegments)
	return w, nil
}

func (w *worker) stats() Stats {
	return Stats{w.count.received.Load(), w.count.forwarded.Load(), w.count.dropped.Load(),
		w.count.oversize.Load(), w.count.sendErrors.Load()}
}

// run forwards until ctx ends, then drains the socket; or until the socket
// fails.
func (w *worker) run(ctx context.Context) error {
	if w.lb.cfg.Pin {
		// Never unlocked: the thread ends with the goroutine, pinned
		// threads do not go back to the runtime's pool.
		runtime.LockOSThread()
		if err := pin(w.id); err != nil {
			return fmt.Errorf("lbnet: pin worker %d: %w", w.id, err)
		}
		start := threadCPU()
		defer func() { w.count.cpu.Store(int64(threadCPU() - start)) }()
	}
	woken := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		w.conn.SetReadDeadline(time.Now())
		close(woken)
	})
	defer stop()
	for {
		n, err := w.in.Receive(w.raw, 0)
		if err == nil {
			w.forward(n)
		}
		if ctx.Err() != nil {
			if !stop() {
				<-woken // its deadline is set before drain clears it
			}
			return w.drain()
		}
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			return err
		}
	}
}

// drain forwards what the socket holds, reading without waiting until a
// read finds it empty or comes back short (it was emptied), at most
// drainReads times.
func (w *worker) drain() error {
	w.conn.SetReadDeadline(time.Time{})
	for range drainReads {
		n, err := w.in.Receive(w.raw, unix.MSG_DONTWAIT)
		if errors.Is(err, syscall.EAGAIN) {
			return nil
		}
		if err != nil {
			return err
		}
		w.forward(n)
		if n < len(w.bufs) {
			return nil
		}
	}
	return nil
}

// forward runs n received messages through the LB, over the table set
// current when the batch starts, and sends the results.
func (w *worker) forward(n int) {
	if set := w.lb.current.Load(); set != w.set {
		w.use(set)
	}
	for i := range n {
		size, src, truncated, segment := w.in.Datagram(i)
		switch {
		case truncated:
			w.count.received.Add(1)
			w.count.oversize.Add(1)
		case !src.IsValid():
			w.count.received.Add(1)
			w.count.dropped.Add(1)
		case segment == 0 || segment >= size:
			w.one(w.bufs[i], src, size)
		default:
			w.coalesced(w.bufs[i], src, size, segment)
		}
	}
	w.send()
}

// coalesced runs the datagrams of one UDP_GRO message, segment bytes each
// (the last may be shorter), back to front: each datagram's frame headers
// go over the end of the one before it, whose bytes are put back before it
// runs, while the outputs of those after it stay untouched. Their outputs,
// queued back to front, are then put in order.
func (w *worker) coalesced(buf []byte, src netip.AddrPort, size, segment int) {
	w.count.coalesced.Add(1)
	if w.out.Len()+(size+segment-1)/segment > w.out.Cap() {
		w.send()
	}
	first := w.out.Len()
	hdr := len(buf) - w.lb.cfg.MaxDatagram - packet.Headroom // where the message starts
	for start := (size - 1) / segment * segment; start >= 0; start -= segment {
		end := min(start+segment, size)
		copy(w.save, buf[start:start+hdr])
		w.one(buf[start:hdr+end:hdr+end], src, end-start)
		copy(buf[start:start+hdr], w.save)
	}
	w.out.Reverse(first)
}

// one runs the datagram of n bytes at buf[hdr:] through the LB and queues
// what it sends, if anything, sending the queue first when it is full.
func (w *worker) one(buf []byte, src netip.AddrPort, n int) {
	w.count.received.Add(1)
	if w.out.Len() == w.out.Cap() {
		w.send()
	}
	off, size := frameOf(buf, w.set.mac, src, w.local, n)
	r := w.set.pls[w.id].Process(buf, off, size)
	if r.Sink < 0 {
		w.count.dropped.Add(1)
		return
	}
	payload, to, ok := destination(r.Data)
	if !ok {
		w.count.dropped.Add(1)
		return
	}
	w.out.Add(payload, to)
}

// use moves the worker to a new table set, keeping the drops of its
// pipeline over the old one (the old set is garbage once every worker has
// moved).
func (w *worker) use(set *tableSet) {
	if w.set != nil {
		addDrops(w.drops, w.set.pls[w.id])
	}
	w.set = set
}

// send sends what is queued: consecutive datagrams to the same member, of
// one size but the last (an event's segments), as one UDP_SEGMENT (GSO)
// message, which the kernel cuts into the datagrams again; one sendmmsg
// for them all.
func (w *worker) send() {
	n := w.out.Len()
	sent, err := w.out.Flush(w.raw)
	w.count.forwarded.Add(uint64(sent))
	if err != nil {
		w.count.sendErrors.Add(uint64(n - sent))
		w.out.Reset()
	}
}

// frameOf writes, in front of the n datagram bytes in buf, the Ethernet
// (to the LB's MAC), IPv4 and UDP headers they had on the wire from src
// to dst (TTL 64; the UDP checksum 0, "none", which spares summing the
// payload: the kernel has checked it, and it frames what the LB sends
// anew), and returns the frame's offset and size.
func frameOf(buf []byte, mac net.HardwareAddr, src, dst netip.AddrPort, n int) (off, size int) {
	d := frame.Datagram{DstMAC: mac, Src: src, Dst: dst, TTL: 64}
	size = d.HeaderLen() + n
	d.Build(buf[packet.Headroom : packet.Headroom+size])
	return packet.Headroom, size
}

// destination reads, from a frame the LB sends, the UDP payload and the
// IPv4 address and port it goes to.
func destination(f []byte) (payload []byte, to netip.AddrPort, ok bool) {
	_, to, payload, ok = frame.ParseUDP(f)
	return payload, to, ok && to.Addr().Is4()
}
