package lbnet_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
)

// BenchmarkLive forwards b.N events on loopback, sent in batches of 64 with
// sendmmsg, through the forwarder (lb-2025 on LinuxUDP) to two members,
// and reports the packets per second the members received.
func BenchmarkLive(b *testing.B) {
	var members [2]*net.UDPConn
	for i := range members {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Skip(err)
		}
		c.SetReadBuffer(8 << 20)
		defer c.Close()
		members[i] = c
	}
	ts, err := lbfast.Tables("lb-2025", "loopback", strings.NewReader(loopbackTables(members[0].LocalAddr().(*net.UDPAddr).Port, members[1].LocalAddr().(*net.UDPAddr).Port)))
	if err != nil {
		b.Fatal(err)
	}
	pl, err := lbfast.NewSocket("lb-2025", ts)
	if err != nil {
		b.Fatal(err)
	}
	var lbConn *net.UDPConn
	for port := 0x4c42 + 100; port < 0x4c42+200 && lbConn == nil; port++ {
		lbConn, _ = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	}
	if lbConn == nil {
		b.Fatal("no free LB port")
	}
	defer lbConn.Close()
	lbConn.SetReadBuffer(8 << 20)
	mac, _ := lbnet.OwnMAC(ts)
	f := &lbnet.Forwarder{PL: pl, Conn: lbConn, MAC: mac, Batch: 64}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	got := make(chan int, 2)
	for _, c := range members {
		go func() {
			n := 0
			buf := make([]byte, 2048)
			for {
				c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				if _, _, err := c.ReadFromUDP(buf); err != nil {
					got <- n
					return
				}
				n++
			}
		}()
	}
	sender, err := net.DialUDP("udp4", nil, lbConn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer sender.Close()
	pc := ipv4.NewPacketConn(sender)
	msgs := make([]ipv4.Message, 64)
	b.ResetTimer()
	start := time.Now()
	for sent := 0; sent < b.N; {
		k := min(len(msgs), b.N-sent)
		for i := range k {
			msgs[i].Buffers = [][]byte{event(uint64(sent + i))}
		}
		w, err := pc.WriteBatch(msgs[:k], 0)
		if err != nil {
			b.Fatal(err)
		}
		sent += w
	}
	received := <-got + <-got
	elapsed := time.Since(start) - 300*time.Millisecond
	b.StopTimer()
	cancel()
	<-done
	b.ReportMetric(float64(received)/elapsed.Seconds(), "packets/s")
	b.ReportMetric(float64(received)/float64(b.N), "delivered")
}
