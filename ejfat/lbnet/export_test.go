package lbnet

import (
	"net"
	"net/netip"
)

// Frame frames a datagram as a worker does, for the in-memory baseline.
var Frame = frameOf

// SegmentedSends and CoalescedReceives are the UDP_SEGMENT messages lb's
// workers sent and the UDP_GRO ones they received.
func SegmentedSends(lb *LB) (n uint64) {
	for _, w := range lb.workers {
		n += w.count.segmented.Load()
	}
	return n
}

func CoalescedReceives(lb *LB) (n uint64) {
	for _, w := range lb.workers {
		n += w.count.coalesced.Load()
	}
	return n
}

// BatchReader reads up to n datagrams at a time from c with recvmmsg,
// allocating nothing per call: a benchmark's members count what the LB
// sends without adding allocations of their own.
func BatchReader(c *net.UDPConn, n int) func() (int, error) {
	raw, _ := c.SyscallConn()
	m := newMmsg(n)
	for i := range n {
		m.setBuffer(i, make([]byte, 2048))
	}
	return func() (int, error) { return m.recv(raw, n, 0) }
}

// BatchWriter sends the datagrams ds with one sendmmsg on the connected
// socket c, allocating nothing per call.
func BatchWriter(c *net.UDPConn, ds [][]byte) func() (int, error) {
	raw, _ := c.SyscallConn()
	m := newMmsg(len(ds))
	for i, d := range ds {
		m.setBuffer(i, d)
		m.hdrs[i].Hdr.Name, m.hdrs[i].Hdr.Namelen = nil, 0
	}
	return func() (int, error) { return m.send(raw, 0, len(ds)) }
}

// SegmentWriter sends each group of datagrams, of one size but the last,
// as one UDP_SEGMENT message, all with one sendmmsg, on the connected
// socket c; it returns the datagrams sent.
func SegmentWriter(c *net.UDPConn, groups [][][]byte) func() (int, error) {
	raw, _ := c.SyscallConn()
	var ds [][]byte
	for _, g := range groups {
		ds = append(ds, g...)
	}
	m := newMmsg(len(ds))
	for i, d := range ds {
		m.setBuffer(i, d)
	}
	first := 0
	for k, g := range groups {
		m.setSend(k, first, len(g), len(g[0]), netip.AddrPortFrom(netip.IPv4Unspecified(), 0))
		m.hdrs[k].Hdr.Name, m.hdrs[k].Hdr.Namelen = nil, 0 // connected
		first += len(g)
	}
	return func() (int, error) {
		n, err := m.send(raw, 0, len(groups))
		return n * len(ds) / len(groups), err
	}
}
