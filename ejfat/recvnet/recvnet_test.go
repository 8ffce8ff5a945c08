package recvnet

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/ejfat/segment"
	"github.com/dragonet-go/nsc/internal/udpbatch"
	"github.com/dragonet-go/nsc/packet/frame"
)

// TestReceiver: a receiver of 4 ports and 2 threads on loopback gets
// events cut by the segmenter, each event to the port its port select
// names (as the LB sends them), half of them with the LB header kept;
// every event is delivered once, whole, its content as segment.Fill
// wrote it, and the counters add up; with either engine (the model's
// frames each datagram where the reader received it). With gso, an
// event's segments go as UDP_SEGMENT messages (the last, shorter one
// apart), which the ports take coalesced (UDP_GRO): the datagrams of a
// message are run one after the other, the model writing each one's
// headers over the end of the one before.
func TestReceiver(t *testing.T) {
	for _, gso := range []bool{false, true} {
		t.Run(fmt.Sprintf("gso=%v/runtime", gso), func(t *testing.T) {
			testReceiver(t, gso, func() (Reassembler, error) { return reasm.New(reasm.Config{}) })
		})
		t.Run(fmt.Sprintf("gso=%v/model", gso), func(t *testing.T) {
			testReceiver(t, gso, func() (Reassembler, error) { return NewModel(nil, 64) })
		})
	}
}

func testReceiver(t *testing.T, gso bool, newR func() (Reassembler, error)) {
	const ports, events = 4, 40
	var mu sync.Mutex
	got := map[uint64]bool{}
	rx, err := Listen(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Ports: ports, Threads: 2,
		New: newR,
		Deliver: func(ev *reasm.Event) {
			mu.Lock()
			defer mu.Unlock()
			if got[ev.Number] || segment.Verify(ev.Data, ev.Number, ev.DataID) != -1 || len(ev.Data) != 1000+int(ev.Number)*3000 {
				t.Errorf("event %d: %d bytes, delivered before: %v", ev.Number, len(ev.Data), got[ev.Number])
			}
			got[ev.Number] = true
		}})
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		rx.Run(ctx)
		close(done)
	}()
	tx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	base := rx.Addr()
	s, err := segment.New(segment.Config{Src: tx.LocalAddr().(*net.UDPAddr).AddrPort(), Dst: base})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tx.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	send := udpbatch.NewSender(udpbatch.MaxSegments)
	send.GSO = gso
	segments := 0
	for number := range uint64(events) {
		event := make([]byte, 1000+int(number)*3000)
		segment.Fill(event, number, 5)
		s.Start(event, number, 5)
		for {
			out := make([]byte, s.MaxLen()) // each stays queued until sent
			n, err := s.Next(out)
			if err != nil {
				break
			}
			entropy := binary.BigEndian.Uint16(out[6:]) // LB v2, spec §2
			to := netip.AddrPortFrom(base.Addr(), base.Port()+entropy%ports)
			b := out[:n]
			if number%2 == 0 {
				b = b[ejfat.LBLen:]
			}
			if send.Len() == send.Cap() {
				if _, err := send.Flush(raw); err != nil {
					t.Fatal(err)
				}
			}
			send.Add(b, to)
			segments++
		}
		if _, err := send.Flush(raw); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // within the sockets' buffers whatever rmem_max is
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == events || time.Now().After(end) {
			break
		}
	}
	cancel()
	<-done
	if st := rx.Stats(); len(got) != events || st.Reassembled != events || st.Dequeued != events || st.Packets != uint64(segments) {
		t.Errorf("%d events delivered of %d; stats %+v", len(got), events, st)
	}
	if n := rx.LBHeaders(); n == 0 || n == uint64(segments) {
		t.Errorf("%d datagrams with an LB header of %d, half of the events had them", n, segments)
	}
	if f := rx.Fill(); f != 0 {
		t.Errorf("fill %v after every event was delivered", f)
	}
	if coalesced, truncated := rx.Coalesced(); gso != (coalesced > 0) || truncated != 0 {
		t.Errorf("%d coalesced messages (%d truncated), GSO senders: %v", coalesced, truncated, gso)
	}
}

// FuzzFrame: whatever frame arrives, what ParseUDP finds goes through
// StripLB and a reassembler without a panic; StripLB strips exactly the
// LB header's 16 bytes when the datagram starts with one.
func FuzzFrame(f *testing.F) {
	seg, _ := segment.New(segment.Config{MTU: 200, Src: netip.MustParseAddrPort("10.0.0.2:5"), Dst: netip.MustParseAddrPort("10.0.0.1:19522"),
		Frames: true, SrcMAC: []byte{2, 0, 0, 0, 0, 1}, DstMAC: []byte{2, 0, 0, 0, 0, 2}})
	seg.Start(make([]byte, 300), 1, 2)
	for {
		buf := make([]byte, seg.MaxLen())
		n, err := seg.Next(buf)
		if err != nil {
			break
		}
		f.Add(buf[:n])
		f.Add(buf[:n-1])
	}
	f.Add([]byte{})
	r, _ := reasm.New(reasm.Config{MaxEventSize: 1 << 16, MaxBytes: 1 << 20})
	f.Fuzz(func(t *testing.T, b []byte) {
		src, _, payload, ok := frame.ParseUDP(b)
		if !ok {
			return
		}
		re, lb := StripLB(payload)
		if lb != (len(payload) >= ejfat.LBLen && string(payload[:2]) == "LB" && (payload[2] == 2 || payload[2] == 3)) || lb && len(re) != len(payload)-ejfat.LBLen {
			t.Fatalf("StripLB %x: %d bytes left, LB header %v", payload, len(re), lb)
		}
		r.Datagram(src.Addr(), re)
		Drain(r, func(*reasm.Event) {})
	})
}
