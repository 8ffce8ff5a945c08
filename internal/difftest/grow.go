package difftest

import (
	"net/netip"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/frame"
)

// Grow returns the frame in lengthened to n bytes (a copy; in itself when
// it is n bytes or longer) as its sender would have sent a longer one:
// the bytes added carry a pattern, and an IPv4 or IPv6 packet behind
// Ethernet (and up to two VLAN tags) whose length field covers the rest
// of the frame (once Ethernet's padding is cut) has it grown, its IPv4
// header checksum redone, and a UDP datagram in it that ends with the
// packet has its length grown and its checksum, if it has one, redone
// (still wrong if it was wrong). Other frames are only padded. Jumbo
// frames for the backends' differential tests.
func Grow(in []byte, n int) []byte {
	if len(in) >= n {
		return in
	}
	add := n - len(in)
	f := make([]byte, n)
	copy(f, in)
	for i := len(in); i < n; i++ {
		f[i] = byte(i*7 + i>>8)
	}
	// typeAt is the EtherType in front of offset ip: Ethernet's, or a
	// VLAN tag's, which ends in one as Ethernet's header does.
	typeAt := func(ip int) uint16 { return frame.Ethernet(in[ip-frame.EthernetLen:]).Type() }
	ip := frame.EthernetLen
	for k := 0; k < 2 && len(in) >= ip+4 && (typeAt(ip) == 0x8100 || typeAt(ip) == 0x88a8); k++ {
		ip += 4
	}
	if len(in) < ip {
		return f
	}
	rest := len(in) - ip
	var udp int // offset of a UDP header, 0 when none
	var src, dst netip.Addr
	switch typeAt(ip) {
	case frame.TypeIPv4:
		h, g := frame.IPv4(in[ip:]), frame.IPv4(f[ip:])
		if rest < frame.IPv4MinLen || h.Version() != 4 {
			return f
		}
		if l := int(h.TotalLength()); l < rest && l >= frame.IPv4MinLen {
			return Grow(in[:ip+l], n) // without the Ethernet padding
		} else if l != rest {
			return f
		}
		hl := h.HeaderLength()
		g.SetTotalLength(uint16(rest + add))
		if hl >= frame.IPv4MinLen && hl <= rest {
			c := g.CalculateChecksum()
			if !packet.VerifyIPv4Header(h[:hl]) {
				c ^= 1
			}
			g.SetChecksum(c)
			if h.Protocol() == frame.ProtocolUDP && h.Flags()&frame.IPv4MoreFragments == 0 && h.FragmentOffset() == 0 {
				udp = ip + hl
			}
		}
		src, dst = h.Source(), h.Destination()
	case frame.TypeIPv6:
		h := frame.IPv6(in[ip:])
		if rest < frame.IPv6Len {
			return f
		}
		if l := int(h.PayloadLength()) + frame.IPv6Len; l < rest {
			return Grow(in[:ip+l], n) // without the Ethernet padding
		} else if l != rest {
			return f
		}
		frame.IPv6(f[ip:]).SetPayloadLength(uint16(rest - frame.IPv6Len + add))
		if h.NextHeader() == frame.ProtocolUDP {
			udp = ip + frame.IPv6Len
		}
		src, dst = h.Source(), h.Destination()
	default:
		return f
	}
	l4 := len(in) - udp
	if udp == 0 || l4 < frame.UDPLen || int(frame.UDP(in[udp:]).Length()) != l4 {
		return f
	}
	u := frame.UDP(f[udp:])
	u.SetLength(uint16(l4 + add))
	if src.Is4() && frame.UDP(in[udp:]).Checksum() == 0 {
		return f // IPv4 UDP without a checksum
	}
	c := u.CalculateChecksum(src, dst)
	if !frame.UDP(in[udp:]).ChecksumValid(src, dst) { // the addresses are the same in f
		c ^= 1
	}
	u.SetChecksum(c)
	return f
}
