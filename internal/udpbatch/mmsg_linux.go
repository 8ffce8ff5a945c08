// Package udpbatch moves batches of UDP datagrams with one recvmmsg or
// sendmmsg through a socket's RawConn, allocating nothing per call (x/net's
// batches allocate an address per datagram received), with the kernel's
// segmentation offloads: a Sender brings the datagrams of a batch to one
// destination together (each destination's in the order they came) and
// sends those of one size but the last as one UDP_SEGMENT (GSO) message,
// and a Receiver reports datagrams the kernel coalesced (UDP_GRO) into
// one buffer. A Receiver reports IPv4 and IPv6 sources; a Sender's
// addresses are IPv4 (sockets of the AF_INET family), and on a connected
// socket of either family it sends without them. Linux only.
package udpbatch

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsg is one direction's vectors for recvmmsg or sendmmsg, made once: a call allocates nothing (x/net's batches allocate an
// address per datagram received). Message i's name, iovecs and control
// bytes are its own; a sent message may gather several iovecs, the
// datagrams of one UDP_SEGMENT (GSO) send.
type mmsg struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // room for either family's
	ctrl  []byte                  // ctrlLen bytes per message

	// The call in progress, and what it returned: fields, so that the
	// function RawConn runs is made once.
	n, flags int
	done     int
	errno    syscall.Errno
	recvFn   func(fd uintptr) bool
	sendFn   func(fd uintptr) bool
}

// ctrlLen is a message's control buffer: one cmsg, UDP_GRO's segment
// size (an int) in, UDP_SEGMENT's (a uint16) out.
var ctrlLen = unix.CmsgSpace(4)

func newMmsg(n int) *mmsg {
	m := &mmsg{hdrs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n), names: make([]unix.RawSockaddrInet6, n),
		ctrl: make([]byte, n*ctrlLen)}
	m.recvFn = func(fd uintptr) bool { return m.call(fd, unix.SYS_RECVMMSG) }
	m.sendFn = func(fd uintptr) bool { return m.call(fd, unix.SYS_SENDMMSG) }
	return m
}

// call makes the system call; false asks RawConn to wait until the socket
// is ready (EAGAIN without MSG_DONTWAIT, or EINTR).
func (m *mmsg) call(fd uintptr, trap uintptr) bool {
	r, _, e := unix.Syscall6(trap, fd, uintptr(unsafe.Pointer(&m.hdrs[0])), uintptr(m.n), uintptr(m.flags), 0, 0)
	if e == unix.EINTR || e == unix.EAGAIN && m.flags&unix.MSG_DONTWAIT == 0 {
		return false
	}
	m.done, m.errno = int(r), e
	return true
}

// setBuffer points iovec i, message i's only one, at b.
func (m *mmsg) setBuffer(i int, b []byte) {
	m.iovs[i].Base = &b[0]
	m.iovs[i].SetLen(len(b))
	m.hdrs[i].Hdr.Iov = &m.iovs[i]
	m.hdrs[i].Hdr.SetIovlen(1)
}

// recv receives up to n datagrams (recvmmsg with flags); the deadline and
// closing of the socket end it as they end a Read.
func (m *mmsg) recv(raw syscall.RawConn, n, flags int) (int, error) {
	for i := range n {
		h := &m.hdrs[i].Hdr
		h.Name, h.Namelen = (*byte)(unsafe.Pointer(&m.names[i])), unix.SizeofSockaddrInet6
		h.Control, h.Flags = &m.ctrl[i*ctrlLen], 0
		h.SetControllen(ctrlLen)
	}
	m.n, m.flags = n, flags
	if err := raw.Read(m.recvFn); err != nil {
		return 0, err
	}
	if m.errno != 0 {
		return 0, m.errno
	}
	return m.done, nil
}

// received is message i's length, source (IPv4 or IPv6), whether
// the kernel truncated it, and, when it coalesced datagrams of one flow
// into it (UDP_GRO), their size (the last may be shorter; 0: one
// datagram).
func (m *mmsg) received(i int) (n int, from netip.AddrPort, truncated bool, segment int) {
	h := &m.hdrs[i]
	sa := &m.names[i]
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
	switch {
	case sa.Family == unix.AF_INET && h.Hdr.Namelen >= unix.SizeofSockaddrInet4:
		from = netip.AddrPortFrom(netip.AddrFrom4((*unix.RawSockaddrInet4)(unsafe.Pointer(sa)).Addr), port)
	case sa.Family == unix.AF_INET6 && h.Hdr.Namelen >= unix.SizeofSockaddrInet6:
		from = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), port)
	}
	if h.Hdr.Controllen >= uint64(unix.CmsgLen(4)) {
		c := m.ctrl[i*ctrlLen:]
		if hdr := (*unix.Cmsghdr)(unsafe.Pointer(&c[0])); hdr.Level == unix.SOL_UDP && hdr.Type == unix.UDP_GRO {
			segment = int(binary.NativeEndian.Uint32(c[unix.CmsgLen(0):]))
		}
	}
	return int(h.Len), from, h.Hdr.Flags&unix.MSG_TRUNC != 0, segment
}

// setSend makes message k the datagrams iovs[first:first+count] to to
// (invalid: a connected socket's peer), of size bytes each but the last:
// one UDP_SEGMENT send when count > 1.
func (m *mmsg) setSend(k, first, count, size int, to netip.AddrPort) {
	h := &m.hdrs[k].Hdr
	h.Name, h.Namelen = nil, 0
	if to.IsValid() {
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&m.names[k]))
		sa.Family = unix.AF_INET
		sa.Addr = to.Addr().Unmap().As4()
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], to.Port())
		h.Name, h.Namelen = (*byte)(unsafe.Pointer(sa)), unix.SizeofSockaddrInet4
	}
	h.Iov = &m.iovs[first]
	h.SetIovlen(count)
	h.Control, h.Controllen = nil, 0
	if count > 1 {
		c := m.ctrl[k*ctrlLen : (k+1)*ctrlLen]
		hdr := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
		hdr.Level, hdr.Type = unix.SOL_UDP, unix.UDP_SEGMENT
		hdr.SetLen(unix.CmsgLen(2))
		binary.NativeEndian.PutUint16(c[unix.CmsgLen(0):], uint16(size))
		h.Control = &c[0]
		h.SetControllen(unix.CmsgSpace(2))
	}
}

// send sends messages [from, k) (sendmmsg) and returns how many went.
func (m *mmsg) send(raw syscall.RawConn, from, k int) (int, error) {
	m.n, m.flags = k-from, 0
	hdrs := m.hdrs
	m.hdrs = m.hdrs[from:]
	err := raw.Write(m.sendFn)
	m.hdrs = hdrs
	if err != nil {
		return 0, err
	}
	if m.errno != 0 {
		return 0, m.errno
	}
	return m.done, nil
}

// SetGRO asks the kernel to hand over datagrams of one flow coalesced
// (UDP_GRO): it does when they arrive so, from a GSO sender on loopback or
// through a NIC's GRO. Best effort: without it they come one by one.
func SetGRO(raw syscall.RawConn) {
	raw.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1) })
}
