package xdprun

import (
	"encoding/binary"
	"fmt"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PacketConn is an AF_PACKET socket on one interface: the host's end of a
// program attached there. On ingress it receives what reaches the kernel's
// stack, which with a program attached is what the program passed
// (XDP_PASS): the packet taps run after the XDP hook, in generic mode as
// in the driver's, and a frame the program transmits (XDP_TX) or drops
// never reaches them. Frames leaving the interface (the stack's, other
// sockets') are skipped. Writes go out of the interface as they are.
type PacketConn struct {
	fd  int
	oob []byte
}

// Timeout is how long Read waits before it returns no frame, so that its
// caller can see whether to stop.
const Timeout = 100 * time.Millisecond

// ListenPacket opens a packet socket on interface dev, in the calling
// thread's network namespace, with a receive buffer of rcvbuf bytes (0:
// the system's default).
func ListenPacket(dev string, rcvbuf int) (*PacketConn, error) {
	ifc, err := net.InterfaceByName(dev)
	if err != nil {
		return nil, err
	}
	proto := int(htons(unix.ETH_P_ALL))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, fmt.Errorf("packet socket: %w", err)
	}
	c := &PacketConn{fd: fd, oob: make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.TpacketAuxdata{}))))}
	tv := unix.NsecToTimeval(Timeout.Nanoseconds())
	switch {
	case unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: ifc.Index}) != nil:
		err = fmt.Errorf("packet socket: bind to %s", dev)
	// The kernel moves a VLAN tag out of the frame before the taps;
	// the auxiliary data gives it back.
	case unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1) != nil:
		err = fmt.Errorf("packet socket: PACKET_AUXDATA")
	case unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) != nil:
		err = fmt.Errorf("packet socket: SO_RCVTIMEO")
	case rcvbuf > 0 && unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) != nil &&
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf) != nil:
		err = fmt.Errorf("packet socket: SO_RCVBUF %d", rcvbuf)
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return c, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Read receives the next frame that came in into buf, with its VLAN tag
// (if the kernel took one out) put back after the MAC addresses, and
// returns its length: 0 when none came within Timeout. A frame longer
// than len(buf)-4 is cut short and has n > len(buf)-4.
func (c *PacketConn) Read(buf []byte) (n int, err error) {
	for {
		n, oobn, flags, from, err := unix.Recvmsg(c.fd, buf[:len(buf)-4], c.oob, unix.MSG_TRUNC)
		if err == unix.EAGAIN || err == unix.EINTR {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if flags&unix.MSG_TRUNC != 0 || n < 12 {
			return n, nil
		}
		tpid, tci, ok := vlanTag(c.oob[:oobn])
		if ok {
			copy(buf[16:n+4], buf[12:n])
			binary.BigEndian.PutUint16(buf[12:], tpid)
			binary.BigEndian.PutUint16(buf[14:], tci)
			n += 4
		}
		return n, nil
	}
}

// vlanTag reads the tag the kernel took out of a frame from its
// auxiliary data.
func vlanTag(oob []byte) (tpid, tci uint16, ok bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, 0, false
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA || len(m.Data) < int(unsafe.Sizeof(unix.TpacketAuxdata{})) {
			continue
		}
		// struct tpacket_auxdata, in the host's order.
		status := binary.NativeEndian.Uint32(m.Data)
		if status&unix.TP_STATUS_VLAN_VALID == 0 {
			return 0, 0, false
		}
		tpid = unix.ETH_P_8021Q
		if status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
			tpid = binary.NativeEndian.Uint16(m.Data[18:])
		}
		return tpid, binary.NativeEndian.Uint16(m.Data[16:]), true
	}
	return 0, 0, false
}

// Write sends a whole frame out of the interface.
func (c *PacketConn) Write(frame []byte) error {
	_, err := unix.Write(c.fd, frame)
	return err
}

// Dropped is how many frames the kernel dropped since the last call
// because the socket's buffer was full.
func (c *PacketConn) Dropped() (uint64, error) {
	st, err := unix.GetsockoptTpacketStats(c.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0, err
	}
	return uint64(st.Drops), nil
}

// Close closes the socket.
func (c *PacketConn) Close() error { return unix.Close(c.fd) }
