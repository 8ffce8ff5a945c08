package recvnet

import (
	"bytes"
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/ejfat/reasmfast"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/frame"
)

// Model is a Reassembler that runs the Go code nsc generates from
// models/ejfat/reassembler.nsc (ejfat/reasmfast) on
// datagrams: each goes in as the frame the kernel received — Ethernet, IP
// and UDP headers rebuilt in front of it (UDP checksum 0 over IPv4: the
// kernel checked it) — and the model decides its fate by its own rules
// (its state declaration's timeout and caps, not --timeout).
type Model struct {
	mu    sync.Mutex // the pipeline and stats: receive thread, consumer and progress meet here
	pl    *reasmfast.Pipeline
	buf   []byte
	queue chan *reasm.Event
	stats reasm.Stats
}

// NewModel makes a Model on clock now (nil: time.Now) whose queue holds
// queue complete events.
func NewModel(now func() time.Time, queue int) (*Model, error) {
	pl, err := reasmfast.New(nil) // data_ports empty: every port a plain data port
	if err != nil {
		return nil, err
	}
	if now != nil {
		pl.SetClock(now)
	}
	return &Model{pl: pl, queue: make(chan *reasm.Event, queue)}, nil
}

// reasons maps the model's drops to the runtime's reasons, for one report.
var reasons = map[string]reasm.Reason{
	"stored": reasm.Placed, "duplicate": reasm.Duplicate, "overlap": reasm.Overlap, "late": reasm.Late,
	"length mismatch": reasm.LengthMismatch, "out of bounds": reasm.OutOfBounds, "zero length": reasm.ZeroLength,
	"too large": reasm.TooLarge, "truncated": reasm.Short,
}

func (m *Model) Datagram(src netip.Addr, b []byte) reasm.Reason {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Packets++
	m.stats.Bytes += uint64(len(b))
	frame := m.frame(src, b)
	r := m.pl.Process(frame, packet.Headroom, len(frame)-2*packet.Headroom)
	if r.Sink >= 0 {
		m.stats.Reassembled++
		re := ejfat.RE(b)
		ev := &reasm.Event{Key: reasm.Key{Src: src, DataID: re.DataID(), Number: re.EventNumber()}, Data: bytes.Clone(r.Data)}
		select {
		case m.queue <- ev:
		default:
			m.stats.EnqueueErrors++
		}
		m.stats.Segments[reasm.Completed]++
		return reasm.Completed
	}
	why, ok := reasons[m.pl.DropSite(int(r.Drop)).Reason]
	if !ok {
		why = reasm.BadHeader
	}
	m.stats.Segments[why]++
	return why
}

// frame rebuilds the frame of datagram b from src in m's buffer, with
// packet.Headroom on either side: to an unspecified address, ports 0, the
// UDP checksum 0 over IPv4 (the kernel checked it) and computed over IPv6
// (where it is not optional).
func (m *Model) frame(src netip.Addr, b []byte) []byte {
	to := netip.IPv4Unspecified()
	if !src.Is4() {
		to = netip.IPv6Unspecified()
	}
	d := frame.Datagram{Src: netip.AddrPortFrom(src, 0), Dst: netip.AddrPortFrom(to, 0), TTL: 64}
	hdr := d.HeaderLen()
	n := 2*packet.Headroom + hdr + len(b)
	if cap(m.buf) < n {
		m.buf = make([]byte, n)
	}
	f := m.buf[:n]
	copy(f[packet.Headroom+hdr:], b)
	d.Build(f[packet.Headroom : n-packet.Headroom])
	return f
}

func (m *Model) Expire() {} // the model's state expires as segments come

func (m *Model) Dequeue(ctx context.Context) (*reasm.Event, error) {
	select {
	case ev := <-m.queue:
		m.dequeued()
		return ev, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (m *Model) TryDequeue() (*reasm.Event, bool) {
	select {
	case ev := <-m.queue:
		m.dequeued()
		return ev, true
	default:
		return nil, false
	}
}

func (m *Model) dequeued() {
	m.mu.Lock()
	m.stats.Dequeued++
	m.mu.Unlock()
}

func (m *Model) Release(*reasm.Event) {}

func (m *Model) Fill() float64 { return float64(len(m.queue)) / float64(cap(m.queue)) }

// Stats are the runtime's counters, the events' from the model's state.
func (m *Model) Stats() reasm.Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	st := m.pl.States()[0]
	s.TimedOut, s.Evicted = st.TimedOut, st.Evicted
	s.Received = s.Reassembled + s.TimedOut + s.Evicted + uint64(st.InProgress())
	return s
}
