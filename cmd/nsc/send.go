package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/segment"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/internal/udpbatch"
)

// The Ethernet addresses of the frames nsc send --pcap writes: a locally
// administered sender and the LB MAC of the shipped tables.
var (
	sendSrcMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	sendDstMAC = net.HardwareAddr{0x00, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
)

// pcapEpoch is the first frame's timestamp in nsc send --pcap: fixed, so
// the same command line writes the same file.
var pcapEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// sendOpts is nsc send's command line.
type sendOpts struct {
	to, from, sync, pcap string
	lb                   string
	events               uint64
	size, mtu            int
	rate                 float64
	dataID               uint
	ins                  []string
	json                 bool
	srcPortFromTick      bool
	gso                  bool
}

func runSend(e *env, args []string) error {
	var o sendOpts
	fs := newFlags("send", e)
	fs.StringVar(&o.to, "to", "", "the LB's data address and port (or a receiver's)")
	fs.StringVar(&o.from, "from", "", "the sender's address and port (default: the kernel's choice; with --pcap 127.0.0.1:50000 or [::1]:50000)")
	fs.StringVar(&o.lb, "lb", "v2", "LB header version: v2 or v3")
	fs.BoolVar(&o.gso, "gso", false, "send an event's segments as UDP_SEGMENT messages, which the kernel or NIC cuts (a veth does not: an XDP LB behind one sees them uncut)")
	fs.Uint64Var(&o.events, "events", 0, "synthetic events to send (0: until SIGINT or SIGTERM)")
	fs.IntVar(&o.size, "size", 1<<20, "bytes per synthetic event")
	fs.IntVar(&o.mtu, "mtu", 9000, "path MTU: the longest IP packet")
	fs.Float64Var(&o.rate, "rate", 0, "events per second (0: as fast as the socket takes them)")
	fs.UintVar(&o.dataID, "data-id", 0, "the events' data id (0 to 65535)")
	fs.StringVar(&o.sync, "sync", "", "the control plane's sync address: a sync message once a second and at the end")
	fs.Func("in", "a file to send as one event (repeatable; files after --in too)", func(s string) error {
		o.ins = append(o.ins, s)
		return nil
	})
	fs.StringVar(&o.pcap, "pcap", "", "write Ethernet/IP/UDP frames to this pcap instead of sending")
	fs.BoolVar(&o.json, "json", false, "print the summary as JSON (docs/json.md)")
	fs.BoolVar(&o.srcPortFromTick, "src-port-from-tick", false, "with --pcap: each frame's UDP source port is the low 16 bits of its tick (LAG entropy, seed 000)")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 && len(o.ins) == 0 {
		return usagef("unexpected arguments %q (files to send follow --in)", rest)
	}
	o.ins = append(o.ins, rest...)
	cfg, err := o.check()
	if err != nil {
		return err
	}
	src := o.source()
	sink, err := o.sink(&cfg)
	if err != nil {
		return err
	}
	defer sink.abort()
	seg, err := segment.New(cfg)
	if err != nil {
		return usagef("%v", err)
	}
	var syncConn net.Conn
	if o.sync != "" {
		if syncConn, err = net.Dial("udp", o.sync); err != nil {
			return usagef("--sync: %v", err)
		}
		defer syncConn.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := &sender{seg: seg, sink: sink, dataID: uint16(o.dataID)}
	start := time.Now()
	err = s.run(ctx, e, src, o.rate, syncConn)
	d := time.Since(start)
	if err == nil {
		err = sink.commit()
	}
	var refused uint64
	if u, ok := sink.(*udpSink); ok {
		refused = u.refused
	}
	if o.json {
		err = errors.Join(err, printJSON(e.stdout, s.summaryJSON(d, o.pcap, refused)))
	} else {
		s.summary(e.stdout, d, o.pcap)
	}
	if refused > 0 {
		fmt.Fprintf(e.stderr, "nsc send: %s refused datagrams %d times (ICMP port unreachable): is anything listening?\n", cfg.Dst, refused)
	}
	return err
}

// sink opens the pcap or the socket the segments go to, and completes cfg
// with the source and, for a pcap, the frame settings.
func (o *sendOpts) sink(cfg *segment.Config) (segmentSink, error) {
	room := segment.EthLen + o.mtu // a frame's: more than a datagram needs
	if o.pcap == "" {
		u, err := dialSink(o.from, cfg.Dst, room, o.gso)
		if err != nil {
			return nil, err
		}
		cfg.Src = u.local
		return u, nil
	}
	if err := refuseOverwrite(o.ins, o.pcap); err != nil {
		return nil, err
	}
	src, err := pcapSource(o.from, cfg.Dst.Addr())
	if err != nil {
		return nil, err
	}
	cfg.Src, cfg.Frames, cfg.SrcMAC, cfg.DstMAC = src, true, sendSrcMAC, sendDstMAC
	cfg.SrcPortFromTick = o.srcPortFromTick
	return newPcapSink(o.pcap, o.rate, room)
}

// check checks the command line and returns the segmenter's config, less
// the source and the frame settings.
func (o *sendOpts) check() (segment.Config, error) {
	var cfg segment.Config
	switch {
	case o.to == "":
		return cfg, usagef("--to is required")
	case o.lb != "v2" && o.lb != "v3":
		return cfg, usagef("--lb %s: want v2 or v3", o.lb)
	case o.srcPortFromTick && o.pcap == "":
		return cfg, usagef("--src-port-from-tick goes with --pcap: a UDP socket sends from its one port")
	case o.dataID > 0xffff:
		return cfg, usagef("--data-id %d: must be 0 to 65535", o.dataID)
	case len(o.ins) == 0 && (o.size < 1 || uint64(o.size) > 0xffffffff):
		return cfg, usagef("--size %d: must be 1 to 4294967295", o.size)
	case o.rate < 0:
		return cfg, usagef("--rate %g: must not be negative", o.rate)
	case o.pcap != "" && o.sync != "":
		return cfg, usagef("--sync sends; --pcap does not")
	case o.pcap != "" && segment.EthLen+o.mtu > 65536:
		return cfg, usagef("--mtu %d: a pcap's frames hold at most 65536 bytes", o.mtu)
	case len(o.ins) > 0 && o.events != 0:
		return cfg, usagef("--events counts synthetic events; --in sends one per file")
	}
	to, err := resolveUDP(o.to)
	if err != nil {
		return cfg, usagef("--to: %v", err)
	}
	return segment.Config{MTU: o.mtu, LBVersion: o.lb[1] - '0', Dst: to}, nil
}

// source returns the events to send: the files, or synthetic ones.
func (o *sendOpts) source() eventSource {
	if len(o.ins) > 0 {
		return &fileEvents{files: o.ins}
	}
	return &syntheticEvents{n: o.events, buf: make([]byte, o.size)}
}

func resolveUDP(s string) (netip.AddrPort, error) {
	a, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		return netip.AddrPort{}, err
	}
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// pcapSource is the frames' source: --from, or port 50000 on the loopback
// address of the destination's family.
func pcapSource(from string, dst netip.Addr) (netip.AddrPort, error) {
	if from != "" {
		src, err := resolveUDP(from)
		if err != nil {
			return src, usagef("--from: %v", err)
		}
		return src, nil
	}
	if dst.Is6() {
		return netip.AddrPortFrom(netip.IPv6Loopback(), 50000), nil
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 50000), nil
}

// eventSource yields the events to send, numbered from 0.
type eventSource interface {
	// next returns event number n's bytes, valid until the next call, or
	// io.EOF after the last.
	next(n uint64, dataID uint16) ([]byte, error)
}

// syntheticEvents are n events (0: no end) of segment.Fill's content.
type syntheticEvents struct {
	n   uint64
	buf []byte
}

func (s *syntheticEvents) next(n uint64, dataID uint16) ([]byte, error) {
	if s.n != 0 && n >= s.n {
		return nil, io.EOF
	}
	segment.Fill(s.buf, n, dataID)
	return s.buf, nil
}

// fileEvents are files, one event each, in order.
type fileEvents struct{ files []string }

func (f *fileEvents) next(n uint64, _ uint16) ([]byte, error) {
	if n >= uint64(len(f.files)) {
		return nil, io.EOF
	}
	b, err := os.ReadFile(f.files[n])
	if err == nil && len(b) == 0 {
		err = fmt.Errorf("%s: empty: an event holds at least one byte", f.files[n])
	}
	return b, err
}

// segmentSink takes the segments: a socket sends them, a batch at a time;
// a pcap collects them until commit.
type segmentSink interface {
	// room is where the next segment goes.
	room() []byte
	// put takes the segment of n bytes just written into room, of event.
	put(n int, event uint64) error
	// flush sends the segments put and not yet sent.
	flush() error
	commit() error
	abort()
}

// sendBatch is how many datagrams one sendmmsg sends.
const sendBatch = 32

// udpSink sends the segments as datagrams on a connected socket,
// sendBatch to a system call; with --gso an event's segments (of one size
// but the last) as UDP_SEGMENT messages where the kernel takes them.
type udpSink struct {
	conn  *net.UDPConn
	raw   syscall.RawConn
	out   *udpbatch.Sender
	local netip.AddrPort
	bufs  [][]byte
	// refused counts the ICMP port unreachables the socket reported (a
	// send fails with ECONNREFUSED once for the datagrams before it): a
	// datagram sender carries on, as if they were lost on the way.
	refused uint64
}

func dialSink(from string, to netip.AddrPort, maxLen int, gso bool) (*udpSink, error) {
	var laddr *net.UDPAddr
	if from != "" {
		a, err := net.ResolveUDPAddr("udp", from)
		if err != nil {
			return nil, usagef("--from: %v", err)
		}
		laddr = a
	}
	c, err := net.DialUDP("udp", laddr, net.UDPAddrFromAddrPort(to))
	if err != nil {
		return nil, err
	}
	c.SetWriteBuffer(4 << 20) // at most net.core.wmem_max: best effort
	raw, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	la := c.LocalAddr().(*net.UDPAddr).AddrPort()
	u := &udpSink{conn: c, raw: raw, out: udpbatch.NewSender(sendBatch), local: netip.AddrPortFrom(la.Addr().Unmap(), la.Port()),
		bufs: make([][]byte, sendBatch)}
	u.out.GSO = gso
	for i := range u.bufs {
		u.bufs[i] = make([]byte, maxLen)
	}
	return u, nil
}

func (u *udpSink) room() []byte { return u.bufs[u.out.Len()] }

func (u *udpSink) put(n int, _ uint64) error {
	u.out.Add(u.bufs[u.out.Len()][:n], netip.AddrPort{}) // to the connected peer
	if u.out.Len() == u.out.Cap() {
		return u.flush()
	}
	return nil
}

func (u *udpSink) flush() error {
	for {
		_, err := u.out.Flush(u.raw)
		if errors.Is(err, syscall.ECONNREFUSED) {
			u.refused++ // reported, and cleared: the retry sends
			continue
		}
		if err != nil {
			u.out.Reset()
		}
		return err
	}
}

func (u *udpSink) commit() error { return errors.Join(u.flush(), u.conn.Close()) }
func (u *udpSink) abort()        { u.conn.Close() }

// pcapSink writes frames stamped at their event's time at the rate, at
// least 1 µs after the frame before: the same run writes the same file.
type pcapSink struct {
	w    *pcapio.Writer
	rate float64
	at   time.Duration // the last frame's time after pcapEpoch
	buf  []byte
}

func newPcapSink(path string, rate float64, maxLen int) (*pcapSink, error) {
	w, err := pcapio.Create(path)
	if err != nil {
		return nil, err
	}
	return &pcapSink{w: w, rate: rate, buf: make([]byte, maxLen)}, nil
}

func (p *pcapSink) room() []byte { return p.buf }

func (p *pcapSink) put(n int, event uint64) error {
	p.at += time.Microsecond
	if p.rate > 0 {
		p.at = max(p.at, time.Duration(float64(event)/p.rate*1e9))
	}
	return p.w.WritePacket(gopacket.CaptureInfo{Timestamp: pcapEpoch.Add(p.at)}, p.buf[:n])
}

func (p *pcapSink) flush() error  { return nil }
func (p *pcapSink) commit() error { return p.w.Commit() }
func (p *pcapSink) abort()        { p.w.Abort() }

// sender cuts events and hands their segments to a sink, counting.
type sender struct {
	seg    *segment.Segmenter
	sink   segmentSink
	dataID uint16
	// What was sent, for the progress and sync goroutine and the summary.
	events, segments, bytes atomic.Uint64
}

// run sends every event of src (until ctx ends), paced at rate events/s
// if rate > 0; once a second it reports progress on stderr and, with a
// sync connection, sends a sync message, and one more at the end.
func (s *sender) run(ctx context.Context, e *env, src eventSource, rate float64, syncConn net.Conn) error {
	done := make(chan struct{})
	ticks := make(chan struct{})
	go func() {
		defer close(ticks)
		s.everySecond(e, syncConn, done)
	}()
	start := time.Now()
	err := s.send(ctx, src, rate)
	close(done)
	<-ticks
	if syncConn != nil {
		s.sendSync(syncConn, float64(s.events.Load())/time.Since(start).Seconds()) // the average
	}
	return err
}

func (s *sender) send(ctx context.Context, src eventSource, rate float64) error {
	start := time.Now()
	for n := uint64(0); ; n++ {
		if err := pace(ctx, start, n, rate); err != nil {
			return nil // stopped by a signal: not an error
		}
		ev, err := src.next(n, s.dataID)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.event(ev, n); err != nil {
			return err
		}
	}
}

// pace waits until event n's time at rate events/s after start; an error
// when ctx ends first.
func pace(ctx context.Context, start time.Time, n uint64, rate float64) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if rate <= 0 {
		return nil
	}
	wait := time.Until(start.Add(time.Duration(float64(n) / rate * 1e9)))
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// event sends one event's segments; they are counted once all are sent.
func (s *sender) event(ev []byte, n uint64) error {
	if err := s.seg.Start(ev, n, s.dataID); err != nil {
		return err
	}
	segs := uint64(0)
	for ; ; segs++ {
		l, err := s.seg.Next(s.sink.room())
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = s.sink.put(l, n)
		}
		if err != nil {
			return fmt.Errorf("event %d: %w", n, err)
		}
	}
	if err := s.sink.flush(); err != nil {
		return fmt.Errorf("event %d: %w", n, err)
	}
	s.segments.Add(segs)
	s.bytes.Add(uint64(len(ev)))
	s.events.Add(1)
	return nil
}

// everySecond prints progress and sends sync messages until done.
func (s *sender) everySecond(e *env, syncConn net.Conn, done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	start, last := time.Now(), uint64(0)
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			n := s.events.Load()
			if syncConn != nil {
				s.sendSync(syncConn, float64(n-last))
			}
			last = n
			fmt.Fprintf(e.stderr, "nsc send: %d events, %d segments, %.3f Gbps\n", n, s.segments.Load(),
				gbps(s.bytes.Load(), now.Sub(start)))
		}
	}
}

// sendSync sends a sync message with the latest event number sent and
// the rate in Hz; like the data, best effort (a refused one is not an
// error).
func (s *sender) sendSync(c net.Conn, rate float64) {
	var m [ejfat.SyncLen]byte
	latest := uint64(0)
	if n := s.events.Load(); n > 0 {
		latest = n - 1
	}
	ejfat.Sync(m[:]).Encode(uint32(s.dataID), latest, uint32(rate), uint64(time.Now().UnixNano()))
	c.Write(m[:])
}

// summary says what was sent, or written to pcap (no rate: nothing
// crossed a network).
func (s *sender) summary(w io.Writer, d time.Duration, pcap string) {
	n, b := s.events.Load(), s.bytes.Load()
	if pcap != "" {
		fmt.Fprintf(w, "wrote %d events, %d segments, %d bytes to %s\n", n, s.segments.Load(), b, pcap)
		return
	}
	fmt.Fprintf(w, "sent %d events, %d segments, %d bytes in %.3fs: %.0f events/s, %.3f Gbps\n",
		n, s.segments.Load(), b, d.Seconds(), float64(n)/d.Seconds(), gbps(b, d))
}

// gbps is bytes over d in 10^9 bits per second.
func gbps(bytes uint64, d time.Duration) float64 { return float64(bytes) * 8 / d.Seconds() / 1e9 }
