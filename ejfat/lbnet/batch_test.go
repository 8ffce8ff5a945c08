package lbnet_test

import (
	"net"
	"net/netip"

	"github.com/dragonet-go/nsc/internal/udpbatch"
)

// batchReader reads up to n messages at a time from c with recvmmsg and
// returns how many datagrams they brought, allocating nothing per call: a
// benchmark's members count what the LB sends without adding allocations
// of their own. With gro they take datagrams of one flow coalesced
// (UDP_GRO), as nsc recv's ports do.
func batchReader(c *net.UDPConn, n int, gro bool) func() (int, error) {
	raw, _ := c.SyscallConn()
	bufs := make([][]byte, n)
	size := 2048
	if gro {
		udpbatch.SetGRO(raw)
		size = 1 << 16
	}
	for i := range bufs {
		bufs[i] = make([]byte, size)
	}
	r := udpbatch.NewReceiver(bufs)
	return func() (int, error) {
		k, err := r.Receive(raw, 0, 0)
		datagrams := k
		for i := range k {
			if size, _, _, segment := r.Datagram(i); segment > 0 {
				datagrams += (size+segment-1)/segment - 1
			}
		}
		return datagrams, err
	}
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
