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
	// batchBytes is about what one batch takes in: the next receive asks
	// for as many messages of the last one's mean size, so that what it
	// copied in is still in the caches when it is sent on.
	batchBytes = 1 << 20
	// frameRoom is what a receive buffer keeps in front of the datagram:
	// the headroom and the headers a worker frames it with.
	frameRoom = packet.Headroom + frame.EthernetLen + frame.IPv4MinLen + frame.UDPLen
)

// counters are a worker's Stats, read with atomic loads while it runs.
type counters struct {
	received, forwarded, dropped, oversize, sendErrors atomic.Uint64
	coalesced                                          atomic.Uint64 // UDP_GRO messages received (of more than one datagram)
	cpu                                                atomic.Int64  // ns its pinned thread ran, when run returns
}

// runner is a worker of either kind: on a UDP socket (worker) or on an
// AF_XDP socket (xskWorker).
type runner interface {
	// run forwards until ctx ends, then what its socket still holds; or
	// until the socket fails.
	run(ctx context.Context) error
	stats() Stats
	common() *base
}

// base is what every worker has: its pipeline in each table set, the
// counters and the pipelines' drops.
type base struct {
	lb    *LB
	id    int // its pipeline in every table set
	count counters
	// The batch's counts, added to count when it ends.
	tally Stats
	set   *tableSet // the one the last batch ran over
	// drops are those of the pipelines of earlier sets, by site.
	drops map[fastpath.DropSite]uint64
}

func newBase(lb *LB, id int) base {
	return base{lb: lb, id: id, drops: map[fastpath.DropSite]uint64{}}
}

func (w *base) common() *base { return w }

func (w *base) stats() Stats {
	return Stats{w.count.received.Load(), w.count.forwarded.Load(), w.count.dropped.Load(),
		w.count.oversize.Load(), w.count.sendErrors.Load()}
}

// pin binds the calling goroutine's thread to the worker's CPU when the
// LB pins its workers, and returns what counts the thread's time when run
// returns.
func (w *base) pin() (done func(), err error) {
	if !w.lb.cfg.Pin {
		return func() {}, nil
	}
	// Never unlocked: the thread ends with the goroutine, pinned threads
	// do not go back to the runtime's pool.
	runtime.LockOSThread()
	if err := pin(w.id); err != nil {
		return nil, fmt.Errorf("lbnet: pin worker %d: %w", w.id, err)
	}
	start := threadCPU()
	return func() { w.count.cpu.Store(int64(threadCPU() - start)) }, nil
}

// worker forwards the datagrams arriving on one UDP socket.
type worker struct {
	base
	conn   *net.UDPConn
	framer framer
	want   int    // messages to receive next (1 to Config.Batch)
	merged uint64 // coalesced messages in the batch

	raw  syscall.RawConn
	bufs [][]byte
	save []byte // the bytes a coalesced datagram's headers cover
	in   *udpbatch.Receiver
	out  *udpbatch.Sender
}

func newWorker(lb *LB, id int, conn *net.UDPConn) (*worker, error) {
	w := &worker{base: newBase(lb, id), conn: conn}
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
	w.framer.dst = netip.AddrPortFrom(ip, local.Port())
	n, size := lb.cfg.Batch, lb.cfg.MaxDatagram
	w.bufs = make([][]byte, n)
	w.save = make([]byte, frameRoom)
	in := make([][]byte, n)
	for i := range w.bufs {
		w.bufs[i] = make([]byte, frameRoom+size+packet.Headroom)
		in[i] = w.bufs[i][frameRoom : frameRoom+size]
	}
	w.in, w.out = udpbatch.NewReceiver(in), udpbatch.NewSender(n*outPerIn+udpbatch.MaxSegments)
	w.want = n
	return w, nil
}

// run forwards until ctx ends, then drains the socket; or until the socket
// fails.
func (w *worker) run(ctx context.Context) error {
	done, err := w.pin()
	if err != nil {
		return err
	}
	defer done()
	woken := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		w.conn.SetReadDeadline(time.Now())
		close(woken)
	})
	defer stop()
	for {
		n, err := w.in.Receive(w.raw, w.want, 0)
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
		want := w.want
		n, err := w.in.Receive(w.raw, want, unix.MSG_DONTWAIT)
		if errors.Is(err, syscall.EAGAIN) {
			return nil
		}
		if err != nil {
			return err
		}
		w.forward(n)
		if n < want {
			return nil
		}
	}
	return nil
}

// forward runs n received messages through the LB, over the table set
// current when the batch starts, and sends the results.
func (w *worker) forward(n int) {
	w.begin()
	total := 0
	for i := range n {
		size, src, truncated, segment := w.in.Datagram(i)
		w.message(w.bufs[i], src, size, truncated, segment)
		total += size
	}
	w.send()
	w.publish()
	w.want = max(1, min(w.lb.cfg.Batch, batchBytes*n/max(total, 1)))
}

// begin starts a batch over the table set current now.
func (w *base) begin() {
	if set := w.lb.current.Load(); set != w.set {
		w.use(set)
	}
}

// message runs a received message of size bytes at buf[frameRoom:], a datagram
// or a coalesced run of them (segment bytes each), through the LB.
func (w *worker) message(buf []byte, src netip.AddrPort, size int, truncated bool, segment int) {
	switch {
	case truncated:
		w.tally.Received++
		w.tally.Oversize++
	case !src.IsValid():
		w.tally.Received++
		w.tally.Dropped++
	case segment == 0 || segment >= size:
		w.one(buf, src, size)
	default:
		w.coalesced(buf, src, size, segment)
	}
}

// publish adds the batch's tally to the counters others read: atomic
// adds once a batch, not once a datagram.
func (w *worker) publish() {
	w.count.coalesced.Add(w.merged)
	w.merged = 0
	w.base.publish()
}

func (w *base) publish() {
	t := &w.tally
	w.count.received.Add(t.Received)
	w.count.forwarded.Add(t.Forwarded)
	w.count.dropped.Add(t.Dropped)
	w.count.oversize.Add(t.Oversize)
	w.count.sendErrors.Add(t.SendErrors)
	w.tally = Stats{}
}

// coalesced runs the datagrams of one UDP_GRO message, segment bytes each
// (the last may be shorter), back to front: each datagram's frame headers
// go over the end of the one before it, whose bytes are put back before it
// runs, while the outputs of those after it stay untouched. Their outputs,
// queued back to front, are then put in order.
func (w *worker) coalesced(buf []byte, src netip.AddrPort, size, segment int) {
	w.merged++
	if w.out.Len()+(size+segment-1)/segment > w.out.Cap() {
		w.send()
	}
	first := w.out.Len()
	for start := (size - 1) / segment * segment; start >= 0; start -= segment {
		end := min(start+segment, size)
		copy(w.save, buf[start:start+frameRoom])
		w.one(buf[start:frameRoom+end:frameRoom+end], src, end-start)
		copy(buf[start:start+frameRoom], w.save)
	}
	w.out.Reverse(first)
}

// one runs the datagram of n bytes at buf[frameRoom:] through the LB and queues
// what it sends, if anything, sending the queue first when it is full.
func (w *worker) one(buf []byte, src netip.AddrPort, n int) {
	w.tally.Received++
	if w.out.Len() == w.out.Cap() {
		w.send()
	}
	off, size := w.framer.frame(buf, w.set.mac, src, n)
	r := w.set.pls[w.id].Process(buf, off, size)
	if r.Sink < 0 {
		w.tally.Dropped++
		return
	}
	payload, to, ok := destination(r.Data)
	if !ok {
		w.tally.Dropped++
		return
	}
	w.out.Add(payload, to)
}

// use moves the worker to a new table set, keeping the drops of its
// pipeline over the old one (the old set is garbage once every worker has
// moved).
func (w *base) use(set *tableSet) {
	if w.set != nil {
		addDrops(w.drops, w.set.pls[w.id])
	}
	w.set = set
}

// send sends what is queued: the datagrams to one member, of one size but
// the last (an event's segments; the one-datagram events of a batch), as
// one UDP_SEGMENT (GSO) message, which the kernel cuts into the datagrams
// again; one sendmmsg for them all.
func (w *worker) send() {
	n := w.out.Len()
	sent, err := w.out.Flush(w.raw)
	w.tally.Forwarded += uint64(sent)
	if err != nil {
		w.tally.SendErrors += uint64(n - sent)
		w.out.Reset()
	}
}

// destination reads, from a frame the LB sends, the UDP payload and the
// IPv4 address and port it goes to.
func destination(f []byte) (payload []byte, to netip.AddrPort, ok bool) {
	_, to, payload, ok = frame.ParseUDP(f)
	return payload, to, ok && to.Addr().Is4()
}
