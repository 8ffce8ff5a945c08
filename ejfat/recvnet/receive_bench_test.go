package recvnet

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/ejfat/segment"
	"github.com/dragonet-go/nsc/internal/udpbatch"
)

// BenchmarkReceive: 1 KiB segments of 128-segment events sent on
// loopback to one port, a batch of 64 at a time with at most 1,024 in
// flight (so none is lost). "receiver" is a Receiver with the runtime
// engine (what nsc recv runs, events delivered); "sockets" the same
// datagrams read by a udpbatch.Receiver and dropped: what the sockets
// cost. One op is one datagram; allocs/op are the sender's (none) and
// the receiving side's.
func BenchmarkReceive(b *testing.B) {
	const size, perEvent = 1 << 10, 128
	event := make([]byte, size*perEvent)
	segment.Fill(event, 0, 1)
	dgrams := make([][]byte, perEvent)
	for j := range dgrams {
		d := make([]byte, ejfat.RELen+size)
		ejfat.RE(d).Encode(1, uint32(j*size), uint32(len(event)), 0)
		copy(d[ejfat.RELen:], event[j*size:])
		dgrams[j] = d
	}
	// send sends n datagrams to to, numbering events, while received
	// (the datagrams the receiving side took) lags at most 1,024 behind.
	send := func(b *testing.B, to netip.AddrPort, n int, received func() uint64) {
		c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(to))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		raw, _ := c.SyscallConn()
		s := udpbatch.NewSender(64)
		number := uint64(0)
		for sent := 0; sent < n; {
			for uint64(sent) > received()+1024 {
				time.Sleep(10 * time.Microsecond)
			}
			for s.Reset(); s.Len() < s.Cap() && sent+s.Len() < n; {
				j := (sent + s.Len()) % perEvent
				if j == 0 {
					number++
					for _, d := range dgrams {
						ejfat.RE(d).SetEventNumber(number)
					}
				}
				s.Add(dgrams[j], netip.AddrPort{})
				if j == perEvent-1 { // the next event renumbers the datagrams
					break
				}
			}
			k := s.Len()
			for done := 0; done < k; {
				m, err := s.Flush(raw)
				if err != nil {
					b.Fatal(err)
				}
				done += m
			}
			sent += k
		}
		for deadline := time.Now().Add(10 * time.Second); received() < uint64(n); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d datagrams received", received(), n)
			}
		}
	}
	b.Run("receiver", func(b *testing.B) {
		var delivered atomic.Uint64
		rx, err := Listen(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Ports: 1, Threads: 1,
			New:     func() (Reassembler, error) { return reasm.New(reasm.Config{}) },
			Deliver: func(*reasm.Event) { delivered.Add(1) }})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { rx.Run(ctx); close(done) }()
		send(b, rx.Addr(), perEvent, func() uint64 { return rx.Stats().Packets }) // warm the pools
		b.ReportAllocs()
		b.ResetTimer()
		start := rx.Stats().Packets
		send(b, rx.Addr(), b.N, func() uint64 { return rx.Stats().Packets - start })
		b.StopTimer()
		cancel()
		rx.Close()
		<-done
		if got := delivered.Load(); got < uint64(b.N/perEvent) {
			b.Fatalf("%d events delivered of %d datagrams", got, b.N)
		}
	})
	b.Run("sockets", func(b *testing.B) {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		c.SetReadBuffer(readBuffer)
		raw, _ := c.SyscallConn()
		bufs := make([][]byte, ReadBatch)
		for i := range bufs {
			bufs[i] = make([]byte, MaxDatagram)
		}
		r := udpbatch.NewReceiver(bufs)
		var got atomic.Uint64
		go func() {
			for {
				n, err := r.Receive(raw, 0, 0)
				if err != nil {
					return
				}
				got.Add(uint64(n))
			}
		}()
		b.ReportAllocs()
		b.ResetTimer()
		send(b, c.LocalAddr().(*net.UDPAddr).AddrPort(), b.N, got.Load)
	})
}
