package difftest

import (
	"encoding/binary"

	"github.com/dragonet-go/nsc/packet"
)

// Grow returns frame lengthened to n bytes (a copy; frame itself when it
// is n bytes or longer) as its sender would have sent a longer one: the
// bytes added carry a pattern, and an IPv4 or IPv6 packet behind Ethernet
// (and up to two VLAN tags) whose length field covers the rest of the
// frame (once Ethernet's padding is cut) has it grown, its IPv4 header checksum redone, and a UDP datagram
// in it that ends with the packet has its length grown and its checksum,
// if it has one, redone (still wrong if it was wrong). Other frames are
// only padded. Jumbo frames for the backends' differential tests.
func Grow(frame []byte, n int) []byte {
	if len(frame) >= n {
		return frame
	}
	add := n - len(frame)
	f := make([]byte, n)
	copy(f, frame)
	for i := len(frame); i < n; i++ {
		f[i] = byte(i*7 + i>>8)
	}
	ip := 14
	for k := 0; k < 2 && len(frame) >= ip+4 && (binary.BigEndian.Uint16(frame[ip-2:]) == 0x8100 || binary.BigEndian.Uint16(frame[ip-2:]) == 0x88a8); k++ {
		ip += 4
	}
	if len(frame) < ip {
		return f
	}
	rest := len(frame) - ip
	var udp int // offset of a UDP header, 0 when none
	var pseudo func(l4len int) uint32
	switch binary.BigEndian.Uint16(frame[ip-2:]) {
	case 0x0800:
		if rest < 20 || frame[ip]>>4 != 4 {
			return f
		}
		if l := int(binary.BigEndian.Uint16(frame[ip+2:])); l < rest && l >= 20 {
			return Grow(frame[:ip+l], n) // without the Ethernet padding
		} else if l != rest {
			return f
		}
		hl := int(frame[ip]&0xf) * 4
		binary.BigEndian.PutUint16(f[ip+2:], uint16(rest+add))
		if hl >= 20 && hl <= rest {
			good := packet.VerifyIPv4Header(frame[ip : ip+hl])
			binary.BigEndian.PutUint16(f[ip+10:], 0)
			c := packet.IPv4HeaderChecksum(f[ip : ip+hl])
			if !good {
				c ^= 1
			}
			binary.BigEndian.PutUint16(f[ip+10:], c)
			if frame[ip+9] == 17 && binary.BigEndian.Uint16(frame[ip+6:])&0x3fff == 0 {
				udp = ip + hl
			}
		}
		pseudo = func(l int) uint32 { return packet.PseudoHeaderSumIPv4(f[ip+12:ip+16], f[ip+16:ip+20], 17, uint16(l)) }
	case 0x86dd:
		if rest < 40 {
			return f
		}
		if l := int(binary.BigEndian.Uint16(frame[ip+4:])) + 40; l < rest {
			return Grow(frame[:ip+l], n) // without the Ethernet padding
		} else if l != rest {
			return f
		}
		binary.BigEndian.PutUint16(f[ip+4:], uint16(rest-40+add))
		if frame[ip+6] == 17 {
			udp = ip + 40
		}
		pseudo = func(l int) uint32 { return packet.PseudoHeaderSumIPv6(f[ip+8:ip+24], f[ip+24:ip+40], 17, uint32(l)) }
	default:
		return f
	}
	l4 := len(frame) - udp
	if udp == 0 || l4 < 8 || int(binary.BigEndian.Uint16(frame[udp+4:])) != l4 {
		return f
	}
	binary.BigEndian.PutUint16(f[udp+4:], uint16(l4+add))
	if binary.BigEndian.Uint16(frame[udp+6:]) == 0 && ip+40 != udp {
		return f // IPv4 UDP without a checksum
	}
	good := packet.VerifyTransport(pseudo(l4), frame[udp:]) // the addresses are the same in f
	c := packet.TransportChecksum(pseudo(l4+add), f[udp:], 6)
	if !good {
		c ^= 1
	}
	binary.BigEndian.PutUint16(f[udp+6:], c)
	return f
}
