package lbnet_test

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
	"github.com/dragonet-go/nsc/packet/table"
)

// wait bounds every wait for a datagram: a failure, not a measurement.
const wait = 5 * time.Second

// tables loads an lb-2025 table script, failing the test if it is bad.
func tables(t testing.TB, script string) ([]*table.Table, net.HardwareAddr) {
	t.Helper()
	ts, err := lbfast.Tables("lb-2025", "test.tables", strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	mac, ok := lbnet.OwnMAC(ts)
	if !ok || mac.String() != "00:aa:bb:cc:dd:ee" {
		t.Fatalf("OwnMAC = %v, %v", mac, ok)
	}
	return ts, mac
}

// newLB makes an lb-2025 LB with workers sockets on a fresh loopback
// address; set its tables with setTables.
func newLB(t testing.TB, workers int, cfg lbnet.Config) (*lbnet.LB, *net.UDPAddr) {
	t.Helper()
	conns, err := lbnet.Listen(lbtest.Addr(t), workers)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		t.Cleanup(func() { c.Close() })
	}
	cfg.Conns = conns
	cfg.New = func(ts []*table.Table) (fastpath.Pipeline, error) { return lbfast.NewSocket("lb-2025", ts) }
	lb, err := lbnet.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lb, conns[0].LocalAddr().(*net.UDPAddr)
}

func setTables(t testing.TB, lb *lbnet.LB, script string) {
	t.Helper()
	if err := lb.SetTables(tables(t, script)); err != nil {
		t.Fatal(err)
	}
}

// start runs lb until the test ends (or stop is called).
func start(t testing.TB, lb *lbnet.LB) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- lb.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// sendEvents sends events 0 to n-1 to addr from four senders in turn
// (which SO_REUSEPORT spreads over the workers).
func sendEvents(t *testing.T, addr *net.UDPAddr, n int) {
	t.Helper()
	var senders []*net.UDPConn
	for range 4 {
		senders = append(senders, lbtest.Sender(t, addr))
	}
	for tick := range uint64(n) {
		if _, err := senders[tick%4].Write(lbtest.Event(tick, 0)); err != nil {
			t.Fatal(err)
		}
		if tick%32 == 31 {
			time.Sleep(time.Millisecond) // stay within the socket buffers
		}
	}
}

func ip(a *net.UDPAddr) netip.Addr { return a.AddrPort().Addr() }

// TestLiveLoopback sends events from four senders through an LB with two
// workers (pinned to CPUs) to two members and checks every one arrived, at the member its
// tick's calendar slot names, with the LB header removed, and that the
// workers' CPU time was counted.
func TestLiveLoopback(t *testing.T) {
	const n = 400
	m := [2]*lbtest.Member{lbtest.NewMember(t, 0), lbtest.NewMember(t, 1)}
	lb, addr := newLB(t, 2, lbnet.Config{Batch: 16, Pin: true})
	setTables(t, lb, lbtest.Tables(ip(addr), m[0].Dest(), m[1].Dest()))
	stop := start(t, lb)
	sendEvents(t, addr, n)
	for i := range n {
		got := i % 2 // the two members get n/2 each
		d, ok := m[got].Next(wait)
		if !ok {
			t.Fatalf("member %d: %d of %d events arrived (%+v, drops %v)", got, i/2, n/2, lb.Stats(), lb.Drops())
		}
		tick, ok := lbtest.Tick(d)
		if !ok || int(tick%2) != got {
			t.Errorf("member %d got %q: not one of its events with the LB header removed", got, d)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if s := lb.Stats(); s != (lbnet.Stats{Received: n, Forwarded: n}) {
		t.Errorf("stats %+v, want %d received and forwarded", s, n)
	}
	if lb.CPU() <= 0 {
		t.Errorf("CPU %v: the pinned workers' time not counted", lb.CPU())
	}
}

// TestOversize: a datagram larger than MaxDatagram is counted oversize
// and not forwarded (the kernel truncates it into the receive buffer and
// says so); with the default, the largest IPv4 UDP datagram is forwarded
// whole.
func TestOversize(t *testing.T) {
	m := lbtest.NewMember(t, 0)
	for _, c := range []struct {
		max, size int
		oversize  bool
	}{
		{9000, 9500, true},
		{9000, 9000, false},
		{0, 9500, false},
		{0, lbnet.MaxUDPPayload, false},
	} {
		lb, addr := newLB(t, 1, lbnet.Config{MaxDatagram: c.max, Batch: 4})
		setTables(t, lb, lbtest.Tables(ip(addr), m.Dest(), m.Dest()))
		stop := start(t, lb)
		s := lbtest.Sender(t, addr)
		big, small := lbtest.Event(1, c.size), lbtest.Event(2, 0)
		for _, ev := range [][]byte{big, small} {
			if _, err := s.Write(ev); err != nil {
				t.Fatal(err)
			}
		}
		// One sender, one socket: the LB handles them in order, so the
		// big one is done when the small one arrives.
		var got [][]byte
		for {
			d, ok := m.Next(wait)
			if !ok {
				t.Fatalf("max %d, %d bytes: the small event did not arrive (%+v)", c.max, c.size, lb.Stats())
			}
			got = append(got, d)
			if tick, _ := lbtest.Tick(d); tick == 2 {
				break
			}
		}
		stop()
		want := lbnet.Stats{Received: 2, Forwarded: 2}
		wantGot := [][]byte{big[16:], small[16:]} // the LB header removed
		if c.oversize {
			want = lbnet.Stats{Received: 2, Forwarded: 1, Oversize: 1}
			wantGot = wantGot[1:]
		}
		if st := lb.Stats(); st != want {
			t.Errorf("max %d, %d bytes: stats %+v, want %+v", c.max, c.size, st, want)
		}
		if !slices.EqualFunc(got, wantGot, bytes.Equal) {
			t.Errorf("max %d, %d bytes: the member got %d datagrams of %v bytes, want %d", c.max, c.size, len(got), lens(got), len(wantGot))
		}
	}
}

func lens(ds [][]byte) []int {
	var ns []int
	for _, d := range ds {
		ns = append(ns, len(d))
	}
	return ns
}

// TestStopDrains: what the socket holds when the LB stops is forwarded.
// The datagrams are sent before the LB runs, and it runs already stopped;
// there are six batches of them, so that the last read finds the socket
// empty. Of large datagrams, after a first read of a whole batch, the
// worker reads fewer at a time (about 1 MiB), and still reads on until
// the socket is empty.
func TestStopDrains(t *testing.T) {
	for _, c := range []struct{ n, batch, size int }{{48, 8, 0}, {100, 64, 30000}} {
		m := lbtest.NewMember(t, 0)
		lb, addr := newLB(t, 1, lbnet.Config{Batch: c.batch})
		setTables(t, lb, lbtest.Tables(ip(addr), m.Dest(), m.Dest()))
		s := lbtest.Sender(t, addr)
		for tick := range uint64(c.n) {
			if _, err := s.Write(lbtest.Event(tick, c.size)); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := lb.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if st := lb.Stats(); st != (lbnet.Stats{Received: uint64(c.n), Forwarded: uint64(c.n)}) {
			t.Errorf("%d-byte datagrams: stats %+v, want %d received and forwarded", c.size, st, c.n)
		}
		if c.size > 0 {
			continue // the member's socket need not hold them all
		}
		for i := range c.n {
			if _, ok := m.Next(wait); !ok {
				t.Fatalf("%d of %d events arrived", i, c.n)
			}
		}
	}
}

// TestSetTablesWhileForwarding swaps two table sets, each sending every
// event to one member (member 0 in one, 1 in the other; each set lacks the
// other's member, so a frame that met the calendar of one set and the
// member table of the other would be dropped), thousands of times while
// two workers forward. Every event arrives at one of the two members, and
// none is dropped.
func TestSetTablesWhileForwarding(t *testing.T) {
	const n = 3000
	m := [2]*lbtest.Member{lbtest.NewMember(t, 0), lbtest.NewMember(t, 1)}
	lb, addr := newLB(t, 2, lbnet.Config{Batch: 8})
	var sets [2][]*table.Table
	var mac net.HardwareAddr
	for i := range sets {
		sets[i], mac = tables(t, lbtest.Tables(ip(addr), m[i].Dest(), m[i].Dest()))
	}
	if err := lb.SetTables(sets[0], mac); err != nil {
		t.Fatal(err)
	}
	stop := start(t, lb)
	swapped := make(chan int, 1)
	quit := make(chan struct{})
	stopSwapping := sync.OnceFunc(func() { close(quit) })
	t.Cleanup(stopSwapping)
	go func() { // the control plane
		i := 0
		defer func() { swapped <- i }()
		for ; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			if err := lb.SetTables(sets[(i+1)%2], mac); err != nil {
				t.Error(err)
				return
			}
			runtime.Gosched()
		}
	}()
	sendEvents(t, addr, n)
	stopSwapping()
	swaps := <-swapped
	got := [2]int{}
	for got[0]+got[1] < n {
		select {
		case <-m[0].Got():
			got[0]++
		case <-m[1].Got():
			got[1]++
		case <-time.After(wait):
			t.Fatalf("%d of %d events arrived (%v; %+v, drops %v)", got[0]+got[1], n, got, lb.Stats(), lb.Drops())
		}
	}
	stop()
	if st := lb.Stats(); st != (lbnet.Stats{Received: n, Forwarded: n}) || len(lb.Drops()) > 0 {
		t.Errorf("stats %+v, drops %v; want %d received and forwarded", st, lb.Drops(), n)
	}
	if got[0] == 0 || got[1] == 0 {
		t.Errorf("the members got %v: the swaps did not take", got)
	}
	t.Logf("%d swaps; the members got %v", swaps, got)
}

// TestListen: the sockets share the port the first one got, and a second
// LB on it is refused rather than given a share of the datagrams.
func TestListen(t *testing.T) {
	conns, err := lbnet.Listen(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		defer c.Close()
		if c.LocalAddr().String() != conns[0].LocalAddr().String() {
			t.Errorf("sockets on %v and %v", conns[0].LocalAddr(), c.LocalAddr())
		}
	}
	if again, err := lbnet.Listen(conns[0].LocalAddr().(*net.UDPAddr), 1); err == nil {
		again[0].Close()
		t.Errorf("a second Listen on %v succeeded", conns[0].LocalAddr())
	}
}

// TestConfigChecks: batches and datagram sizes out of range are refused.
func TestConfigChecks(t *testing.T) {
	for _, c := range []struct {
		cfg  lbnet.Config
		want string
	}{
		{lbnet.Config{Batch: lbnet.MaxBatch + 1, MaxDatagram: 1}, "batch 1025: must be 1 to 1024"},
		{lbnet.Config{Batch: -1, MaxDatagram: 1}, "batch -1: must be 1 to 1024"},
		{lbnet.Config{Batch: 1, MaxDatagram: lbnet.MaxUDPPayload + 1}, "max datagram 65508: must be 1 to 65507"},
		{lbnet.Config{Batch: 0, MaxDatagram: 1}, "batch 0: must be 1 to 1024"},
		{lbnet.Config{Batch: 1, MaxDatagram: 0}, "max datagram 0: must be 1 to 65507"},
		{lbnet.Config{Batch: lbnet.MaxBatch, MaxDatagram: 1}, ""},
	} {
		err := c.cfg.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestSegmentedSends: the segments of an event go to one member, and a
// worker sends consecutive ones of one size (the last may be shorter) as
// one UDP_SEGMENT send; each still arrives as its own datagram, in order,
// byte for byte, whatever its size. The datagrams are sent before the LB
// runs, so that they meet in its batches; events alternate members.
func TestSegmentedSends(t *testing.T) {
	m := [2]*lbtest.Member{lbtest.NewMember(t, 0), lbtest.NewMember(t, 1)}
	lb, addr := newLB(t, 1, lbnet.Config{Batch: 32})
	setTables(t, lb, lbtest.Tables(ip(addr), m[0].Dest(), m[1].Dest()))
	s := lbtest.Sender(t, addr)
	var want [2][][]byte
	sizes := []int{1000, 1000, 1000, 1000, 1000, 1000, 1000, 300, 8000, 8000, 8000, 1, 1, 7000}
	for tick := range uint64(6) {
		for i, size := range sizes {
			d := append(lbtest.Event(tick, 0)[:16], make([]byte, size)...)
			for j := range d[16:] {
				d[16+j] = byte(int(tick)*31 + i*7 + j)
			}
			if _, err := s.Write(d); err != nil {
				t.Fatal(err)
			}
			want[tick%2] = append(want[tick%2], d[16:])
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := lb.Run(ctx); err != nil {
		t.Fatal(err)
	}
	n := uint64(6 * len(sizes))
	if st := lb.Stats(); st != (lbnet.Stats{Received: n, Forwarded: n}) {
		t.Errorf("stats %+v, want %d received and forwarded", st, n)
	}
	for k := range m {
		for i, w := range want[k] {
			d, ok := m[k].Next(wait)
			if !ok || !bytes.Equal(d, w) {
				t.Fatalf("member %d, datagram %d: %d bytes (%v), want %d", k, i, len(d), ok, len(w))
			}
		}
	}
	if g := lbnet.SegmentedSends(lb); g == 0 {
		t.Error("no UDP_SEGMENT send")
	}
}

// TestCoalescedReceives: datagrams a sender sends as one UDP_SEGMENT
// message reach the LB coalesced (UDP_GRO), one buffer for them all; the
// worker runs each through the LB and every one arrives at its member as
// its own datagram, in order, byte for byte (the frame headers rebuilt in
// front of each overwrite the end of the one before, which must be put
// back). Sizes: segments shorter and longer than those headers.
func TestCoalescedReceives(t *testing.T) {
	m := lbtest.NewMember(t, 0)
	lb, addr := newLB(t, 1, lbnet.Config{Batch: 8})
	setTables(t, lb, lbtest.Tables(ip(addr), m.Dest(), m.Dest()))
	s := lbtest.Sender(t, addr)
	var want [][]byte
	for tick, c := range []struct{ size, n, last int }{{1000, 9, 300}, {8000, 7, 8000}, {40, 20, 17}, {200, 3, 1}} {
		var ds [][]byte
		for i := range c.n {
			size := c.size
			if i == c.n-1 {
				size = c.last
			}
			d := append(lbtest.Event(uint64(tick), 0)[:16], make([]byte, size-16+16)...)
			for j := range d[16:] {
				d[16+j] = byte(tick*31 + i*7 + j)
			}
			ds = append(ds, d)
			want = append(want, d[16:])
		}
		if _, err := batchWriter(s, ds, true)(); err != nil {
			t.Skipf("no UDP_SEGMENT on loopback: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := lb.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if st := lb.Stats(); st != (lbnet.Stats{Received: uint64(len(want)), Forwarded: uint64(len(want))}) {
		t.Errorf("stats %+v, want %d received and forwarded", st, len(want))
	}
	for i, w := range want {
		d, ok := m.Next(wait)
		if !ok || !bytes.Equal(d, w) {
			t.Fatalf("datagram %d: %d bytes (%v), want %d", i, len(d), ok, len(w))
		}
	}
	if n := lbnet.CoalescedReceives(lb); n == 0 {
		t.Error("no datagrams came coalesced")
	}
}
