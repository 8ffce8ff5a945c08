package lbnet

import (
	"net"
	"net/netip"
)

// Framer frames datagrams received on one address as a worker does.
type Framer struct{ f framer }

func NewFramer(dst netip.AddrPort) *Framer { return &Framer{framer{dst: dst}} }

// Frame frames the n bytes at buf[FrameRoom:] from src.
func (f *Framer) Frame(buf []byte, mac net.HardwareAddr, src netip.AddrPort, n int) (off, size int) {
	return f.f.frame(buf, mac, src, n)
}

// SegmentedSends and CoalescedReceives are the UDP_SEGMENT messages lb's
// workers sent and the UDP_GRO ones they received.
func SegmentedSends(lb *LB) (n uint64) {
	for _, w := range lb.workers {
		n += w.(*worker).out.Segmented
	}
	return n
}

func CoalescedReceives(lb *LB) (n uint64) {
	for _, w := range lb.workers {
		n += w.common().count.coalesced.Load()
	}
	return n
}

// Batch runs msgs through lb's first worker as one batch received from
// src, each a datagram or (segment > 0) a coalesced run of them, without
// sockets: the worker's work between its recvmmsg and its sendmmsg, the
// kernel's copy into the buffers included. It returns how many datagrams
// the worker queued to send (had its queue filled, it would have sent
// some) and drops them.
func Batch(lb *LB, msgs [][]byte, src netip.AddrPort, segment int) int {
	w := lb.workers[0].(*worker)
	w.begin()
	for i, m := range msgs {
		copy(w.bufs[i][frameRoom:], m)
		w.message(w.bufs[i], src, len(m), false, segment)
	}
	n := w.out.Len()
	w.out.Reset()
	w.tally = Stats{}
	return n
}

// FrameRoom is what a worker's buffers keep in front of a datagram.
const FrameRoom = frameRoom

// Pin and ThreadCPU are a pinned worker's, for a baseline pinned alike.
var (
	Pin       = pin
	ThreadCPU = threadCPU
)
