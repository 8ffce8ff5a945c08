package lbnet

import (
	"bytes"
	"net"
	"net/netip"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/frame"
)

// framer writes, in front of a datagram the LB received on dst, the
// Ethernet (to the LB's MAC), IPv4 and UDP headers it had on the wire
// (TTL 64; the UDP checksum 0, "none", which spares summing the payload:
// the kernel has checked it, and it frames what the LB sends anew). It
// keeps the headers of the last source and MAC: the next datagram from
// them costs a copy and two lengths, the IPv4 checksum finished with its
// length, not a build (an event's segments come from one sender, and a
// coalesced message is one sender's).
type framer struct {
	dst netip.AddrPort
	src netip.AddrPort
	mac net.HardwareAddr
	hdr [frame.EthernetLen + frame.IPv4MinLen + frame.UDPLen]byte
	sum uint32 // of the IPv4 header but its length and checksum
}

// frame frames the n datagram bytes at buf[frameRoom:] from src, and
// returns the frame's offset and size.
func (f *framer) frame(buf []byte, mac net.HardwareAddr, src netip.AddrPort, n int) (off, size int) {
	if src != f.src || !bytes.Equal(mac, f.mac) {
		d := frame.Datagram{DstMAC: mac, Src: src, Dst: f.dst, TTL: 64}
		d.Build(f.hdr[:])
		ip := frame.IPv4(f.hdr[frame.EthernetLen:])
		ip.SetTotalLength(0)
		ip.SetChecksum(0)
		f.sum = packet.Sum(ip[:frame.IPv4MinLen], 0)
		f.src, f.mac = src, mac
	}
	h := buf[packet.Headroom : packet.Headroom+len(f.hdr)]
	copy(h, f.hdr[:])
	ip := frame.IPv4(h[frame.EthernetLen:])
	total := uint16(frame.IPv4MinLen + frame.UDPLen + n)
	ip.SetTotalLength(total)
	ip.SetChecksum(packet.Fold(f.sum + uint32(total)))
	frame.UDP(ip[frame.IPv4MinLen:]).SetLength(uint16(frame.UDPLen + n))
	return packet.Headroom, len(f.hdr) + n
}
