package segment

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/reasm"
)

// TestLoopback sends events over a UDP socket on loopback, the LB header
// stripped as the LB does, and reassembles what arrives: every event
// whole, its content as Fill wrote it. One event at a time (≤ 12
// datagrams) stays within the socket's receive buffer.
func TestLoopback(t *testing.T) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	defer rx.Close()
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	s, err := New(Config{Src: tx.LocalAddr().(*net.UDPAddr).AddrPort(), Dst: rx.LocalAddr().(*net.UDPAddr).AddrPort()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := reasm.New(reasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	out, in := make([]byte, s.MaxLen()), make([]byte, 65536)
	for number := range uint64(20) {
		event := make([]byte, 1000+int(number)*5000)
		Fill(event, number, 3)
		if err := s.Start(event, number, 3); err != nil {
			t.Fatal(err)
		}
		sent := 0
		for n, err := s.Next(out); err == nil; n, err = s.Next(out) {
			if _, err := tx.Write(out[ejfat.LBLen:n]); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		for range sent {
			_ = rx.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, from, err := rx.ReadFromUDPAddrPort(in)
			if err != nil {
				t.Fatalf("event %d: %v", number, err)
			}
			r.Datagram(netip.AddrFrom4(from.Addr().As4()), in[:n])
		}
		ev, ok := r.TryDequeue()
		if !ok || ev.Number != number || ev.DataID != 3 || Verify(ev.Data, number, 3) != -1 || len(ev.Data) != len(event) {
			t.Fatalf("event %d: %v, %v (stats %+v)", number, ev, ok, r.Stats())
		}
		r.Release(ev)
	}
	if st := r.Stats(); st.Reassembled != 20 || st.Errors() != 0 {
		t.Errorf("stats %+v", st)
	}
}
