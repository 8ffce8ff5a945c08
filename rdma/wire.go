// Package rdma is RoCEv2 around the models in models/rdma: the transport
// packets of an RC queue pair (BTH, RETH, ImmDt, AETH and the ICRC, as
// models/lib/roce.nsc lays them out) framed in Ethernet, IPv4 or IPv6 and
// UDP to port 4791.
package rdma

import (
	"encoding/binary"
	"net"
	"net/netip"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/frame"
)

// Port is RoCEv2's UDP destination port.
const Port = 4791

// RC opcodes (InfiniBand Architecture, table 38).
const (
	SendFirst    = 0x00
	SendMiddle   = 0x01
	SendLast     = 0x02
	SendLastImm  = 0x03
	SendOnly     = 0x04
	SendOnlyImm  = 0x05
	WriteFirst   = 0x06
	WriteMiddle  = 0x07
	WriteLast    = 0x08
	WriteLastImm = 0x09
	WriteOnly    = 0x0a
	WriteOnlyImm = 0x0b
	Acknowledge  = 0x11
	HeaderLen    = 12 // BTH
	RETHLen      = 16
	ImmLen       = 4
	AETHLen      = 4
	IRNETHLen    = 4 // IRN's recv_WQE_SN (models/rdma/irn.nsc)
	DefaultPKey  = 0xffff
	psnMask      = 1<<24 - 1
	// PlacementLen is the length of the placement header the responder
	// model puts in front of a whole message (models/rdma/naa.nsc).
	PlacementLen = 85
)

// AETH syndromes: an ACK (with no credit count), and the NAKs.
const (
	SyndromeACK        = 0x1f
	NAKSequence        = 0x60
	NAKInvalidRequest  = 0x61
	NAKRemoteAccess    = 0x62
	NAKRemoteOperation = 0x63
	SyndromeRNRNAK     = 0x20 // NAAICE's failed SEND
)

// HasRETH reports whether opcode op carries a RETH (WRITE First and Only).
func HasRETH(op uint8) bool { return op == WriteFirst || op == WriteOnly || op == WriteOnlyImm }

// WriteOpcode is the opcode of packet i of an n-packet WRITE, its last
// packet with immediate data if withImm.
func WriteOpcode(i, n int, withImm bool) uint8 {
	switch {
	case n == 1 && withImm:
		return WriteOnlyImm
	case n == 1:
		return WriteOnly
	case i == 0:
		return WriteFirst
	case i < n-1:
		return WriteMiddle
	case withImm:
		return WriteLastImm
	}
	return WriteLast
}

// HasWQESN reports whether opcode op carries IRN's recv_WQE_SN: every
// SEND, and the WRITEs with Immediate (whose last packet consumes a
// receive WQE, as a SEND does).
func HasWQESN(op uint8) bool { return op <= SendOnlyImm || op == WriteLastImm || op == WriteOnlyImm }

// HasImm reports whether opcode op carries immediate data.
func HasImm(op uint8) bool {
	return op == SendLastImm || op == SendOnlyImm || op == WriteLastImm || op == WriteOnlyImm
}

// Packet is one RoCEv2 transport packet.
type Packet struct {
	Opcode   uint8
	SE       bool
	AckReq   bool
	PKey     uint16
	Resv8a   uint8 // FECN, BECN: a router may set them
	DQPN     uint32
	PSN      uint32
	VA       uint64 // RETH, when HasRETH(Opcode)
	RKey     uint32
	DMALen   uint32
	Imm      uint32 // ImmDt, when HasImm(Opcode)
	Syndrome uint8  // AETH, on Acknowledge
	MSN      uint32
	Payload  []byte
	// IRN puts a RETH in every WRITE packet (IRN, seed 004): VA is then
	// the packet's own address, DMALen its message's length; and, after
	// the ImmDt, WQESN, the recv_WQE_SN of the receive WQE the packet
	// consumes, when HasWQESN(Opcode).
	IRN   bool
	WQESN uint32
}

// PSN is the packet sequence number in a BTH, where AppendTransport
// writes it (the AckReq bit above it left out).
func PSN(bth []byte) uint32 { return binary.BigEndian.Uint32(bth[8:]) & psnMask }

// AppendTransport appends the BTH, the extension headers the opcode has
// and the payload, without the ICRC.
func (p *Packet) AppendTransport(b []byte) []byte {
	var h [HeaderLen + RETHLen + ImmLen + IRNETHLen]byte
	h[0] = p.Opcode
	if p.SE {
		h[1] = 0x80
	}
	binary.BigEndian.PutUint16(h[2:], p.PKey)
	binary.BigEndian.PutUint32(h[4:], uint32(p.Resv8a)<<24|p.DQPN&psnMask)
	binary.BigEndian.PutUint32(h[8:], p.PSN&psnMask)
	if p.AckReq {
		h[8] |= 0x80
	}
	n := HeaderLen
	if HasRETH(p.Opcode) || p.IRN && p.Opcode >= WriteFirst && p.Opcode <= WriteOnlyImm {
		binary.BigEndian.PutUint64(h[n:], p.VA)
		binary.BigEndian.PutUint32(h[n+8:], p.RKey)
		binary.BigEndian.PutUint32(h[n+12:], p.DMALen)
		n += RETHLen
	}
	if HasImm(p.Opcode) {
		binary.BigEndian.PutUint32(h[n:], p.Imm)
		n += ImmLen
	}
	if p.IRN && HasWQESN(p.Opcode) {
		binary.BigEndian.PutUint32(h[n:], p.WQESN&psnMask)
		n += IRNETHLen
	}
	if p.Opcode == Acknowledge {
		binary.BigEndian.PutUint32(h[n:], uint32(p.Syndrome)<<24|p.MSN&psnMask)
		n += AETHLen
	}
	return append(append(b, h[:n]...), p.Payload...)
}

// Endpoint is one end of a queue pair's path: MAC, IP (4 or 16 bytes) and
// UDP source port (the destination is always Port).
type Endpoint struct {
	MAC  net.HardwareAddr
	IP   net.IP
	Port uint16
}

// AppendFrame appends p as an Ethernet frame from src to dst: IPv4 (TTL
// 64, DF, header checksum) or IPv6 (hop limit 64) by dst's address, UDP
// with no checksum, the transport and its ICRC.
func AppendFrame(b []byte, src, dst Endpoint, p *Packet) []byte {
	start := len(b)
	b = appendHeaders(b, src, dst)
	b = p.AppendTransport(b)
	b = append(b, 0, 0, 0, 0)
	return finish(b, start, src, dst)
}

// Wrap appends the Ethernet frame of a RoCEv2 datagram (BTH to ICRC) that
// came from src to dst over a UDP socket, with the headers AppendFrame
// writes, so that an ICRC the sender computed over AppendFrame's frame
// holds. The MACs are src's and dst's (zero if unset).
func Wrap(b []byte, src, dst Endpoint, datagram []byte) []byte {
	start := len(b)
	b = appendHeaders(b, src, dst)
	b = append(b, datagram...)
	return setLengths(b, start, src, dst)
}

// Unwrap returns the UDP payload of a frame AppendFrame or Wrap made (or
// the responder's ACK maker): what goes on a UDP socket.
func Unwrap(f []byte) []byte {
	if len(f) >= frame.EthernetLen && frame.Ethernet(f).Type() == frame.TypeIPv6 {
		return f[frame.EthernetLen+frame.IPv6Len+frame.UDPLen:]
	}
	return f[frame.EthernetLen+frame.IPv4MinLen+frame.UDPLen:]
}

// datagram is the framing of a datagram from src to dst: IPv4 (TTL 64,
// DF) or IPv6 (hop limit 64) by dst's address, UDP to Port with no
// checksum (the ICRC covers the datagram).
func datagram(src, dst Endpoint) frame.Datagram {
	v4 := dst.IP.To4() != nil
	return frame.Datagram{DstMAC: dst.MAC, SrcMAC: src.MAC, TTL: 64, DontFragment: true, ZeroIPv6Checksum: true,
		Src: netip.AddrPortFrom(addr(src.IP, v4), src.Port), Dst: netip.AddrPortFrom(addr(dst.IP, v4), Port)}
}

// addr is ip in one family; an address missing or of the other family is
// the family's zero.
func addr(ip net.IP, v4 bool) netip.Addr {
	if v4 {
		if a, ok := netip.AddrFromSlice(ip.To4()); ok {
			return a
		}
		return netip.IPv4Unspecified()
	}
	if a, ok := netip.AddrFromSlice(ip.To16()); ok {
		return a
	}
	return netip.IPv6Unspecified()
}

// appendHeaders appends room for the headers of a frame from src to dst.
func appendHeaders(b []byte, src, dst Endpoint) []byte {
	d := datagram(src, dst)
	return append(b, make([]byte, d.HeaderLen())...)
}

// setLengths writes the headers of the frame at b[start:], lengths and
// the IPv4 header checksum, for the datagram that follows them to b's end.
func setLengths(b []byte, start int, src, dst Endpoint) []byte {
	d := datagram(src, dst)
	d.Build(b[start:])
	return b
}

// finish sets the headers and the ICRC of the frame at b[start:].
func finish(b []byte, start int, src, dst Endpoint) []byte {
	b = setLengths(b, start, src, dst)
	binary.LittleEndian.PutUint32(b[len(b)-packet.ICRCLen:], icrc(b[start:], dst))
	return b
}

// icrc is the ICRC of the frame f (to dst) as its last four bytes should
// hold it.
func icrc(f []byte, dst Endpoint) uint32 {
	v6 := dst.IP.To4() == nil
	bth := frame.EthernetLen + frame.IPv4MinLen + frame.UDPLen
	if v6 {
		bth = frame.EthernetLen + frame.IPv6Len + frame.UDPLen
	}
	return packet.ICRC(f, frame.EthernetLen, bth, len(f), v6)
}
