// Package rdma is RoCEv2 around the models in models/rdma: the transport
// packets of an RC queue pair (BTH, RETH, ImmDt, AETH and the ICRC, as
// models/lib/roce.nsc lays them out) framed in Ethernet, IPv4 or IPv6 and
// UDP to port 4791.
package rdma

import (
	"encoding/binary"
	"net"

	"github.com/dragonet-go/nsc/packet"
)

// Port is RoCEv2's UDP destination port.
const Port = 4791

// RC opcodes (InfiniBand Architecture, table 38).
const (
	SendFirst     = 0x00
	SendMiddle    = 0x01
	SendLast      = 0x02
	SendLastImm   = 0x03
	SendOnly      = 0x04
	SendOnlyImm   = 0x05
	WriteFirst    = 0x06
	WriteMiddle   = 0x07
	WriteLast     = 0x08
	WriteLastImm  = 0x09
	WriteOnly     = 0x0a
	WriteOnlyImm  = 0x0b
	Acknowledge   = 0x11
	HeaderLen     = 12 // BTH
	RETHLen       = 16
	ImmLen        = 4
	AETHLen       = 4
	DefaultPKey   = 0xffff
	psnMask       = 1<<24 - 1
	ipv4HeaderLen = 20
	ipv6HeaderLen = 40
	udpHeaderLen  = 8
	ethHeaderLen  = 14
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
	// the packet's own address, DMALen its message's length.
	IRN bool
}

// AppendTransport appends the BTH, the extension headers the opcode has
// and the payload, without the ICRC.
func (p *Packet) AppendTransport(b []byte) []byte {
	var h [HeaderLen + RETHLen + ImmLen]byte
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
func Unwrap(frame []byte) []byte {
	if len(frame) > 13 && frame[12] == 0x86 {
		return frame[ethHeaderLen+ipv6HeaderLen+udpHeaderLen:]
	}
	return frame[ethHeaderLen+ipv4HeaderLen+udpHeaderLen:]
}

func appendHeaders(b []byte, src, dst Endpoint) []byte {
	b = append(b, pad6(dst.MAC)...)
	b = append(b, pad6(src.MAC)...)
	if dst.IP.To4() != nil {
		b = append(b, 0x08, 0x00)
		b = append(b, make([]byte, ipv4HeaderLen)...)
	} else {
		b = append(b, 0x86, 0xdd)
		b = append(b, make([]byte, ipv6HeaderLen)...)
	}
	return append(b, make([]byte, udpHeaderLen)...)
}

func pad6(mac net.HardwareAddr) []byte {
	var m [6]byte
	copy(m[:], mac)
	return m[:]
}

// setLengths fills the IP and UDP headers of the frame at b[start:] for
// its length.
func setLengths(b []byte, start int, src, dst Endpoint) []byte {
	ip := start + ethHeaderLen
	end := len(b)
	if dst.IP.To4() != nil {
		udp := ip + ipv4HeaderLen
		h := b[ip:udp]
		h[0] = 0x45
		binary.BigEndian.PutUint16(h[2:], uint16(end-ip))
		h[6] = 0x40 // don't fragment
		h[8], h[9] = 64, 17
		copy(h[12:], src.IP.To4())
		copy(h[16:], dst.IP.To4())
		binary.BigEndian.PutUint16(h[10:], packet.IPv4HeaderChecksum(h))
		setUDP(b[udp:], src, end-udp)
	} else {
		udp := ip + ipv6HeaderLen
		h := b[ip:udp]
		h[0] = 0x60
		binary.BigEndian.PutUint16(h[4:], uint16(end-udp))
		h[6], h[7] = 17, 64
		copy(h[8:], src.IP.To16())
		copy(h[24:], dst.IP.To16())
		setUDP(b[udp:], src, end-udp)
	}
	return b
}

func setUDP(u []byte, src Endpoint, n int) {
	binary.BigEndian.PutUint16(u, src.Port)
	binary.BigEndian.PutUint16(u[2:], Port)
	binary.BigEndian.PutUint16(u[4:], uint16(n))
}

// finish sets the lengths and the ICRC of the frame at b[start:].
func finish(b []byte, start int, src, dst Endpoint) []byte {
	b = setLengths(b, start, src, dst)
	f := b[start:]
	ip, l4 := ethHeaderLen, ethHeaderLen+ipv4HeaderLen
	v6 := dst.IP.To4() == nil
	if v6 {
		l4 = ethHeaderLen + ipv6HeaderLen
	}
	binary.LittleEndian.PutUint32(f[len(f)-packet.ICRCLen:], packet.ICRC(f, ip, l4+udpHeaderLen, len(f), v6))
	return b
}
