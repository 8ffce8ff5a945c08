package lbnet_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
)

// loopbackTables is an lb-2025 configuration for 127.0.0.1: one epoch for
// every tick with a 1-bit calendar, so even ticks go to member 0 and odd
// ones to member 1, each a UDP port on loopback; the LB header is removed.
func loopbackTables(port0, port1 int) string {
	return fmt.Sprintf(`
table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 0x7f000001 => 0x7f000001 0 0
table_add ipv4_src_filter_table allow_ip_src 0 0x7f000001 =>
table_add epoch_assign_table do_assign_epoch_with_slot_sel_opts 0 0x0/0 => 0 1 0 63
table_add load_balance_calendar_table do_assign_member 0 0 0 => 0
table_add load_balance_calendar_table do_assign_member 0 0 1 => 1
table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 0 => 0x112233445566 0x7f000001 %d 0 0
table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 1 => 0x112233445566 0x7f000001 %d 0 0
`, port0, port1)
}

// event is an LB v2 header for tick followed by a payload naming the tick.
func event(tick uint64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint16(b, 0x4c42)
	b[2], b[3] = 2, 1
	binary.BigEndian.PutUint16(b[6:], uint16(tick)) // entropy
	binary.BigEndian.PutUint64(b[8:], tick)
	return append(b, fmt.Sprintf("event %d", tick)...)
}

// live is a forwarder running lb-2025 on loopback (loopbackTables) to two
// member sockets, and a socket sending to it.
type live struct {
	members [2]*net.UDPConn
	sender  *net.UDPConn
	f       *lbnet.Forwarder
	pl      fastpath.Pipeline
	stop    func() error // ends the forwarder, returning what Run did
	wait    func()       // waits until receive is done
}

// startLive starts a forwarder; it skips t without loopback UDP.
func startLive(t *testing.T) *live {
	t.Helper()
	l := &live{}
	for i := range l.members {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Skipf("no loopback UDP: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		l.members[i] = c
	}
	script := loopbackTables(l.members[0].LocalAddr().(*net.UDPAddr).Port, l.members[1].LocalAddr().(*net.UDPAddr).Port)
	ts, err := lbfast.Tables("lb-2025", "loopback.tables", strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	if l.pl, err = lbfast.NewSocket("lb-2025", ts); err != nil {
		t.Fatal(err)
	}
	mac, ok := lbnet.OwnMAC(ts)
	if !ok || mac.String() != "00:aa:bb:cc:dd:ee" {
		t.Fatalf("OwnMAC = %v, %v", mac, ok)
	}
	// The LB parses the LB header only on ports 16384..32767 (0x4C42 is
	// the usual one).
	var lbConn *net.UDPConn
	for port := 0x4c42; port < 0x4c42+100 && lbConn == nil; port++ {
		lbConn, _ = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	}
	if lbConn == nil {
		t.Fatal("no free port for the LB in 19522..19621")
	}
	t.Cleanup(func() { lbConn.Close() })
	l.f = &lbnet.Forwarder{PL: l.pl, Conn: lbConn, MAC: mac, Batch: 16}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- l.f.Run(ctx) }()
	l.stop = func() error { cancel(); return <-done }
	if l.sender, err = net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, lbConn.LocalAddr().(*net.UDPAddr)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.sender.Close() })
	return l
}

// receive collects what each member receives until it has been quiet for
// two seconds.
func (l *live) receive() *[2][]string {
	got := &[2][]string{}
	var wg sync.WaitGroup
	for i, c := range l.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 65536)
			for {
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				k, _, err := c.ReadFromUDP(buf)
				if err != nil {
					return
				}
				got[i] = append(got[i], string(buf[:k]))
			}
		}()
	}
	l.wait = wg.Wait
	return got
}

// TestLiveLoopback sends N events through the forwarder to two receivers
// and checks every one arrived, at the member its tick's calendar slot
// names, with the LB header removed.
func TestLiveLoopback(t *testing.T) {
	const n = 400
	l := startLive(t)
	got := l.receive()
	for tick := range uint64(n) {
		if _, err := l.sender.Write(event(tick)); err != nil {
			t.Fatal(err)
		}
		if tick%32 == 31 {
			time.Sleep(time.Millisecond) // stay within the socket buffers
		}
	}
	l.wait()
	if err := l.stop(); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for m, evs := range got {
		for _, ev := range evs {
			var tick int
			if _, err := fmt.Sscanf(ev, "event %d", &tick); err != nil {
				t.Errorf("member %d got %q: not an event with the LB header removed", m, ev)
				continue
			}
			if tick%2 != m {
				t.Errorf("event %d arrived at member %d, the calendar says %d", tick, m, tick%2)
			}
			seen++
		}
	}
	if seen != n {
		t.Errorf("%d of %d events arrived (stats: %d received, %d forwarded, %d dropped; drops %v)", seen, n,
			l.f.Stats.Received.Load(), l.f.Stats.Forwarded.Load(), l.f.Stats.Dropped.Load(), golang.Counters(l.pl).Drops)
	}
}

// TestLiveLongest: a datagram of MaxDatagram bytes is forwarded whole; a
// longer one is dropped and counted, not forwarded cut to MaxDatagram.
func TestLiveLongest(t *testing.T) {
	l := startLive(t)
	got := l.receive()
	for _, n := range []int{lbnet.MaxDatagram, lbnet.MaxDatagram + 1} {
		ev := event(0)
		if _, err := l.sender.Write(append(ev, make([]byte, n-len(ev))...)); err != nil {
			t.Fatal(err)
		}
	}
	l.wait()
	if err := l.stop(); err != nil {
		t.Fatal(err)
	}
	if len(got[0]) != 1 || len(got[0][0]) != lbnet.MaxDatagram-16 || len(got[1]) != 0 {
		var lens []int
		for _, d := range got[0] {
			lens = append(lens, len(d))
		}
		t.Errorf("member 0 got datagrams of %v bytes, member 1 %d datagrams; want one of %d bytes", lens, len(got[1]), lbnet.MaxDatagram-16)
	}
	if d := l.f.Stats.Dropped.Load(); d != 1 {
		t.Errorf("%d datagrams dropped, want 1", d)
	}
}
