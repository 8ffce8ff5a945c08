package lbnet_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
	"github.com/dragonet-go/nsc/packet"
)

// wait bounds every wait for a datagram: a failure, not a measurement.
const wait = 5 * time.Second

// tables loads an lb-2025 table script, failing the test if it is bad.
func tables(t testing.TB, script string) ([]*packet.Table, net.HardwareAddr) {
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
		c.SetReadBuffer(8 << 20)
		t.Cleanup(func() { c.Close() })
	}
	cfg.Conns = conns
	cfg.New = func(ts []*packet.Table) (fastpath.Pipeline, error) { return lbfast.NewSocket("lb-2025", ts) }
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

func ip(a *net.UDPAddr) netip.Addr { return a.AddrPort().Addr() }

// TestLiveLoopback sends events from four senders through an LB with two
// workers to two members and checks every one arrived, at the member its
// tick's calendar slot names, with the LB header removed.
func TestLiveLoopback(t *testing.T) {
	const n = 400
	m := [2]*lbtest.Member{lbtest.NewMember(t, 0), lbtest.NewMember(t, 1)}
	lb, addr := newLB(t, 2, lbnet.Config{Batch: 16})
	setTables(t, lb, lbtest.Tables(ip(addr), m[0], m[1]))
	stop := start(t, lb)
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
}
