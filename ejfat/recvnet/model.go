package recvnet

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/ejfat/reasmsock"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/frame"
)

// Model is a Reassembler that runs the Go code nsc generates from
// models/ejfat/reassembler.nsc embedded in the kernel's UDP sockets
// (models/ejfat/hosts.nsc, LinuxUDPRecv; ejfat/reasmsock): from the
// socket on, trusting what the kernel did before (parse, IPv4 header
// checksum, fragments, UDP length and checksum), on datagrams as a
// socket gives them, behind the Ethernet, IP and UDP headers the kernel
// took off, with the source address and the length (written in front of
// each, in place: the graph reads the source, the ports and the length
// there). The model decides a datagram's fate by its own rules (its state
// declaration's timeout and caps, not --timeout). A complete event is the
// state's buffer, kept out of it until Release gives it back.
//
// One goroutine, the receive thread, runs datagrams (Datagram, FrameAt,
// Tick, Flush); any may dequeue, release and read Stats. The receive
// thread takes no lock and makes no atomic write per datagram (an atomic
// store is a locked instruction on amd64): it counts in stats of its own
// and publishes them once a batch (Flush), and released events wait in a
// list of their own until it takes them back.
type Model struct {
	pl    *reasmsock.Pipeline
	st    *fastpath.State // the pipeline's one state
	clock func() time.Time
	buf   []byte
	queue chan *reasm.Event
	spare []*reasm.Event // released ones taken back, for the next complete events
	stats reasm.Stats    // the receive thread's
	hdrs  headers

	mu       sync.Mutex
	pub      reasm.Stats    // stats as of the last Flush
	released []*reasm.Event // by the application, not yet taken back
	waiting  atomic.Bool    // released is not empty
	dequeued atomic.Uint64
}

// Room is the bytes FrameAt needs free in front of a datagram: the
// headers it writes there and the generated code's headroom (the code
// pushes nothing, but a generated package asks for it).
const Room = packet.Headroom + frame.EthernetLen + frame.IPv6Len + frame.UDPLen

// NewModel makes a Model on clock now (nil: time.Now) whose queue holds
// queue complete events.
func NewModel(now func() time.Time, queue int) (*Model, error) {
	pl, err := reasmsock.New(nil) // data_ports empty: every port a plain data port
	if err != nil {
		return nil, err
	}
	if now != nil {
		pl.SetClock(now)
	}
	return &Model{pl: pl, st: pl.States()[0], clock: now, queue: make(chan *reasm.Event, queue)}, nil
}

// Tick reads the clock for the datagrams up to the next Tick: a reader
// calls it before each batch (one recvmmsg), as the runtime reads its
// clock once a batch. Without it the model's state reads the clock at
// every segment.
func (m *Model) Tick() {
	if m.clock == nil {
		m.st.Tick(time.Now())
		return
	}
	m.st.Tick(m.clock())
}

// reasons are the runtime's reasons for the model's drop sites, for one
// report: the ones the runtime has by name, BadHeader for the rest.
var reasons = func() (r [len(reasmsock.DropSites)]reasm.Reason) {
	named := map[string]reasm.Reason{
		"stored": reasm.Placed, "duplicate": reasm.Duplicate, "overlap": reasm.Overlap, "late": reasm.Late,
		"length mismatch": reasm.LengthMismatch, "out of bounds": reasm.OutOfBounds, "zero length": reasm.ZeroLength,
		"too large": reasm.TooLarge, "truncated": reasm.Short,
	}
	for i, d := range reasmsock.DropSites {
		why, ok := named[d.Reason]
		if !ok {
			why = reasm.BadHeader
		}
		r[i] = why
	}
	return r
}()

// Datagram copies b behind room of its own and runs it (FrameAt), a batch
// of its own: at the clock's time now, its counts published.
func (m *Model) Datagram(src netip.Addr, b []byte) reasm.Reason {
	m.Tick()
	n := Room + len(b) + packet.Headroom
	if cap(m.buf) < n {
		m.buf = make([]byte, n)
	}
	copy(m.buf[Room:], b)
	why := m.FrameAt(src, m.buf[:n], Room, len(b))
	m.Flush()
	return why
}

// FrameAt runs the datagram buf[off:off+n] from src, with its headers
// written in place in front of it: buf must have Room bytes before off
// and packet.Headroom after off+n, as a reader that receives into
// buf[Room:] leaves them. The datagram's bytes may change. Its counts are
// published at the next Flush.
func (m *Model) FrameAt(src netip.Addr, buf []byte, off, n int) reasm.Reason {
	if m.waiting.Load() {
		m.takeBack()
	}
	m.stats.Packets++
	m.stats.Bytes += uint64(n)
	h := m.hdrs.write(src, buf[:off+n], off)
	if at := m.hdrs.at; m.pl.At != at {
		m.pl.At = at
	}
	r := m.pl.Process(buf, off-h, h+n)
	if r.Sink < 0 {
		why := reasons[r.Drop]
		m.stats.Segments[why]++
		return why
	}
	// The event's key from its completing segment's RE header: the graph
	// writes none of it and its pops move only the bytes in front of it.
	re := ejfat.RE(buf[off : off+n])
	m.stats.Reassembled++
	ev := m.event()
	ev.Key = reasm.Key{Src: src, DataID: re.DataID(), Number: re.EventNumber()}
	ev.Data = m.st.Keep()
	select {
	case m.queue <- ev:
	default:
		m.stats.EnqueueErrors++
		m.reuse(ev)
	}
	m.stats.Segments[reasm.Completed]++
	return reasm.Completed
}

// Flush publishes the counts of the datagrams run so far, the events'
// from the model's state, for Stats: a reader calls it after each batch.
func (m *Model) Flush() {
	s, st := &m.stats, m.st
	s.TimedOut, s.Evicted = st.TimedOut, st.Evicted
	s.Received = s.Reassembled + s.TimedOut + s.Evicted + uint64(st.InProgress())
	m.mu.Lock()
	m.pub = *s
	m.mu.Unlock()
}

// event is a released Event, or a new one.
func (m *Model) event() *reasm.Event {
	if k := len(m.spare); k > 0 {
		ev := m.spare[k-1]
		m.spare = m.spare[:k-1]
		return ev
	}
	return &reasm.Event{}
}

// reuse gives ev's buffer back to the state and keeps ev (the receive
// thread's).
func (m *Model) reuse(ev *reasm.Event) {
	m.st.Reuse(ev.Data)
	*ev = reasm.Event{}
	m.spare = append(m.spare, ev)
}

// takeBack reuses the events the application released (the receive
// thread's).
func (m *Model) takeBack() {
	m.mu.Lock()
	for _, ev := range m.released {
		m.reuse(ev)
	}
	clear(m.released)
	m.released = m.released[:0]
	m.waiting.Store(false)
	m.mu.Unlock()
}

// headers writes, in front of a datagram, the frame's headers the kernel
// took off, as the socket's sink hands them to the generated code: from
// the source address, to an unspecified one, ports 0, the lengths the
// datagram's, no checksum (the kernel checked them, and the code trusts
// it). It keeps the last source's headers, so the next datagram from it
// costs their copy and two lengths (an event's segments come from one
// sender).
type headers struct {
	src netip.Addr // of v4 or v6; invalid when neither holds one
	v4  [frame.EthernetLen + frame.IPv4MinLen + frame.UDPLen]byte
	v6  [frame.EthernetLen + frame.IPv6Len + frame.UDPLen]byte
	at  *fastpath.At // where src's headers are: at4 or at6
}

// write writes the headers of the datagram f[off:] from src into the
// bytes before it, points at to where they are, and returns their length.
func (h *headers) write(src netip.Addr, f []byte, off int) int {
	if src != h.src {
		h.build(src)
	}
	n := uint16(len(f) - off + frame.UDPLen)
	if h.at == &at4 {
		hdr := (*[len(h.v4)]byte)(f[off-len(h.v4) : off])
		*hdr = h.v4 // an array's copy is inline moves, no memmove call
		ip := frame.IPv4(hdr[frame.EthernetLen:])
		ip.SetTotalLength(n + frame.IPv4MinLen)
		frame.UDP(ip[frame.IPv4MinLen:]).SetLength(n)
		return len(h.v4)
	}
	hdr := (*[len(h.v6)]byte)(f[off-len(h.v6) : off])
	*hdr = h.v6
	ip := frame.IPv6(hdr[frame.EthernetLen:])
	ip.SetPayloadLength(n)
	frame.UDP(ip[frame.IPv6Len:]).SetLength(n)
	return len(h.v6)
}

// build makes the headers of datagrams from src.
func (h *headers) build(src netip.Addr) {
	d := frame.Datagram{Src: netip.AddrPortFrom(src, 0), TTL: 64}
	if src.Is4() {
		d.Dst = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
		d.Build(h.v4[:])
		h.at = &at4
	} else {
		d.Dst = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
		d.ZeroIPv6Checksum = true
		d.Build(h.v6[:])
		h.at = &at6
	}
	h.src = src
}

// at4 and at6 are where write puts the headers, for the generated code
// (read only).
var at4, at6 = sockAt(false), sockAt(true)

// sockAt is where write puts the headers: Ethernet, IPv4 or IPv6, UDP,
// the cursor behind them.
func sockAt(v6 bool) fastpath.At {
	at := fastpath.NewAt()
	hs := func(name string) int {
		h, _ := reasmsock.Schema.Header(name)
		return h.ID
	}
	at.Off[hs("ethernet")], at.Len[hs("ethernet")] = 0, frame.EthernetLen
	ip, n := hs("ipv4"), frame.IPv4MinLen
	if v6 {
		ip, n = hs("ipv6"), frame.IPv6Len
	}
	at.Off[ip], at.Len[ip] = frame.EthernetLen, n
	at.Off[hs("udp")], at.Len[hs("udp")] = frame.EthernetLen+n, frame.UDPLen
	at.Cur = frame.EthernetLen + n + frame.UDPLen
	return at
}

// Expire publishes the counts: the model's state expires as segments come.
func (m *Model) Expire() { m.Flush() }

func (m *Model) Dequeue(ctx context.Context) (*reasm.Event, error) {
	select {
	case ev := <-m.queue:
		m.dequeued.Add(1)
		return ev, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (m *Model) TryDequeue() (*reasm.Event, bool) {
	select {
	case ev := <-m.queue:
		m.dequeued.Add(1)
		return ev, true
	default:
		return nil, false
	}
}

// Release gives ev's buffer back to the model's state: the receive
// thread takes it back at its next datagram.
func (m *Model) Release(ev *reasm.Event) {
	m.mu.Lock()
	m.released = append(m.released, ev)
	m.waiting.Store(true)
	m.mu.Unlock()
}

func (m *Model) Fill() float64 { return float64(len(m.queue)) / float64(cap(m.queue)) }

// Stats are the runtime's counters as of the last Flush.
func (m *Model) Stats() reasm.Stats {
	m.mu.Lock()
	s := m.pub
	m.mu.Unlock()
	s.Dequeued = m.dequeued.Load()
	return s
}
