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
// receives them coalesced (UDP_GRO). Pinned workers also report
// packets/cpu-s: the packets they received per second their threads ran
// (user and kernel time, the delivery to the members included), what a
// worker does with a core of its own, where the wall-clock packets/s is
// shared with the senders and the members on the same cores. Senders
// and members allocate nothing: allocs/op are the LB's. The baseline: the
// same one-datagram events framed as a worker frames them and run
// through the fast path in memory.
func BenchmarkLive(b *testing.B) {
	b.Run("in-memory", benchInMemory)
	for _, c := range []struct {
		segs int
		gso  bool
	}{{1, false}, {1, true}, {8, false}, {8, true}} {
		for _, n := range slices.Compact([]int{1, 2, runtime.NumCPU()}) {
			for _, pin := range []bool{false, true} {
				b.Run(fmt.Sprintf("segs=%d/gso=%v/workers=%d/pin=%v", c.segs, c.gso, n, pin), func(b *testing.B) { benchLive(b, n, c.segs, c.gso, pin) })
			}
		}
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
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		copy(buf[packet.Headroom+14+20+8:], ev)
		off, size := lbnet.Frame(buf, mac, src, lb, len(ev))
		if r := pl.Process(buf, off, size); r.Sink < 0 {
			b.Fatalf("dropped at %v", pl.DropSite(int(r.Drop)))
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "packets/s")
}

func benchLive(b *testing.B, workers, segs int, gso, pin bool) {
	members := []*counter{newCounter(b), newCounter(b)}
	lb, addr := newLB(b, workers, lbnet.Config{Pin: pin})
	setTables(b, lb, lbtest.Tables(ip(addr), lbtest.Dest{ID: 0, Port: members[0].port()}, lbtest.Dest{ID: 1, Port: members[1].port()}))
	stop := start(b, lb)
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
	for sent, i := 0, 0; sent < b.N; i++ {
		w, err := senders[i%len(senders)]()
		if err != nil {
			b.Fatal(err)
		}
		sent += w
	}
	b.StopTimer() // ns/op is the senders'; packets/s is the LB's
	received, last := waitIdle(members)
	stop()
	b.ReportMetric(float64(received)/last.Sub(start).Seconds(), "packets/s")
	b.ReportMetric(float64(received)/float64(b.N), "delivered")
	if pin {
		// What the LB can do on cores of its own: the senders and
		// members share the two with it.
		b.ReportMetric(float64(lb.Stats().Received)/lb.CPU().Seconds(), "packets/cpu-s")
	}
}

// counter is a member that counts what it receives (with recvmmsg, to
// keep up) and notes when the last datagram arrived.
type counter struct {
	conn *net.UDPConn
	n    atomic.Uint64
	last atomic.Int64 // UnixNano
}

func newCounter(b *testing.B) *counter {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Skip(err)
	}
	conn.SetReadBuffer(8 << 20)
	c := &counter{conn: conn}
	var done sync.WaitGroup
	done.Go(func() {
		read := batchReader(conn, 64)
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

func (c *counter) port() int { return c.conn.LocalAddr().(*net.UDPAddr).Port }

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
