// Package lbnet runs an EJFAT LB fast path live on UDP sockets, the way a
// host without raw frame access runs it (the LinuxUDP PRG; use the fast
// paths generated for it, lbfast.NewSocket): the kernel receives and checks
// the datagrams addressed to the LB, a worker frames each one as the wire
// had it (Ethernet, IP and UDP headers rebuilt from the socket addresses),
// runs the frame through its fast path, and sends what the LB transmits to
// the address and port the LB wrote into it. The kernel builds the outgoing
// headers and checksums. Receive and send are batched (recvmmsg/sendmmsg
// through internal/udpbatch): datagrams the kernel coalesced (UDP_GRO)
// arrive in one buffer, and what a batch sends to one member goes as
// UDP_SEGMENT (GSO) messages.
//
// An LB runs one worker per socket, the sockets sharing one port
// (SO_REUSEPORT: the kernel spreads the senders over them), each worker
// with its own pipeline and counters. The workers share one table set,
// which SetTables replaces whole: a worker picks up the current set once
// per batch, so no datagram sees a mix of old and new tables.
//
// An LB may instead run on AF_XDP sockets (Config.XSK, internal/xsk), one
// worker each, with the HostRaw fast path (lbfast.New): the whole frame
// the wire had is run in place in the socket's UMEM, what the LB sends
// goes out of the same interface from the socket's tx ring, and what it
// drops goes back to the fill ring; frames longer than a chunk holds
// (XSKConfig) stay with the kernel and count as Oversize.
package lbnet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/internal/xsk"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/frame"
	"github.com/dragonet-go/nsc/packet/table"
)

const (
	// MaxUDPPayload is the largest UDP payload over IPv4 (65,535 bytes
	// less the IPv4 and UDP headers).
	MaxUDPPayload = 65535 - frame.IPv4MinLen - frame.UDPLen
	// MaxBatch is the most datagrams one recvmmsg or sendmmsg moves: the
	// kernel's UIO_MAXIOV, to which it cuts longer vectors silently.
	MaxBatch = 1024
	// DefaultBatch is the batch size when Config.Batch is 0.
	DefaultBatch = 256
)

// Config says how an LB runs.
type Config struct {
	// Conns are the sockets the LB receives on, one worker each (Listen
	// opens them).
	Conns []*net.UDPConn
	// XSK are AF_XDP sockets the LB receives whole frames on, one worker
	// each, instead of Conns: frames the LB forwards go back out of the
	// socket's interface, changed in place (New: lbfast.New, the HostRaw
	// fast path).
	XSK []*xsk.Socket
	// New makes a worker's fast path over a table set (lbfast.NewSocket
	// for one LB version).
	New func([]*table.Table) (fastpath.Pipeline, error)
	// Batch is how many messages one system call moves at most (1 to
	// MaxBatch; 0: DefaultBatch); of large ones (coalesced), a worker
	// receives about 1 MiB at a time.
	Batch int
	// MaxDatagram is the largest datagram forwarded (1 to MaxUDPPayload;
	// 0: MaxUDPPayload); the kernel truncates larger ones into the
	// receive buffers, which are this size, and they count as Oversize.
	MaxDatagram int
	// Pin runs worker i on one OS thread bound to the i-th CPU the
	// process may run on (modulo their number), away from the others';
	// LB.CPU counts the time those threads ran.
	Pin bool
}

// Check checks the ranges of Batch and MaxDatagram (New takes 0 for the
// defaults, Check does not).
func (c *Config) Check() error {
	switch {
	case c.Batch < 1 || c.Batch > MaxBatch:
		return fmt.Errorf("batch %d: must be 1 to %d (the kernel's limit on one recvmmsg)", c.Batch, MaxBatch)
	case c.MaxDatagram < 1 || c.MaxDatagram > MaxUDPPayload:
		return fmt.Errorf("max datagram %d: must be 1 to %d (the largest UDP payload over IPv4)", c.MaxDatagram, MaxUDPPayload)
	}
	return nil
}

// Stats count what workers did with the datagrams they received: each is
// forwarded (sendmmsg took it), dropped (by the LB), oversize, or a send
// error.
type Stats struct {
	Received, Forwarded, Dropped, Oversize, SendErrors uint64
}

func (s *Stats) add(o Stats) {
	s.Received += o.Received
	s.Forwarded += o.Forwarded
	s.Dropped += o.Dropped
	s.Oversize += o.Oversize
	s.SendErrors += o.SendErrors
}

// LB forwards the datagrams arriving on its sockets.
type LB struct {
	cfg     Config
	workers []runner
	current atomic.Pointer[tableSet]
}

// tableSet is one generation of tables, with one pipeline over them per
// worker and the MAC the workers frame datagrams with.
type tableSet struct {
	mac net.HardwareAddr
	pls []fastpath.Pipeline
}

// New makes an LB; give it tables with SetTables before Run.
func New(cfg Config) (*LB, error) {
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.MaxDatagram == 0 {
		cfg.MaxDatagram = MaxUDPPayload
	}
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("lbnet: %v", err)
	}
	if (len(cfg.Conns) == 0) == (len(cfg.XSK) == 0) || cfg.New == nil {
		return nil, errors.New("lbnet: no sockets to receive on (one of Config.Conns and Config.XSK) or no fast path (Config.New)")
	}
	lb := &LB{cfg: cfg}
	for i, c := range cfg.Conns {
		w, err := newWorker(lb, i, c)
		if err != nil {
			return nil, err
		}
		lb.workers = append(lb.workers, w)
	}
	for i, s := range cfg.XSK {
		lb.workers = append(lb.workers, newXSKWorker(lb, i, s))
	}
	return lb, nil
}

// SetTables makes ts, with mac as the LB's own MAC (the Ethernet
// destination of the frames rebuilt from datagrams), the tables every
// worker runs over from its next batch on. The tables must not change
// afterwards (load a new set instead). When the fast path refuses them,
// the LB keeps its tables and SetTables says why.
func (lb *LB) SetTables(ts []*table.Table, mac net.HardwareAddr) error {
	if len(mac) != 6 {
		return fmt.Errorf("lbnet: the LB's MAC must be 6 bytes, got %v", mac)
	}
	set := &tableSet{mac: mac, pls: make([]fastpath.Pipeline, len(lb.workers))}
	for i := range set.pls {
		pl, err := lb.cfg.New(ts)
		if err != nil {
			return err
		}
		set.pls[i] = pl
	}
	lb.current.Store(set)
	return nil
}

// Run forwards until ctx ends, then forwards what the sockets still hold
// (until each is empty or outpaces the LB) and returns; or until a socket
// fails.
func (lb *LB) Run(ctx context.Context) error {
	if lb.current.Load() == nil {
		return errors.New("lbnet: no tables (SetTables)")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(lb.workers))
	var wg sync.WaitGroup
	for i, w := range lb.workers {
		wg.Go(func() {
			errs[i] = w.run(ctx)
			if errs[i] != nil {
				cancel() // one socket failed: stop them all
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Stats are the workers' counts, summed; they may be read while the LB
// runs.
func (lb *LB) Stats() Stats {
	var s Stats
	for _, w := range lb.workers {
		s.add(w.stats())
	}
	return s
}

// CPU is the time the pinned workers' threads ran (Config.Pin; 0
// otherwise), in user space and in the kernel, counted when Run returns:
// the LB's own cost, whatever else shares the CPUs.
func (lb *LB) CPU() time.Duration {
	var d time.Duration
	for _, w := range lb.workers {
		d += time.Duration(w.common().count.cpu.Load())
	}
	return d
}

// Drops are the fast paths' drops by site, summed over every worker and
// table set; read them after Run has returned.
func (lb *LB) Drops() map[fastpath.DropSite]uint64 {
	drops := map[fastpath.DropSite]uint64{}
	for _, r := range lb.workers {
		w := r.common()
		for k, n := range w.drops {
			drops[k] += n
		}
		if w.set != nil {
			addDrops(drops, w.set.pls[w.id])
		}
	}
	return drops
}

// addDrops adds a pipeline's drops by site to drops.
func addDrops(drops map[fastpath.DropSite]uint64, pl fastpath.Pipeline) {
	pl.Each(func(kind, name, reason string, n uint64) {
		if kind == fastpath.CountDrop {
			drops[fastpath.DropSite{Node: name, Reason: reason}] += n
		}
	})
}

// OwnMAC finds the LB's own MAC in its tables: the first unicast value of
// an exact `ethernet.dst` key (the MAC filter's entries).
func OwnMAC(tables []*table.Table) (net.HardwareAddr, bool) {
	for _, t := range tables {
		for k, ks := range t.Spec().Keys {
			if ks.Name != "ethernet.dst" || ks.Kind != packet.Exact {
				continue
			}
			for _, e := range t.Entries() {
				v := e.Keys[k].Value.Lo
				if v>>40&1 == 0 { // not a group address
					mac := make(net.HardwareAddr, 8)
					binary.BigEndian.PutUint64(mac, v)
					return mac[2:], true
				}
			}
		}
	}
	return nil, false
}
