// Package frame reads and writes Ethernet, IPv4, IPv6 and UDP headers in
// place, as typed byte slices in gVisor's header style: a getter and a
// setter per field, a Fields struct and Encode to build one, checksums
// from packet's one-complement sums. UDP (a Datagram's three headers)
// builds and parses whole frames of a UDP datagram, over IPv4 or IPv6: the
// one place nsc's Go runtime frames or unframes a datagram by hand.
//
// A view's methods index the slice without checking its length (a short
// one panics, as a slice index does); ParseUDP checks everything, and
// finds no datagram in a frame that is short, fragmented, not UDP, or
// whose lengths disagree.
package frame

import (
	"encoding/binary"
	"net"
	"net/netip"

	"github.com/dragonet-go/nsc/packet"
)

// Header lengths and the numbers that name what follows a header.
const (
	EthernetLen = 14
	IPv4MinLen  = 20
	IPv6Len     = 40
	UDPLen      = 8

	TypeIPv4    = 0x0800
	TypeIPv6    = 0x86dd
	ProtocolUDP = 17
)

// Ethernet is an Ethernet II header.
type Ethernet []byte

// Destination is the destination MAC address (a view of the header's bytes).
func (e Ethernet) Destination() net.HardwareAddr { return net.HardwareAddr(e[0:6]) }

// Source is the source MAC address (a view of the header's bytes).
func (e Ethernet) Source() net.HardwareAddr { return net.HardwareAddr(e[6:12]) }

// Type is the EtherType.
func (e Ethernet) Type() uint16 { return binary.BigEndian.Uint16(e[12:]) }

// SetDestination writes the destination (6 bytes; nil or short: zeros).
func (e Ethernet) SetDestination(a net.HardwareAddr) { clear(e[copy(e[0:6], a):6]) }

// SetSource writes the source (6 bytes; nil or short: zeros).
func (e Ethernet) SetSource(a net.HardwareAddr) { clear(e[6+copy(e[6:12], a) : 12]) }

// SetType writes the EtherType.
func (e Ethernet) SetType(t uint16) { binary.BigEndian.PutUint16(e[12:], t) }

// EthernetFields are an Ethernet header's fields.
type EthernetFields struct {
	Destination, Source net.HardwareAddr
	Type                uint16
}

// Encode writes f.
func (e Ethernet) Encode(f *EthernetFields) {
	e.SetDestination(f.Destination)
	e.SetSource(f.Source)
	e.SetType(f.Type)
}

// IPv4 is an IPv4 header.
type IPv4 []byte

// IPv4 flags, in the 16 bits of flags and fragment offset.
const (
	IPv4DontFragment  = 0x4000
	IPv4MoreFragments = 0x2000
)

// Version is the IP version (4).
func (ip IPv4) Version() uint8 { return ip[0] >> 4 }

// HeaderLength is the header's length in bytes, options included.
func (ip IPv4) HeaderLength() int { return int(ip[0]&0xf) * 4 }

// TotalLength is the packet's length, header and payload.
func (ip IPv4) TotalLength() uint16 { return binary.BigEndian.Uint16(ip[2:]) }

// Flags is the 3 flag bits, in place (IPv4DontFragment, IPv4MoreFragments).
func (ip IPv4) Flags() uint16 { return binary.BigEndian.Uint16(ip[6:]) &^ 0x1fff }

// FragmentOffset is the fragment's offset in 8-byte units.
func (ip IPv4) FragmentOffset() uint16 { return binary.BigEndian.Uint16(ip[6:]) & 0x1fff }

// TTL is the time to live.
func (ip IPv4) TTL() uint8 { return ip[8] }

// Protocol is what follows the header.
func (ip IPv4) Protocol() uint8 { return ip[9] }

// Checksum is the header checksum field.
func (ip IPv4) Checksum() uint16 { return binary.BigEndian.Uint16(ip[10:]) }

// Source is the source address.
func (ip IPv4) Source() netip.Addr { return netip.AddrFrom4([4]byte(ip[12:16])) }

// Destination is the destination address.
func (ip IPv4) Destination() netip.Addr { return netip.AddrFrom4([4]byte(ip[16:20])) }

// SetTotalLength writes the packet's length.
func (ip IPv4) SetTotalLength(n uint16) { binary.BigEndian.PutUint16(ip[2:], n) }

// SetChecksum writes the header checksum field.
func (ip IPv4) SetChecksum(c uint16) { binary.BigEndian.PutUint16(ip[10:], c) }

// CalculateChecksum is the header's checksum with its checksum field read
// as zero: the value SetChecksum should write.
func (ip IPv4) CalculateChecksum() uint16 { return packet.IPv4HeaderChecksum(ip[:ip.HeaderLength()]) }

// IPv4Fields are the fields of an IPv4 header without options.
type IPv4Fields struct {
	TotalLength uint16
	ID          uint16
	Flags       uint16 // IPv4DontFragment; fragments are not built
	TTL         uint8
	Protocol    uint8
	Src, Dst    netip.Addr // IPv4 (or IPv4-mapped) addresses
}

// Encode writes f, IHL 5, and the header checksum.
func (ip IPv4) Encode(f *IPv4Fields) {
	ip[0], ip[1] = 0x45, 0
	ip.SetTotalLength(f.TotalLength)
	binary.BigEndian.PutUint16(ip[4:], f.ID)
	binary.BigEndian.PutUint16(ip[6:], f.Flags)
	ip[8], ip[9] = f.TTL, f.Protocol
	s, d := f.Src.Unmap().As4(), f.Dst.Unmap().As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	ip.SetChecksum(0)
	ip.SetChecksum(ip.CalculateChecksum())
}

// IPv6 is an IPv6 header.
type IPv6 []byte

// Version is the IP version (6).
func (ip IPv6) Version() uint8 { return ip[0] >> 4 }

// PayloadLength is the length of what follows the header.
func (ip IPv6) PayloadLength() uint16 { return binary.BigEndian.Uint16(ip[4:]) }

// NextHeader is what follows the header.
func (ip IPv6) NextHeader() uint8 { return ip[6] }

// HopLimit is the hop limit.
func (ip IPv6) HopLimit() uint8 { return ip[7] }

// Source is the source address.
func (ip IPv6) Source() netip.Addr { return netip.AddrFrom16([16]byte(ip[8:24])) }

// Destination is the destination address.
func (ip IPv6) Destination() netip.Addr { return netip.AddrFrom16([16]byte(ip[24:40])) }

// SetPayloadLength writes the length of what follows the header.
func (ip IPv6) SetPayloadLength(n uint16) { binary.BigEndian.PutUint16(ip[4:], n) }

// IPv6Fields are an IPv6 header's fields (traffic class and flow label 0).
type IPv6Fields struct {
	PayloadLength uint16
	NextHeader    uint8
	HopLimit      uint8
	Src, Dst      netip.Addr
}

// Encode writes f.
func (ip IPv6) Encode(f *IPv6Fields) {
	binary.BigEndian.PutUint32(ip, 6<<28)
	ip.SetPayloadLength(f.PayloadLength)
	ip[6], ip[7] = f.NextHeader, f.HopLimit
	s, d := f.Src.As16(), f.Dst.As16()
	copy(ip[8:24], s[:])
	copy(ip[24:40], d[:])
}

// UDP is a UDP header.
type UDP []byte

// SourcePort is the source port.
func (u UDP) SourcePort() uint16 { return binary.BigEndian.Uint16(u) }

// DestinationPort is the destination port.
func (u UDP) DestinationPort() uint16 { return binary.BigEndian.Uint16(u[2:]) }

// Length is the datagram's length, header and payload.
func (u UDP) Length() uint16 { return binary.BigEndian.Uint16(u[4:]) }

// Checksum is the checksum field (0 over IPv4: none).
func (u UDP) Checksum() uint16 { return binary.BigEndian.Uint16(u[6:]) }

// SetLength writes the datagram's length.
func (u UDP) SetLength(n uint16) { binary.BigEndian.PutUint16(u[4:], n) }

// SetChecksum writes the checksum field.
func (u UDP) SetChecksum(c uint16) { binary.BigEndian.PutUint16(u[6:], c) }

// CalculateChecksum is the checksum of the datagram u (header and payload,
// its checksum field read as zero) from src to dst: the value SetChecksum
// should write (never 0, which means none). An IPv4-mapped address sums
// as its IPv4 address does (its 0xffff word is one's-complement zero), so
// the family of the addresses need not be the IP header's.
func (u UDP) CalculateChecksum(src, dst netip.Addr) uint16 {
	return packet.TransportChecksum(pseudo(src, dst, len(u)), u, 6)
}

// ChecksumValid reports whether the datagram u from src to dst (as
// CalculateChecksum takes them) sums to one's-complement zero, its
// checksum field included. A checksum of 0 over IPv4 (none) is the
// caller's case.
func (u UDP) ChecksumValid(src, dst netip.Addr) bool {
	return packet.VerifyTransport(pseudo(src, dst, len(u)), u)
}

// pseudo is the sum of the pseudo-header of n bytes of UDP from src to dst.
func pseudo(src, dst netip.Addr, n int) uint32 {
	if src.Is4() {
		s, d := src.As4(), dst.As4()
		return packet.PseudoHeaderSumIPv4(s[:], d[:], ProtocolUDP, uint16(n))
	}
	s, d := src.As16(), dst.As16()
	return packet.PseudoHeaderSumIPv6(s[:], d[:], ProtocolUDP, uint32(n))
}

// UDPFields are a UDP header's fields.
type UDPFields struct {
	SrcPort, DstPort uint16
	Length           uint16
	Checksum         uint16
}

// Encode writes f.
func (u UDP) Encode(f *UDPFields) {
	binary.BigEndian.PutUint16(u, f.SrcPort)
	binary.BigEndian.PutUint16(u[2:], f.DstPort)
	u.SetLength(f.Length)
	u.SetChecksum(f.Checksum)
}
