package lbnet_test

import (
	"net"
	"net/netip"

	"github.com/dragonet-go/nsc/internal/udpbatch"
)

// batchReader reads up to n datagrams at a time from c with recvmmsg,
// allocating nothing per call: a benchmark's members count what the LB
// sends without adding allocations of their own.
func batchReader(c *net.UDPConn, n int) func() (int, error) {
	raw, _ := c.SyscallConn()
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	r := udpbatch.NewReceiver(bufs)
	return func() (int, error) { return r.Receive(raw, 0, 0) }
}

// batchWriter sends the datagrams ds with one sendmmsg on the connected
// socket c, allocating nothing per call: one by one, or with gso as
// UDP_SEGMENT messages of the runs of one size but the last (up to 64
// datagrams a message).
func batchWriter(c *net.UDPConn, ds [][]byte, gso bool) func() (int, error) {
	raw, _ := c.SyscallConn()
	s := udpbatch.NewSender(len(ds))
	s.GSO = gso
	return func() (int, error) {
		for _, d := range ds {
			s.Add(d, netip.AddrPort{})
		}
		return s.Flush(raw)
	}
}
