// Package recvnet runs an EJFAT receiver on UDP sockets (spec
// ejfat-reassembly.md §4): 2^k consecutive ports, the member's port
// range, each read by its own goroutine a batch (recvmmsg; datagrams the
// kernel coalesced, UDP_GRO, one by one) at a time into the reassembler
// of one of N receive threads (port i to thread i mod N,
// so an event, which the LB keeps on one port, always meets one
// reassembler), and a consumer per thread handing complete events to the
// application. It is nsc recv's loop, as ejfat/lbnet is nsc lb's;
// Replay runs a capture through a reassembler the same way (nsc recv
// --in).
//
// What goes in: datagrams, with or without the LB header in front of the
// RE header (a member registered with keepLbHeader gets it; StripLB
// skips it). What comes out: complete events to Config.Deliver, and the
// threads' counters (Stats, Fill). Nothing else is refused here: the
// reassembler counts every segment it drops by reason.
package recvnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/internal/udpbatch"
	"github.com/dragonet-go/nsc/packet"
)

const (
	// ReadBatch is how many datagrams one recvmmsg takes.
	ReadBatch = 32
	// MaxDatagram is a reader's buffer per datagram: the largest UDP
	// payload. A port's reader holds ReadBatch of them.
	MaxDatagram = 1 << 16
	// readBuffer is each port's socket receive buffer: a receive thread
	// descheduled for a few milliseconds must not overflow it (a
	// 9000-byte datagram takes about 12 KiB of it on loopback).
	readBuffer = 64 << 20
	// expireEvery is how often an idle reader drops its thread's events
	// whose timeout passed.
	expireEvery = 100 * time.Millisecond
)

// Reassembler is what a receive thread needs of one: ejfat/reasm's, or
// the model's generated code (Model).
type Reassembler interface {
	Datagram(src netip.Addr, b []byte) reasm.Reason
	Expire()
	Dequeue(ctx context.Context) (*reasm.Event, error)
	TryDequeue() (*reasm.Event, bool)
	Release(ev *reasm.Event)
	Fill() float64
	Stats() reasm.Stats
}

// Config describes a receiver.
type Config struct {
	// Listen is the first port's address; port 0 takes any Ports free
	// consecutive ones.
	Listen netip.AddrPort
	// Ports is the number of consecutive ports, a power of 2; Threads
	// the receive threads, 1 to Ports.
	Ports, Threads int
	// New makes a thread's reassembler.
	New func() (Reassembler, error)
	// Deliver takes each complete event on its thread's consumer
	// goroutine; the event is released when it returns.
	Deliver func(ev *reasm.Event)
	// Began, if set, is called after each batch of datagrams (the first
	// one's time starts a run's rate).
	Began func()
	// NoGRO has the kernel hand over every datagram in a message of its
	// own. By default the ports take datagrams of one flow coalesced
	// (UDP_GRO: from a GSO sender, or a NIC's GRO), as many as fill
	// 64 KiB in one message: fewer messages to receive, and on loopback
	// a GSO sender's message is not cut up in the sender's thread.
	NoGRO bool
}

// thread is a receive thread: a reassembler, locked by the readers of the
// ports it owns for one batch of datagrams at a time.
type thread struct {
	mu sync.Mutex
	r  Reassembler
}

// Receiver receives on its ports until Run's context ends.
type Receiver struct {
	cfg       Config
	conns     []*net.UDPConn
	threads   []*thread
	lbHeaders atomic.Uint64
	coalesced atomic.Uint64 // messages of more than one datagram (UDP_GRO)
	truncated atomic.Uint64 // messages longer than MaxDatagram
}

// Listen makes the threads' reassemblers and opens the ports.
func Listen(cfg Config) (*Receiver, error) {
	if cfg.Ports < 1 || cfg.Ports&(cfg.Ports-1) != 0 || cfg.Threads < 1 || cfg.Threads > cfg.Ports {
		return nil, fmt.Errorf("recvnet: %d ports over %d threads: want 2^k ports, 1 to that many threads", cfg.Ports, cfg.Threads)
	}
	rx := &Receiver{cfg: cfg, threads: make([]*thread, cfg.Threads)}
	for i := range rx.threads {
		r, err := cfg.New()
		if err != nil {
			return nil, err
		}
		rx.threads[i] = &thread{r: r}
	}
	var err error
	if rx.conns, err = listenPorts(cfg.Listen, cfg.Ports); err != nil {
		return nil, err
	}
	return rx, nil
}

// Addr is the first port's address.
func (rx *Receiver) Addr() netip.AddrPort {
	return rx.conns[0].LocalAddr().(*net.UDPAddr).AddrPort()
}

// Run receives until ctx ends, then closes the ports and delivers what
// the reassemblers completed by then: the consumers outlast the readers.
func (rx *Receiver) Run(ctx context.Context) {
	var readers, consumers sync.WaitGroup
	readersDone, stopConsumers := context.WithCancel(context.Background())
	defer stopConsumers()
	for i, c := range rx.conns {
		t := rx.threads[i%len(rx.threads)]
		readers.Go(func() { rx.read(c, t) })
	}
	for _, t := range rx.threads {
		consumers.Go(func() { rx.consume(readersDone, t.r) })
	}
	<-ctx.Done()
	rx.Close() // ends the readers
	readers.Wait()
	stopConsumers()
	consumers.Wait()
}

// Close closes the ports (Run does when it ends).
func (rx *Receiver) Close() {
	for _, c := range rx.conns {
		c.Close()
	}
}

// Stats are the threads' counters, summed.
func (rx *Receiver) Stats() reasm.Stats {
	var sum reasm.Stats
	for _, t := range rx.threads {
		sum = Add(sum, t.r.Stats())
	}
	return sum
}

// Add is the sum of two sets of counters.
func Add(a, b reasm.Stats) reasm.Stats {
	a.Received += b.Received
	a.Reassembled += b.Reassembled
	a.TimedOut += b.TimedOut
	a.Evicted += b.Evicted
	a.Dequeued += b.Dequeued
	a.EnqueueErrors += b.EnqueueErrors
	a.Packets += b.Packets
	a.Bytes += b.Bytes
	for i := range a.Segments {
		a.Segments[i] += b.Segments[i]
	}
	return a
}

// Fill is the threads' mean queue fill, SendState's fill percent.
func (rx *Receiver) Fill() float64 {
	f := 0.0
	for _, t := range rx.threads {
		f += t.r.Fill()
	}
	return f / float64(len(rx.threads))
}

// LBHeaders is the number of datagrams that came with an LB header.
func (rx *Receiver) LBHeaders() uint64 { return rx.lbHeaders.Load() }

// Coalesced is the number of messages that brought more than one
// datagram (UDP_GRO), and Truncated the number the kernel cut at
// MaxDatagram.
func (rx *Receiver) Coalesced() (messages, truncated uint64) {
	return rx.coalesced.Load(), rx.truncated.Load()
}

// read hands c's datagrams to t's reassembler, a batch (one recvmmsg, one
// lock) at a time, a coalesced message's one by one, until c is closed,
// and drops the timed-out events when c is idle. It allocates nothing per
// datagram.
func (rx *Receiver) read(c *net.UDPConn, t *thread) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	// A Model frames each datagram where it arrived (Room in front of
	// it), reads the clock before each batch and publishes its counts
	// after it.
	inPlace, _ := t.r.(interface {
		FrameAt(src netip.Addr, buf []byte, off, n int) reasm.Reason
		Tick()
		Flush()
	})
	bufs, in := make([][]byte, ReadBatch), make([][]byte, ReadBatch)
	for i := range bufs {
		if inPlace != nil {
			bufs[i] = make([]byte, Room+MaxDatagram+packet.Headroom)
			in[i] = bufs[i][Room : Room+MaxDatagram]
		} else {
			in[i] = make([]byte, MaxDatagram)
		}
	}
	r := udpbatch.NewReceiver(in)
	if !rx.cfg.NoGRO {
		udpbatch.SetGRO(raw)
	}
	c.SetReadDeadline(time.Now().Add(expireEvery))
	for {
		n, err := r.Receive(raw, 0, 0)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.mu.Lock()
			t.r.Expire()
			t.mu.Unlock()
			c.SetReadDeadline(time.Now().Add(expireEvery))
			continue
		}
		if err != nil {
			return
		}
		if rx.cfg.Began != nil {
			rx.cfg.Began()
		}
		t.mu.Lock()
		if inPlace != nil {
			inPlace.Tick()
		}
		for i := range n {
			size, from, truncated, segment := r.Datagram(i)
			if !from.IsValid() {
				continue
			}
			if truncated {
				// Only a coalesced message can be longer than
				// MaxDatagram (the kernel's GRO past 64 KiB): its
				// whole datagrams are run, the cut one as it is
				// (the reassembler drops it, counted).
				rx.truncated.Add(1)
			}
			if segment == 0 || segment >= size {
				segment = size
			} else {
				rx.coalesced.Add(1)
			}
			src := from.Addr().Unmap()
			// The datagrams of a coalesced message one after the
			// other: the model writes each one's headers over the
			// end of the one before, which it has run.
			for off := 0; off < size; off += segment {
				b, lb := StripLB(in[i][off:min(off+segment, size)])
				if lb {
					rx.lbHeaders.Add(1)
				}
				if inPlace != nil {
					inPlace.FrameAt(src, bufs[i], Room+min(off+segment, size)-len(b), len(b))
				} else {
					t.r.Datagram(src, b)
				}
			}
		}
		if inPlace != nil {
			inPlace.Flush()
		}
		t.mu.Unlock()
	}
}

// StripLB returns a datagram's RE header and payload: past the LB header
// when a member that registered with keepLbHeader gets one ("LB", version
// 2 or 3; an RE header's first byte is 0x10), and whether it had one.
func StripLB(b []byte) ([]byte, bool) {
	if ejfat.LBHeader(b).Valid() {
		return b[ejfat.LBLen:], true
	}
	return b, false
}

// consume delivers r's complete events until ctx ends, then the ones left.
func (rx *Receiver) consume(ctx context.Context, r Reassembler) {
	for {
		ev, err := r.Dequeue(ctx)
		if err != nil {
			break
		}
		rx.cfg.Deliver(ev)
		r.Release(ev)
	}
	Drain(r, rx.cfg.Deliver)
}

// Drain hands the complete events waiting in r to deliver, and releases
// each when it returns.
func Drain(r Reassembler, deliver func(*reasm.Event)) {
	for ev, ok := r.TryDequeue(); ok; ev, ok = r.TryDequeue() {
		deliver(ev)
		r.Release(ev)
	}
}

// listenPorts opens n consecutive UDP ports from base's; from any free
// ones when its port is 0.
func listenPorts(base netip.AddrPort, n int) ([]*net.UDPConn, error) {
	if base.Port() != 0 {
		return openPorts(base, n)
	}
	var err error
	for range 100 {
		var c *net.UDPConn
		if c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(base)); err != nil {
			return nil, err
		}
		p := c.LocalAddr().(*net.UDPAddr).Port
		c.Close()
		if p+n > 65536 {
			continue
		}
		var conns []*net.UDPConn
		if conns, err = openPorts(netip.AddrPortFrom(base.Addr(), uint16(p)), n); err == nil {
			return conns, nil
		}
	}
	return nil, fmt.Errorf("recvnet: no %d free consecutive ports on %s: %w", n, base.Addr(), err)
}

// openPorts opens the n ports from base's, or none.
func openPorts(base netip.AddrPort, n int) ([]*net.UDPConn, error) {
	conns := make([]*net.UDPConn, 0, n)
	for i := range n {
		a := netip.AddrPortFrom(base.Addr(), base.Port()+uint16(i))
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(a))
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
		lbnet.SetReadBuffer(c, readBuffer)
		conns = append(conns, c)
	}
	return conns, nil
}
