package lbnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/frame"
)

const (
	// drainReads bounds the reads that empty a socket when the LB stops:
	// a sender that outpaces the LB would otherwise keep it from stopping.
	drainReads = 64
)

// counters are a worker's Stats, read with atomic loads while it runs.
type counters struct {
	received, forwarded, dropped, oversize, sendErrors atomic.Uint64
}

// worker forwards the datagrams arriving on one socket.
type worker struct {
	lb    *LB
	id    int // its pipeline in every table set
	conn  *net.UDPConn
	batch batchConn
	local netip.AddrPort
	count counters
	set   *tableSet // the one the last batch ran over
	// drops are those of the pipelines of earlier sets, by site.
	drops map[fastpath.DropSite]uint64

	bufs  [][]byte
	in    []ipv4.Message
	out   []ipv4.Message
	addrs []net.UDPAddr
}

// batchConn is what x/net's ipv4 and ipv6 packet conns have in common.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
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
	w.batch = ipv4.NewPacketConn(conn)
	w.local = netip.AddrPortFrom(ip, local.Port())
	n, size := lb.cfg.Batch, lb.cfg.MaxDatagram
	hdr := packet.Headroom + frame.EthernetLen + frame.IPv4MinLen + frame.UDPLen
	w.bufs = make([][]byte, n)
	w.in = make([]ipv4.Message, n)
	w.out = make([]ipv4.Message, n)
	w.addrs = make([]net.UDPAddr, n)
	for i := range w.bufs {
		w.bufs[i] = make([]byte, hdr+size+packet.Headroom)
		w.in[i].Buffers = [][]byte{w.bufs[i][hdr : hdr+size]}
		w.out[i].Buffers = make([][]byte, 1)
		w.out[i].Addr = &w.addrs[i]
		w.addrs[i].IP = make(net.IP, 4) // filled in place: no allocation per datagram
	}
	return w, nil
}

func (w *worker) stats() Stats {
	return Stats{w.count.received.Load(), w.count.forwarded.Load(), w.count.dropped.Load(),
		w.count.oversize.Load(), w.count.sendErrors.Load()}
}

// run forwards until ctx ends, then drains the socket; or until the socket
// fails.
func (w *worker) run(ctx context.Context) error {
	woken := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		w.conn.SetReadDeadline(time.Now())
		close(woken)
	})
	defer stop()
	for {
		n, err := w.batch.ReadBatch(w.in, 0)
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
		n, err := w.batch.ReadBatch(w.in, unix.MSG_DONTWAIT)
		if errors.Is(err, syscall.EAGAIN) {
			return nil
		}
		if err != nil {
			return err
		}
		w.forward(n)
		if n < len(w.in) {
			return nil
		}
	}
	return nil
}

// forward runs n received datagrams through the LB, over the table set
// current when the batch starts, and sends the results.
func (w *worker) forward(n int) {
	if set := w.lb.current.Load(); set != w.set {
		w.use(set)
	}
	set, pl := w.set, w.set.pls[w.id]
	w.count.received.Add(uint64(n))
	k := 0
	for i := range n {
		m := &w.in[i]
		if m.Flags&unix.MSG_TRUNC != 0 {
			w.count.oversize.Add(1)
			continue
		}
		src, ok := m.Addr.(*net.UDPAddr)
		if !ok {
			w.count.dropped.Add(1)
			continue
		}
		off, size := frameOf(w.bufs[i], set.mac, src.AddrPort(), w.local, m.N)
		r := pl.Process(w.bufs[i], off, size)
		if r.Sink < 0 {
			w.count.dropped.Add(1)
			continue
		}
		payload, to, ok := destination(r.Data)
		if !ok {
			w.count.dropped.Add(1)
			continue
		}
		ip4 := to.Addr().As4()
		copy(w.addrs[k].IP, ip4[:])
		w.addrs[k].Port = int(to.Port())
		w.out[k].Buffers[0] = payload
		k++
	}
	w.send(k)
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

// send sends the first k messages of w.out.
func (w *worker) send(k int) {
	for sent := 0; sent < k; {
		n, err := w.batch.WriteBatch(w.out[sent:k], 0)
		if err != nil {
			w.count.sendErrors.Add(uint64(k - sent))
			return
		}
		w.count.forwarded.Add(uint64(n))
		sent += n
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
