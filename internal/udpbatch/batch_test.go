package udpbatch

import (
	"bytes"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

func loopback(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// datagrams are runs of one size but the last, to two destinations, in
// an order that cuts runs: what Flush groups into UDP_SEGMENT messages.
func datagrams(to [2]netip.AddrPort) (ds [][]byte, dst []netip.AddrPort) {
	for i, c := range []struct{ size, n, last, to int }{{1000, 9, 300, 0}, {1000, 3, 1000, 1}, {8000, 8, 5, 0}, {40, 70, 40, 1}, {1, 1, 1, 0}} {
		for j := range c.n {
			size := c.size
			if j == c.n-1 {
				size = c.last
			}
			d := make([]byte, size)
			for k := range d {
				d[k] = byte(i*31 + j*7 + k)
			}
			ds, dst = append(ds, d), append(dst, to[c.to])
		}
	}
	return ds, dst
}

// TestSenderSegments: what a Sender flushes arrives, read one datagram at
// a time by the kernel's plain recvfrom, as the datagrams added, each
// whole and in order per destination, some of them sent as UDP_SEGMENT
// messages; none allocated.
func TestSenderSegments(t *testing.T) {
	tx, rx := loopback(t), [2]*net.UDPConn{loopback(t), loopback(t)}
	to := [2]netip.AddrPort{rx[0].LocalAddr().(*net.UDPAddr).AddrPort(), rx[1].LocalAddr().(*net.UDPAddr).AddrPort()}
	ds, dst := datagrams(to)
	raw, _ := tx.SyscallConn()
	s := NewSender(len(ds))
	for i, d := range ds {
		s.Add(d, dst[i])
	}
	if n, err := s.Flush(raw); err != nil || n != len(ds) {
		t.Fatalf("Flush: %d of %d, %v", n, len(ds), err)
	}
	if s.Segmented == 0 || s.Len() != 0 {
		t.Errorf("%d UDP_SEGMENT messages, %d datagrams left", s.Segmented, s.Len())
	}
	buf := make([]byte, 1<<16)
	for i, d := range ds {
		c := rx[0]
		if dst[i] == to[1] {
			c = rx[1]
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(buf)
		if err != nil || !bytes.Equal(buf[:n], d) {
			t.Fatalf("datagram %d: %d bytes (%v), want %d", i, n, err, len(d))
		}
	}
	if a := testing.AllocsPerRun(10, func() {
		for i, d := range ds[:20] {
			s.Add(d, dst[i])
		}
		s.Flush(raw)
	}); a != 0 {
		t.Errorf("%v allocations per Add and Flush", a)
	}
}

// TestReceiverCoalesced: datagrams sent as UDP_SEGMENT messages reach a
// socket with UDP_GRO coalesced, one buffer each message, with their size;
// cut at that size they are the datagrams sent. The source is the
// sender's.
func TestReceiverCoalesced(t *testing.T) {
	tx, rx := loopback(t), loopback(t)
	raw, _ := rx.SyscallConn()
	SetGRO(raw)
	to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	ds, _ := datagrams([2]netip.AddrPort{to, to})
	txRaw, _ := tx.SyscallConn()
	s := NewSender(len(ds))
	for _, d := range ds {
		s.Add(d, to)
	}
	if _, err := s.Flush(txRaw); err != nil {
		t.Fatal(err)
	}
	bufs := make([][]byte, 8)
	for i := range bufs {
		bufs[i] = make([]byte, 1<<16)
	}
	r := NewReceiver(bufs)
	var got [][]byte
	coalesced := 0
	rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(got) < len(ds) {
		n, err := r.Receive(raw, 0, 0)
		if err != nil {
			t.Fatalf("after %d datagrams: %v", len(got), err)
		}
		for i := range n {
			size, from, truncated, segment := r.Datagram(i)
			if truncated || from != tx.LocalAddr().(*net.UDPAddr).AddrPort() {
				t.Fatalf("message of %d bytes from %v, truncated %v", size, from, truncated)
			}
			if segment == 0 {
				segment = size
			} else {
				coalesced++
			}
			for off := 0; off < size; off += segment {
				got = append(got, bytes.Clone(bufs[i][off:min(off+segment, size)]))
			}
		}
	}
	for i, d := range ds {
		if !bytes.Equal(got[i], d) {
			t.Fatalf("datagram %d: %d bytes, want %d", i, len(got[i]), len(d))
		}
	}
	if coalesced == 0 {
		t.Error("no message came coalesced")
	}
}

// TestSenderInterleaved: datagrams of one size to destinations in turn
// (the members of a calendar) go as one UDP_SEGMENT message per
// destination, up to maxDestinations of them (with more, as they came),
// and each destination gets its own in the order added.
func TestSenderInterleaved(t *testing.T) {
	for _, c := range []struct{ dests, messages int }{{3, 3}, {maxDestinations, maxDestinations}, {maxDestinations + 1, 0}} {
		tx, rxs := loopback(t), []*net.UDPConn{}
		for range c.dests {
			rxs = append(rxs, loopback(t))
		}
		txRaw, _ := tx.SyscallConn()
		n := 4 * c.dests
		s := NewSender(n)
		for i := range n {
			s.Add([]byte{byte(i), 1, 2, 3}, rxs[i%c.dests].LocalAddr().(*net.UDPAddr).AddrPort())
		}
		if sent, err := s.Flush(txRaw); err != nil || sent != n {
			t.Fatalf("%d destinations: Flush: %d of %d, %v", c.dests, sent, n, err)
		}
		if s.Segmented != uint64(c.messages) {
			t.Errorf("%d destinations: %d UDP_SEGMENT messages, want %d", c.dests, s.Segmented, c.messages)
		}
		buf := make([]byte, 64)
		for i := range n {
			rx := rxs[i%c.dests]
			rx.SetReadDeadline(time.Now().Add(5 * time.Second))
			k, err := rx.Read(buf)
			if err != nil || k != 4 || buf[0] != byte(i) {
				t.Fatalf("%d destinations: destination %d got % x (%v), want datagram %d", c.dests, i%c.dests, buf[:k], err, i)
			}
		}
	}
}

// TestReceiveCount: Receive takes no more messages than asked for, and
// the rest stay queued for the next.
func TestReceiveCount(t *testing.T) {
	tx, rx := loopback(t), loopback(t)
	raw, _ := rx.SyscallConn()
	for i := range 5 {
		if _, err := tx.WriteToUDP([]byte{byte(i)}, rx.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Fatal(err)
		}
	}
	bufs := make([][]byte, 8)
	for i := range bufs {
		bufs[i] = make([]byte, 16)
	}
	r := NewReceiver(bufs)
	rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := []byte{}
	for _, ask := range []int{3, 0} {
		n, err := r.Receive(raw, ask, 0)
		if err != nil || ask > 0 && n != ask {
			t.Fatalf("Receive(%d) = %d, %v", ask, n, err)
		}
		for i := range n {
			got = append(got, bufs[i][0])
		}
	}
	if !bytes.Equal(got, []byte{0, 1, 2, 3, 4}) {
		t.Errorf("received % x, want 00 01 02 03 04", got)
	}
}

// TestReceiveSources: a Receiver on an IPv6 socket reports each sender's
// address and port as the sender's own socket has them: an IPv6 one as
// it is, an IPv4 one (dual stack) IPv4-mapped; on an IPv4 socket, IPv4.
func TestReceiveSources(t *testing.T) {
	rx6, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6unspecified})
	if err != nil {
		t.Skipf("no IPv6 UDP: %v", err)
	}
	defer rx6.Close()
	port := rx6.LocalAddr().(*net.UDPAddr).Port
	var senders []*net.UDPConn
	for _, to := range []string{"[::1]", "127.0.0.1"} {
		c, err := net.Dial("udp", net.JoinHostPort(strings.Trim(to, "[]"), strconv.Itoa(port)))
		if err != nil {
			t.Skipf("no loopback %s: %v", to, err)
		}
		defer c.Close()
		senders = append(senders, c.(*net.UDPConn))
	}
	rx4 := loopback(t)
	c4, err := net.DialUDP("udp4", nil, rx4.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c4.Close()
	for _, c := range []struct {
		rx     *net.UDPConn
		tx     *net.UDPConn
		mapped bool
	}{{rx6, senders[0], false}, {rx6, senders[1], true}, {rx4, c4, false}} {
		if _, err := c.tx.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		raw, _ := c.rx.SyscallConn()
		r := NewReceiver([][]byte{make([]byte, 16)})
		c.rx.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := r.Receive(raw, 1, 0); n != 1 || err != nil {
			t.Fatalf("Receive = %d, %v", n, err)
		}
		want := c.tx.LocalAddr().(*net.UDPAddr).AddrPort()
		if c.mapped {
			want = netip.AddrPortFrom(netip.AddrFrom16(want.Addr().As16()), want.Port())
		}
		if _, from, _, _ := r.Datagram(0); from != want {
			t.Errorf("from %v, want %v", from, want)
		}
	}
}
