package frame

import (
	"net"
	"net/netip"
)

// Datagram describes the frame of a UDP datagram: Ethernet, IPv4 or IPv6
// (by Src's family), UDP. Build writes its headers in front of a payload;
// ParseUDP reads them from a frame.
type Datagram struct {
	DstMAC, SrcMAC net.HardwareAddr // nil: zeros
	Src, Dst       netip.AddrPort   // one family; IPv4-mapped is IPv4
	TTL            uint8            // or hop limit
	DontFragment   bool             // IPv4
	// Checksum: the UDP checksum over the payload. Without it an IPv4
	// datagram carries 0 ("none", for a receiver after the kernel's check);
	// IPv6 requires one and has it, unless ZeroIPv6Checksum.
	Checksum bool
	// ZeroIPv6Checksum leaves an IPv6 datagram's UDP checksum 0, as
	// RoCEv2 does: its ICRC covers the datagram (RFC 6935 lets a tunnel
	// protocol do so).
	ZeroIPv6Checksum bool
}

// ipv4 reports whether d goes over IPv4.
func (d *Datagram) ipv4() bool { return d.Src.Addr().Is4() || d.Src.Addr().Is4In6() }

// HeaderLen is the bytes of d's headers, in front of the payload.
func (d *Datagram) HeaderLen() int {
	if d.ipv4() {
		return EthernetLen + IPv4MinLen + UDPLen
	}
	return EthernetLen + IPv6Len + UDPLen
}

// Build writes d's headers into f[:d.HeaderLen()], for the payload that
// follows them to the end of f, with the lengths and checksums. It
// allocates nothing.
func (d *Datagram) Build(f []byte) {
	eth := EthernetFields{Destination: d.DstMAC, Source: d.SrcMAC, Type: TypeIPv6}
	if d.ipv4() {
		eth.Type = TypeIPv4
	}
	Ethernet(f).Encode(&eth)
	ip := f[EthernetLen:]
	var u UDP
	if d.ipv4() {
		u = UDP(ip[IPv4MinLen:])
		var flags uint16
		if d.DontFragment {
			flags = IPv4DontFragment
		}
		IPv4(ip).Encode(&IPv4Fields{TotalLength: uint16(len(ip)), Flags: flags, TTL: d.TTL, Protocol: ProtocolUDP,
			Src: d.Src.Addr(), Dst: d.Dst.Addr()})
	} else {
		u = UDP(ip[IPv6Len:])
		IPv6(ip).Encode(&IPv6Fields{PayloadLength: uint16(len(u)), NextHeader: ProtocolUDP, HopLimit: d.TTL,
			Src: d.Src.Addr(), Dst: d.Dst.Addr()})
	}
	u.Encode(&UDPFields{SrcPort: d.Src.Port(), DstPort: d.Dst.Port(), Length: uint16(len(u))})
	if d.ipv4() && d.Checksum || !d.ipv4() && !d.ZeroIPv6Checksum {
		u.SetChecksum(u.CalculateChecksum(d.Src.Addr(), d.Dst.Addr()))
	}
}

// ParseUDP finds the UDP datagram an Ethernet frame holds: its source and
// destination (addresses unmapped) and payload, a view of f. ok is false
// for a frame that holds no whole unfragmented datagram: too short, not
// IPv4 or IPv6, an IPv4 header length under 20, a fragment, not UDP (an
// IPv6 extension header included), or a UDP length other than what the IP
// length leaves it (truncated or padded: not the datagram sent). Trailing
// bytes past the IP length (Ethernet padding) are ignored. Checksums are
// not checked: the caller's kernel or NIC did, or the caller does.
func ParseUDP(f []byte) (src, dst netip.AddrPort, payload []byte, ok bool) {
	if len(f) < EthernetLen {
		return src, dst, nil, false
	}
	ip := f[EthernetLen:]
	var s, d netip.Addr
	var u []byte
	switch Ethernet(f).Type() {
	case TypeIPv4:
		h := IPv4(ip)
		if len(ip) < IPv4MinLen || h.Version() != 4 || h.HeaderLength() < IPv4MinLen || int(h.TotalLength()) < h.HeaderLength() ||
			int(h.TotalLength()) > len(ip) || h.Protocol() != ProtocolUDP || h.Flags()&IPv4MoreFragments != 0 || h.FragmentOffset() != 0 {
			return src, dst, nil, false
		}
		s, d, u = h.Source(), h.Destination(), ip[h.HeaderLength():h.TotalLength()]
	case TypeIPv6:
		h := IPv6(ip)
		if len(ip) < IPv6Len || h.Version() != 6 || h.NextHeader() != ProtocolUDP || IPv6Len+int(h.PayloadLength()) > len(ip) {
			return src, dst, nil, false
		}
		s, d, u = h.Source().Unmap(), h.Destination().Unmap(), ip[IPv6Len:IPv6Len+int(h.PayloadLength())]
	default:
		return src, dst, nil, false
	}
	if len(u) < UDPLen || int(UDP(u).Length()) != len(u) {
		return src, dst, nil, false
	}
	h := UDP(u)
	return netip.AddrPortFrom(s, h.SourcePort()), netip.AddrPortFrom(d, h.DestinationPort()), u[UDPLen:], true
}
