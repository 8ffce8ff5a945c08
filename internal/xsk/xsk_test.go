package xsk_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/internal/xsk"
)

// TestEcho opens a socket on one end of a veth pair (MTU 9000, a
// namespace each) and sends it frames from the other end over an
// AF_PACKET socket, of lengths up to and past MaxLen; a goroutine sends
// each frame it receives back, changed in place (MACs swapped, a byte
// flipped). What comes back must be exactly the frames up to MaxLen,
// changed, in order; the longer ones must have gone to the kernel, and
// been counted. 64 chunks and 300 frames: every chunk goes round the
// rings several times. Generic and driver mode.
func TestEcho(t *testing.T) {
	t.Run("generic", func(t *testing.T) { echo(t, link.XDPGenericMode) })
	t.Run("driver", func(t *testing.T) { echo(t, link.XDPDriverMode) })
}

func echo(t *testing.T, mode link.XDPAttachFlags) {
	tag := fmt.Sprintf("%d-%d", os.Getpid(), mode)
	v := xdptest.Veth{NS: "xsk-a-" + tag, Dev: "xska", MAC: "02:00:00:00:00:0a", PeerNS: "xsk-b-" + tag, PeerDev: "xskb", PeerMAC: "02:00:00:00:00:0b", MTU: 9000}
	v.Up(t)
	const tailroom = 128
	s := xdptest.OpenXSK(t, v.NS, v.Dev, xsk.Config{Frames: 64, Tailroom: tailroom, Mode: mode})
	if s.MaxLen() != xsk.FrameSize-xsk.Headroom-tailroom {
		t.Fatalf("MaxLen %d", s.MaxLen())
	}
	fd, ifindex := v.PeerSocket(t)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var echoErr error
	wg.Go(func() { echoErr = echoLoop(ctx, s) })
	defer func() {
		cancel()
		wg.Wait()
		if echoErr != nil {
			t.Error(echoErr)
		}
	}()

	lengths := []int{60, 1514, s.MaxLen(), s.MaxLen() + 1, 9014}
	var want [][]byte
	long := 0
	to := &syscall.SockaddrLinklayer{Ifindex: ifindex, Halen: 6, Addr: [8]byte{2, 0, 0, 0, 0, 0x0a}}
	buf := make([]byte, 9100)
	for i := range 300 {
		n := lengths[i%len(lengths)]
		f := make([]byte, n)
		copy(f, []byte{2, 0, 0, 0, 0, 0x0a, 2, 0, 0, 0, 0, 0x0b, 0x88, 0xb5}) // local experimental EtherType
		binary.BigEndian.PutUint32(f[14:], uint32(i))
		if err := syscall.Sendto(fd, f, 0, to); err != nil {
			t.Fatalf("send: %v", err)
		}
		if n > s.MaxLen() {
			long++
			continue
		}
		want = append(want, changed(f))
		// One frame at a time: 64 chunks, and no drop for want of one.
		got, ok := receive(t, fd, buf)
		if !ok {
			t.Fatalf("frame %d (%d bytes) did not come back", i, n)
		}
		if !bytes.Equal(got, want[len(want)-1]) {
			t.Fatalf("frame %d came back as %x…, want %x…", i, got[:min(32, len(got))], want[len(want)-1][:32])
		}
	}
	if n, err := s.Long(); err != nil || n != uint64(long) {
		t.Errorf("Long: %d, %v; want %d", n, err, long)
	}
	st, err := s.Statistics()
	if err != nil {
		t.Fatal(err)
	}
	if st.Rx_dropped != 0 || st.Rx_invalid_descs != 0 || st.Tx_invalid_descs != 0 {
		t.Errorf("kernel statistics: %+v", st)
	}
	t.Logf("%d frames echoed, %d passed to the kernel", len(want), long)
}

// changed is f as echoLoop sends it back.
func changed(f []byte) []byte {
	g := bytes.Clone(f)
	swap(g)
	return g
}

func swap(f []byte) {
	var mac [6]byte
	copy(mac[:], f[:6])
	copy(f, f[6:12])
	copy(f[6:], mac[:])
	f[18] ^= 0xff
}

// echoLoop sends back every frame s receives, changed in place, until
// ctx ends.
func echoLoop(ctx context.Context, s *xsk.Socket) error {
	descs := make([]unix.XDPDesc, 16)
	for ctx.Err() == nil {
		n, err := s.Receive(descs, 20*time.Millisecond)
		if err != nil {
			return err
		}
		for _, d := range descs[:n] {
			chunk, off := s.Chunk(d.Addr)
			swap(chunk[off : off+int(d.Len)])
			if !s.Transmit(d.Addr, int(d.Len)) {
				return errors.New("tx ring full")
			}
		}
		if err := s.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// receive returns the next frame from the AF_PACKET socket fd that came
// in (not one it sent), waiting up to 2 seconds.
func receive(t *testing.T, fd int, buf []byte) ([]byte, bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		n, from, err := syscall.Recvfrom(fd, buf, 0)
		if err == syscall.EAGAIN || err == syscall.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if ll, ok := from.(*syscall.SockaddrLinklayer); ok && ll.Pkttype == syscall.PACKET_OUTGOING {
			continue
		}
		if n < 14 || binary.BigEndian.Uint16(buf[12:]) != 0x88b5 {
			continue // the kernel's own
		}
		return bytes.Clone(buf[:n]), true
	}
	return nil, false
}
