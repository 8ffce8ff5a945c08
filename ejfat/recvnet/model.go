package recvnet

import (
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
// and UDP headers written in front of it (UDP checksum 0 over IPv4: the
// kernel checked it) — and the model decides its fate by its own rules
// (its state declaration's timeout and caps, not --timeout). A complete
// event is the state's buffer, kept out of it until Release gives it back.
type Model struct {
	mu     sync.Mutex // the pipeline and stats: receive thread, consumer and progress meet here
	pl     *reasmfast.Pipeline
	buf    []byte
	queue  chan *reasm.Event
	events []*reasm.Event // released ones, for the next complete events
	stats  reasm.Stats
	hdrs   headers
}

// Room is the bytes FrameAt needs free in front of a datagram: the
// headers it writes there and the generated code's headroom.
const Room = packet.Headroom + frame.EthernetLen + frame.IPv6Len + frame.UDPLen

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

// reasons are the runtime's reasons for the model's drop sites, for one
// report: the ones the runtime has by name, BadHeader for the rest.
var reasons = func() (r [len(reasmfast.DropSites)]reasm.Reason) {
	named := map[string]reasm.Reason{
		"stored": reasm.Placed, "duplicate": reasm.Duplicate, "overlap": reasm.Overlap, "late": reasm.Late,
		"length mismatch": reasm.LengthMismatch, "out of bounds": reasm.OutOfBounds, "zero length": reasm.ZeroLength,
		"too large": reasm.TooLarge, "truncated": reasm.Short,
	}
	for i, d := range reasmfast.DropSites {
		why, ok := named[d.Reason]
		if !ok {
			why = reasm.BadHeader
		}
		r[i] = why
	}
	return r
}()

// Datagram copies b behind room of its own and runs it (FrameAt).
func (m *Model) Datagram(src netip.Addr, b []byte) reasm.Reason {
	n := Room + len(b) + packet.Headroom
	if cap(m.buf) < n {
		m.buf = make([]byte, n)
	}
	copy(m.buf[Room:], b)
	return m.FrameAt(src, m.buf[:n], Room, len(b))
}

// FrameAt runs the datagram buf[off:off+n] from src, with its headers
// written in place in front of it: buf must have Room bytes before off
// and packet.Headroom after off+n, as a reader that receives into
// buf[Room:] leaves them. The datagram's bytes may change.
func (m *Model) FrameAt(src netip.Addr, buf []byte, off, n int) reasm.Reason {
	m.mu.Lock()
	m.stats.Packets++
	m.stats.Bytes += uint64(n)
	h := m.hdrs.write(src, buf[:off+n], off)
	r := m.pl.Process(buf, off-h, h+n)
	if r.Sink < 0 {
		why := reasons[r.Drop]
		m.stats.Segments[why]++
		m.mu.Unlock()
		return why
	}
	// The event's key from its completing segment's RE header: the graph
	// writes none of it and its pops move only the bytes in front of it.
	re := ejfat.RE(buf[off : off+n])
	m.stats.Reassembled++
	ev := m.event()
	ev.Key = reasm.Key{Src: src, DataID: re.DataID(), Number: re.EventNumber()}
	ev.Data = m.pl.States()[0].Keep()
	select {
	case m.queue <- ev:
	default:
		m.stats.EnqueueErrors++
		m.release(ev)
	}
	m.stats.Segments[reasm.Completed]++
	m.mu.Unlock()
	return reasm.Completed
}

// event is a released Event, or a new one.
func (m *Model) event() *reasm.Event {
	if k := len(m.events); k > 0 {
		ev := m.events[k-1]
		m.events = m.events[:k-1]
		return ev
	}
	return &reasm.Event{}
}

// release gives ev's buffer back to the state and keeps ev.
func (m *Model) release(ev *reasm.Event) {
	m.pl.States()[0].Reuse(ev.Data)
	*ev = reasm.Event{}
	m.events = append(m.events, ev)
}

// headers writes, in front of a datagram, the frame's headers the kernel
// took off: to an unspecified address, ports 0, the UDP checksum 0 over
// IPv4 (the kernel checked it) and computed over IPv6 (where it is not
// optional). Over IPv4 it keeps the last source's headers: the next
// datagram from it costs a copy and its lengths, the IPv4 checksum
// finished with the length (an event's segments come from one sender).
type headers struct {
	src netip.Addr // of b; invalid when b holds none
	b   [frame.EthernetLen + frame.IPv4MinLen + frame.UDPLen]byte
	sum uint32 // of b's IPv4 header but its length and checksum
}

// write writes the headers of the datagram f[off:] from src into the
// bytes before it, and returns their length.
func (h *headers) write(src netip.Addr, f []byte, off int) int {
	if !src.Is4() {
		d := frame.Datagram{Src: netip.AddrPortFrom(src, 0), Dst: netip.AddrPortFrom(netip.IPv6Unspecified(), 0), TTL: 64}
		n := d.HeaderLen()
		d.Build(f[off-n:])
		return n
	}
	if src != h.src {
		d := frame.Datagram{Src: netip.AddrPortFrom(src, 0), Dst: netip.AddrPortFrom(netip.IPv4Unspecified(), 0), TTL: 64}
		d.Build(h.b[:])
		ip := frame.IPv4(h.b[frame.EthernetLen:])
		ip.SetTotalLength(0)
		ip.SetChecksum(0)
		h.sum, h.src = packet.Sum(ip[:frame.IPv4MinLen], 0), src
	}
	hdr := (*[len(h.b)]byte)(f[off-len(h.b) : off])
	*hdr = h.b // an array's copy is inline moves, no memmove call
	ip := frame.IPv4(hdr[frame.EthernetLen:])
	total := uint16(len(f) - off + frame.IPv4MinLen + frame.UDPLen)
	ip.SetTotalLength(total)
	ip.SetChecksum(packet.Fold(h.sum + uint32(total)))
	frame.UDP(ip[frame.IPv4MinLen:]).SetLength(total - frame.IPv4MinLen)
	return len(h.b)
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

// Release gives ev's buffer back to the model's state.
func (m *Model) Release(ev *reasm.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.release(ev)
}

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
