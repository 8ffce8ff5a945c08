// Package lbtest helps test live LBs on loopback: an address for the LB,
// members that collect what they receive, lb-2025 tables sending to them,
// and events.
package lbtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
)

// Addr returns an address for an LB that no one else uses: port 0x4c42
// (the LB parses the LB header on ports 16384 to 32767) on a random
// loopback address, checked free, so that tests running at once, each
// listening with SO_REUSEPORT, do not join one another's sockets.
func Addr(t testing.TB) *net.UDPAddr {
	t.Helper()
	for range 100 {
		ip := netip.AddrFrom4([4]byte{127, byte(rand.IntN(255) + 1), byte(rand.IntN(256)), byte(rand.IntN(254) + 1)})
		a := &net.UDPAddr{IP: ip.AsSlice(), Port: 0x4c42}
		if c, err := net.ListenUDP("udp4", a); err == nil {
			c.Close()
			return a
		}
	}
	t.Skip("no free loopback address for the LB")
	return nil
}

// Member is an LB member: a UDP socket on 127.0.0.1 that collects what it
// receives until the test ends.
type Member struct {
	ID   int
	conn *net.UDPConn
	got  chan []byte
}

// NewMember opens member id's socket.
func NewMember(t testing.TB, id int) *Member {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	c.SetReadBuffer(8 << 20)
	m := &Member{ID: id, conn: c, got: make(chan []byte, 1<<16)}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 1<<16)
		for {
			n, _, err := c.ReadFromUDP(buf)
			if err != nil {
				close(m.got)
				return
			}
			m.got <- bytes.Clone(buf[:n])
		}
	}()
	return m
}

// Port is the member's UDP port.
func (m *Member) Port() int { return m.conn.LocalAddr().(*net.UDPAddr).Port }

// Next returns the next datagram the member received, waiting up to wait.
func (m *Member) Next(wait time.Duration) ([]byte, bool) {
	select {
	case d, ok := <-m.got:
		return d, ok
	case <-time.After(wait):
		return nil, false
	}
}

// Got delivers the datagrams the member receives.
func (m *Member) Got() <-chan []byte { return m.got }

// Dest is a member as the tables name it: its ID and its UDP port on
// 127.0.0.1.
type Dest struct{ ID, Port int }

// Dest is the member's Dest.
func (m *Member) Dest() Dest { return Dest{m.ID, m.Port()} }

// Net is where an LB's tables put its senders and members: the one
// address its source filter allows, and the address and MAC of every
// member.
type Net struct {
	Senders, Members netip.Addr
	MemberMAC        uint64
}

// Loopback is Net on loopback: senders and members on 127.0.0.1.
var Loopback = Net{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.1"), 0x112233445566}

// Tables is Loopback.Tables.
func Tables(lb netip.Addr, even, odd Dest) string { return Loopback.Tables(lb, even, odd) }

// Tables is an lb-2025 table script for an LB at lb: its MAC
// 00:aa:bb:cc:dd:ee, senders from n.Senders allowed, one epoch for every
// tick with a 1-bit calendar sending even ticks to member even and odd
// ones to odd (at n.Members); the LB header is removed.
func (n Net) Tables(lb netip.Addr, even, odd Dest) string {
	ip := binary.BigEndian.Uint32(lb.AsSlice())
	var b strings.Builder
	fmt.Fprintf(&b, `table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0
table_add ipv4_src_filter_table allow_ip_src 0 %#x =>
table_add epoch_assign_table do_assign_epoch_with_slot_sel_opts 0 0x0/0 => 0 1 0 63
table_add load_balance_calendar_table do_assign_member 0 0 0 => %d
table_add load_balance_calendar_table do_assign_member 0 0 1 => %d
`, ip, ip, binary.BigEndian.Uint32(n.Senders.AsSlice()), even.ID, odd.ID)
	members := []Dest{even}
	if odd.ID != even.ID {
		members = append(members, odd)
	}
	for _, m := range members {
		fmt.Fprintf(&b, "table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 %d => %#x %#x %d 0 0\n", m.ID, n.MemberMAC, binary.BigEndian.Uint32(n.Members.AsSlice()), m.Port)
	}
	return b.String()
}

// Event is an LB v2 header for tick followed by a payload naming the tick,
// padded with zeros to size bytes if it is shorter.
func Event(tick uint64, size int) []byte {
	b := make([]byte, ejfat.LBLen)
	ejfat.LBHeader(b).Encode(2, 0, uint16(tick), tick) // the entropy from the tick
	b = fmt.Appendf(b, "event %d", tick)
	if len(b) < size {
		b = append(b, make([]byte, size-len(b))...)
	}
	return b
}

// Tick reads the tick of an event the LB forwarded with its header
// removed.
func Tick(payload []byte) (uint64, bool) {
	var tick uint64
	_, err := fmt.Sscanf(string(bytes.TrimRight(payload, "\x00")), "event %d", &tick)
	return tick, err == nil
}

// Sender sends to addr from 127.0.0.1 (the address the tables allow).
func Sender(t testing.TB, addr *net.UDPAddr) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
