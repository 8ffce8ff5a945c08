package lbnet

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// readBuffer is the receive buffer Listen asks for (SetReadBuffer): room
// for the bursts that arrive while a worker waits for a core.
const readBuffer = 64 << 20

// Listen opens n UDP sockets on addr (port 0: one the kernel picks),
// sharing its port with SO_REUSEPORT: the kernel hashes each sender's
// address and port to one of them, so one sender's datagrams stay in
// order on one worker. It refuses a port in use: SO_REUSEPORT would let a
// second LB on it take a share of the datagrams silently.
func Listen(addr *net.UDPAddr, n int) ([]*net.UDPConn, error) {
	if addr.Port != 0 {
		probe, err := net.ListenUDP("udp", addr)
		if err != nil {
			return nil, err
		}
		probe.Close()
	}
	lc := net.ListenConfig{Control: reusePort}
	var conns []*net.UDPConn
	for range n {
		c, err := lc.ListenPacket(context.Background(), "udp", addr.String())
		if err != nil {
			closeAll(conns)
			return nil, err
		}
		conn := c.(*net.UDPConn)
		SetReadBuffer(conn, readBuffer)
		conns = append(conns, conn)
		addr = conn.LocalAddr().(*net.UDPAddr) // the port picked, for the others
	}
	return conns, nil
}

func reusePort(network, address string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); cerr != nil {
		return cerr
	}
	return err
}

func closeAll(conns []*net.UDPConn) {
	for _, c := range conns {
		c.Close()
	}
}

// SetReadBuffer sets c's receive buffer to n bytes past net.core.rmem_max
// if the process may (CAP_NET_ADMIN, SO_RCVBUFFORCE), else as far as
// rmem_max allows: best effort, a smaller buffer only drops more in bursts.
func SetReadBuffer(c *net.UDPConn, n int) {
	raw, err := c.SyscallConn()
	if err == nil {
		raw.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, n)
		})
	}
	if err != nil {
		c.SetReadBuffer(n)
	}
}
