package lbnet_test

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
	"github.com/dragonet-go/nsc/internal/udpbatch"
	"github.com/dragonet-go/nsc/packet"
)

// BenchmarkLive forwards events (lb-2025 on LinuxUDP, to two members) on
// loopback through LBs of 1, 2 and runtime.NumCPU() workers (pinned to
// CPUs with pin), sent in batches of 64 with sendmmsg from eight sockets
// (which SO_REUSEPORT spreads over the workers), and reports the packets
// per second the members received (ns/op is the senders' time, who
// outpace the LB; the LB's socket drops what it cannot take, and
// delivered says how much got through). Events are one datagram of 24
// bytes each, alternating members (segs=1), or 8 segments of 1 KiB each,
// an event's segments one after the other as a sender sends them
// (segs=8): the LB sends those to one member with UDP_SEGMENT; with
// gso=true the senders send with UDP_SEGMENT too (an event's segments and
// the next events' of the same size, up to 64 a message), and the LB
// receives them coalesced (UDP_GRO). The members take what the LB sends
// as nsc recv's ports do, coalesced (UDP_GRO), so that on loopback the
// LB's UDP_SEGMENT messages reach them whole, as they would leave a NIC
// that segments UDP (USO); plain-members takes each datagram in a
// message of its own, and the kernel cuts each of the LB's messages up
// in the LB's thread. Pinned workers also report
// packets/cpu-s: the packets they received per second their threads ran
// (user and kernel time, the delivery to the members included), what a
// worker does with a core of its own, where the wall-clock packets/s is
// shared with the senders and the members on the same cores. With
// backlog, the LB starts once the senders are done and empties its
// sockets (64 MiB each; delivered is then the share they held) with no
// sender beside it, in full batches: its packets/s are its own, shared
// with the members only. Senders and members allocate nothing: allocs/op
// are the LB's. The baselines: the same one-datagram events framed as a
// worker frames them and run through the fast path in memory; and bare,
// the sockets alone (see startBare).
func BenchmarkLive(b *testing.B) {
	b.Run("in-memory", benchInMemory)
	for _, c := range []struct {
		segs int
		gso  bool
	}{{1, false}, {1, true}, {8, false}, {8, true}} {
		for _, n := range slices.Compact([]int{1, 2, runtime.NumCPU()}) {
			for _, pin := range []bool{false, true} {
				b.Run(fmt.Sprintf("segs=%d/gso=%v/workers=%d/pin=%v", c.segs, c.gso, n, pin), func(b *testing.B) {
					benchLive(b, c.segs, c.gso, pin, false, true, startLB(b, n, pin))
				})
			}
			b.Run(fmt.Sprintf("segs=%d/gso=%v/workers=%d/pin=true/plain-members", c.segs, c.gso, n), func(b *testing.B) {
				benchLive(b, c.segs, c.gso, true, false, false, startLB(b, n, true))
			})
		}
		b.Run(fmt.Sprintf("segs=%d/gso=%v/bare", c.segs, c.gso), func(b *testing.B) {
			benchLive(b, c.segs, c.gso, true, false, true, startBare(b))
		})
		for _, n := range slices.Compact([]int{1, 2, runtime.NumCPU()}) {
			b.Run(fmt.Sprintf("segs=%d/gso=%v/backlog/workers=%d", c.segs, c.gso, n), func(b *testing.B) {
				benchLive(b, c.segs, c.gso, true, true, true, startLB(b, n, true))
			})
		}
		b.Run(fmt.Sprintf("segs=%d/gso=%v/backlog/bare", c.segs, c.gso), func(b *testing.B) {
			benchLive(b, c.segs, c.gso, true, true, true, startBare(b))
		})
	}
}

func benchInMemory(b *testing.B) {
	lb := netip.MustParseAddrPort("127.0.0.1:19522")
	ts, mac := tables(b, lbtest.Tables(lb.Addr(), lbtest.Dest{ID: 0, Port: 40001}, lbtest.Dest{ID: 1, Port: 40002}))
	pl, err := lbfast.NewSocket("lb-2025", ts)
	if err != nil {
		b.Fatal(err)
	}
	ev := lbtest.Event(10, 0)
	buf := make([]byte, 2*packet.Headroom+64+len(ev))
	src := netip.MustParseAddrPort("127.0.0.1:40000")
	fr := lbnet.NewFramer(lb)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		copy(buf[lbnet.FrameRoom:], ev)
		off, size := fr.Frame(buf, mac, src, len(ev))
		if r := pl.Process(buf, off, size); r.Sink < 0 {
			b.Fatalf("dropped at %v", pl.DropSite(int(r.Drop)))
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "packets/s")
}

// forwarder is what BenchmarkLive sends through, on its sockets at addr:
// run starts it, and stop stops it and says how many datagrams it
// received and how long its threads ran (when pinned).
type forwarder struct {
	addr *net.UDPAddr
	run  func()
	stop func() (received uint64, cpu time.Duration)
}

// benchLive sends events to the forwarder that fwd makes, sending to
// members (taking datagrams coalesced with gro): running (live), or
// (backlog) not yet, until the senders have filled its sockets, which it
// then empties with no sender beside it.
func benchLive(b *testing.B, segs int, gso, pin, backlog, gro bool, fwd func(members [2]netip.AddrPort) forwarder) {
	members := []*counter{newCounter(b, gro), newCounter(b, gro)}
	f := fwd([2]netip.AddrPort{members[0].addr(), members[1].addr()})
	addr := f.addr
	if !backlog {
		f.run()
	}
	ds := make([][]byte, 64)
	for i := range ds {
		if segs == 1 {
			ds[i] = lbtest.Event(uint64(i), 0)
		} else {
			ds[i] = lbtest.Event(uint64(i/segs), 16+1024)
		}
	}
	var senders []func() (int, error)
	for range 8 {
		senders = append(senders, batchWriter(lbtest.Sender(b, addr), ds, gso))
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	sent := 0 // b.N, and the rest of the last batch
	for i := 0; sent < b.N; i++ {
		w, err := senders[i%len(senders)]()
		if err != nil {
			b.Fatal(err)
		}
		sent += w
	}
	b.StopTimer() // ns/op is the senders'; packets/s is the LB's
	if backlog {
		start = time.Now()
		f.run()
	}
	received, last := waitIdle(members)
	in, cpu := f.stop()
	b.ReportMetric(float64(received)/last.Sub(start).Seconds(), "packets/s")
	b.ReportMetric(float64(received)/float64(sent), "delivered")
	if pin {
		// What the forwarder can do on cores of its own: the senders
		// and members share the two with it.
		b.ReportMetric(float64(in)/cpu.Seconds(), "packets/cpu-s")
	}
}

// startLB makes an LB of n workers sending to members.
func startLB(b *testing.B, n int, pin bool) func(members [2]netip.AddrPort) forwarder {
	return func(members [2]netip.AddrPort) forwarder {
		lb, addr := newLB(b, n, lbnet.Config{Pin: pin})
		setTables(b, lb, lbtest.Tables(ip(addr), lbtest.Dest{ID: 0, Port: int(members[0].Port())}, lbtest.Dest{ID: 1, Port: int(members[1].Port())}))
		var stop func() error
		return forwarder{addr, func() { stop = start(b, lb) }, func() (uint64, time.Duration) {
			stop()
			return lb.Stats().Received, lb.CPU()
		}}
	}
}

// startBare makes BenchmarkLive's kernel baseline: a thread pinned like
// worker 0 that receives as a worker does (recvmmsg into buffers of the
// largest datagram, UDP_GRO) and sends each datagram unchanged, LB header
// and all, to the member its tick's parity names, as the LB's calendar
// does (sendmmsg, UDP_SEGMENT per member): the sockets' cost with no LB
// between them.
func startBare(b *testing.B) func(members [2]netip.AddrPort) forwarder {
	return func(members [2]netip.AddrPort) forwarder { return bare(b, members) }
}

func bare(b *testing.B, members [2]netip.AddrPort) forwarder {
	conns, err := lbnet.Listen(lbtest.Addr(b), 1)
	if err != nil {
		b.Fatal(err)
	}
	conn := conns[0]
	raw, _ := conn.SyscallConn()
	udpbatch.SetGRO(raw)
	bufs := make([][]byte, lbnet.DefaultBatch)
	for i := range bufs {
		bufs[i] = make([]byte, lbnet.MaxUDPPayload)
	}
	in, out := udpbatch.NewReceiver(bufs), udpbatch.NewSender(lbnet.DefaultBatch*udpbatch.MaxSegments)
	var received uint64
	var cpu time.Duration
	forward := func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := lbnet.Pin(0); err != nil {
			b.Error(err)
			return
		}
		start := lbnet.ThreadCPU()
		defer func() { cpu = lbnet.ThreadCPU() - start }()
		for {
			n, err := in.Receive(raw, 0, 0)
			if err != nil {
				return // closed
			}
			for i := range n {
				size, _, _, segment := in.Datagram(i)
				if segment == 0 {
					segment = size
				}
				for off := 0; off < size; off += segment {
					d := bufs[i][off:min(off+segment, size)]
					out.Add(d, members[d[15]&1]) // the tick's last byte
					received++
				}
			}
			out.Flush(raw)
		}
	}
	var done sync.WaitGroup
	stop := func() (uint64, time.Duration) {
		conn.Close()
		done.Wait()
		return received, cpu
	}
	b.Cleanup(func() { stop() })
	return forwarder{conn.LocalAddr().(*net.UDPAddr), func() { done.Go(forward) }, stop}
}

// counter is a member that counts what it receives (with recvmmsg, to
// keep up) and notes when the last datagram arrived.
type counter struct {
	conn *net.UDPConn
	n    atomic.Uint64
	last atomic.Int64 // UnixNano
}

func newCounter(b *testing.B, gro bool) *counter {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Skip(err)
	}
	return countOn(b, conn, gro)
}

// countOn is a counter on conn, closed when b ends; with gro it takes
// datagrams coalesced (batchReader).
func countOn(b *testing.B, conn *net.UDPConn, gro bool) *counter {
	lbnet.SetReadBuffer(conn, 64<<20) // as the LB's: the LB emptying a backlog outpaces them
	c := &counter{conn: conn}
	var done sync.WaitGroup
	done.Go(func() {
		read := batchReader(conn, 64, gro)
		for {
			k, err := read()
			if err != nil {
				return
			}
			c.n.Add(uint64(k))
			c.last.Store(time.Now().UnixNano())
		}
	})
	b.Cleanup(func() {
		conn.Close()
		done.Wait()
	})
	return c
}

func (c *counter) addr() netip.AddrPort { return c.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// waitIdle waits until the counters have counted nothing new for 300 ms
// and returns the sum and when the last datagram arrived.
func waitIdle(cs []*counter) (n uint64, last time.Time) {
	for {
		time.Sleep(300 * time.Millisecond)
		var sum uint64
		var at int64
		for _, c := range cs {
			sum += c.n.Load()
			at = max(at, c.last.Load())
		}
		if sum == n {
			return n, time.Unix(0, at)
		}
		n = sum
	}
}

// BenchmarkBatch is a worker's own work on one received batch, without
// the kernel: 256 one-datagram events alternating members (single), or
// 16 messages the kernel coalesced (UDP_GRO) of 56 datagrams each (7 events),
// 1 KiB segments per event (coalesced); each copied into the worker's
// buffers as recvmmsg copies it, framed, run through the fast path and
// queued for sendmmsg (the grouping into messages, done by the send, is
// not counted). The baseline in the same run: copy, the copy alone.
func BenchmarkBatch(b *testing.B) {
	lb, addr := newLB(b, 1, lbnet.Config{})
	setTables(b, lb, lbtest.Tables(ip(addr), lbtest.Dest{ID: 0, Port: 40001}, lbtest.Dest{ID: 1, Port: 40002}))
	src := netip.MustParseAddrPort("127.0.0.1:40000")
	for _, c := range []struct {
		name                string
		msgs, per, segments int
	}{{"single", 256, 1, 1}, {"coalesced", 16, 56, 8}} {
		msgs := make([][]byte, c.msgs)
		segment := 0
		for i := range msgs {
			for j := range c.per {
				if c.per == 1 {
					msgs[i] = lbtest.Event(uint64(i), 0)
					continue
				}
				segment = 16 + 1024
				msgs[i] = append(msgs[i], lbtest.Event(uint64((i*c.per+j)/c.segments), segment)...)
			}
		}
		packets := c.msgs * c.per
		// perPacket runs loop (b.Loop and one batch) on a thread of
		// its own and reports per packet its time and the time its thread ran
		// (cpu-ns/packet: what other jobs on the cores do not inflate).
		perPacket := func(b *testing.B, loop func()) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			start := lbnet.ThreadCPU()
			loop()
			cpu := lbnet.ThreadCPU() - start
			n := float64(b.N * packets)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/packet")
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/packet")
		}
		b.Run(c.name+"/copy", func(b *testing.B) {
			bufs := make([][]byte, len(msgs))
			for i, m := range msgs {
				bufs[i] = make([]byte, lbnet.FrameRoom+len(m)+packet.Headroom)
			}
			b.ReportAllocs()
			perPacket(b, func() {
				for b.Loop() {
					for i, m := range msgs {
						copy(bufs[i][lbnet.FrameRoom:], m)
					}
				}
			})
		})
		b.Run(c.name+"/lb", func(b *testing.B) {
			b.ReportAllocs()
			perPacket(b, func() {
				for b.Loop() {
					if n := lbnet.Batch(lb, msgs, src, segment); n != packets {
						b.Fatalf("%d of %d datagrams queued", n, packets)
					}
				}
			})
		})
	}
}
