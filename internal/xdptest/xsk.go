package xdptest

import (
	"encoding/hex"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dragonet-go/nsc/internal/xsk"
)

// OpenXSK opens an AF_XDP socket on queue 0 of dev in namespace ns,
// closed when t ends; it skips t (Need) when the kernel has no AF_XDP or
// the process may not use it.
func OpenXSK(t testing.TB, ns, dev string, cfg xsk.Config) *xsk.Socket {
	t.Helper()
	var s *xsk.Socket
	var err error
	InNetns(t, ns, func() error {
		s, err = xsk.Open(dev, 0, cfg)
		return nil
	})
	switch {
	case errors.Is(err, xsk.ErrPermission), errors.Is(err, unix.EAFNOSUPPORT):
		Need(t, err.Error())
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// PeerSocket is PacketSocket on the peer's end, with a receive buffer
// for everything a test sends.
func (v Veth) PeerSocket(t testing.TB) (fd, ifindex int) {
	t.Helper()
	InNetns(t, v.PeerNS, func() (err error) {
		if fd, ifindex, err = PacketSocket(v.PeerDev); err == nil {
			err = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 32<<20)
		}
		return err
	})
	t.Cleanup(func() { syscall.Close(fd) })
	return fd, ifindex
}

// Capture reads, in hex, the frames that come in on the packet socket fd
// (not those it sends) until the returned function is called, which
// waits until none has come for fd's receive timeout and returns them.
func Capture(t testing.TB, fd int) func() []string {
	var got []string
	var stop atomic.Bool
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 1<<16)
		for {
			n, from, err := syscall.Recvfrom(fd, buf, 0)
			switch {
			case err == syscall.EINTR:
			case err == syscall.EAGAIN:
				if stop.Load() {
					done <- nil
					return
				}
			case err != nil:
				done <- err
				return
			case from.(*syscall.SockaddrLinklayer).Pkttype != syscall.PACKET_OUTGOING:
				got = append(got, hex.EncodeToString(buf[:n]))
			}
		}
	}()
	return func() []string {
		stop.Store(true)
		if err := <-done; err != nil {
			t.Fatalf("receive: %v", err)
		}
		return got
	}
}
