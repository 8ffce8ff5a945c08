package packet

import (
	"encoding/binary"
	"math/bits"
)

// Sum adds b to initial as big-endian 16-bit words in one's-complement
// arithmetic (RFC 1071), padding an odd final byte with zero. The result is a
// partial sum folded to at most 16 bits, ready to pass as initial for the next
// piece; pieces must have even length except the last, as the RFC's
// word-by-word sum requires.
func Sum(b []byte, initial uint32) uint32 {
	// Adding 64-bit words with end-around carry gives the same residue mod
	// 0xffff as adding 16-bit words, since 2^16 ≡ 1, at a quarter of the steps.
	acc := uint64(initial)
	var c uint64
	for len(b) >= 32 {
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b), 0)
		acc += c
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[8:]), 0)
		acc += c
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[16:]), 0)
		acc += c
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[24:]), 0)
		acc += c
		b = b[32:]
	}
	for len(b) >= 8 {
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b), 0)
		acc += c
		b = b[8:]
	}
	if len(b) >= 4 { // an IPv4 header's last word pair
		acc, c = bits.Add64(acc, uint64(binary.BigEndian.Uint32(b)), 0)
		acc += c
		b = b[4:]
	}
	if len(b) >= 2 {
		acc, c = bits.Add64(acc, uint64(binary.BigEndian.Uint16(b)), 0)
		acc += c
		b = b[2:]
	}
	if len(b) == 1 {
		acc, c = bits.Add64(acc, uint64(b[0])<<8, 0)
		acc += c
	}
	return uint32(fold64(acc))
}

// fold64 reduces a one's-complement sum to 16 bits without complementing.
// A non-zero sum never folds to zero, so +0 and -0 stay apart as RFC 1071
// senders expect.
func fold64(x uint64) uint16 {
	x = x>>32 + x&0xffffffff
	x = x>>32 + x&0xffffffff
	x = x>>16 + x&0xffff
	x = x>>16 + x&0xffff
	x = x>>16 + x&0xffff
	return uint16(x)
}

// Fold folds the carries of a partial sum into 16 bits and complements it,
// giving the value for a checksum field.
func Fold(sum uint32) uint16 { return ^fold64(uint64(sum)) }

// sumSkip is Sum with the two bytes at off read as zero: the checksum field of
// the header being summed. An off outside b skips nothing.
func sumSkip(b []byte, off int, initial uint32) uint32 {
	switch {
	case off < 0 || off > len(b)-2:
		return Sum(b, initial)
	case off&1 == 0:
		return Sum(b[off+2:], Sum(b[:off], initial))
	}
	// An odd offset splits the field across two words: keep the outer byte of
	// each, then carry on from the next even boundary.
	s := Sum(b[:off-1], initial) + uint32(b[off-1])<<8
	if off+2 < len(b) {
		return Sum(b[off+3:], s+uint32(b[off+2]))
	}
	return s
}

// IPv4HeaderChecksum is the checksum of an IPv4 header (hdr is ihl*4 bytes)
// computed with its checksum field read as zero. A hdr shorter than 12 bytes
// has no checksum field and is summed as it is.
func IPv4HeaderChecksum(hdr []byte) uint16 { return Fold(sumSkip(hdr, 10, 0)) }

// VerifyIPv4Header reports whether hdr starts with an IPv4 header whose
// IHL fits in hdr and whose checksum is correct.
func VerifyIPv4Header(hdr []byte) bool {
	if len(hdr) < 20 {
		return false
	}
	n := int(hdr[0]&0xf) * 4
	if n < 20 || n > len(hdr) {
		return false
	}
	return fold64(uint64(Sum(hdr[:n], 0))) == 0xffff
}

// PseudoHeaderSumIPv4 is the partial sum of the IPv4 pseudo-header (RFC 768,
// RFC 793): addresses, protocol and the L4 length.
func PseudoHeaderSumIPv4(src, dst []byte, proto uint8, length uint16) uint32 {
	s := Sum(dst, Sum(src, 0))
	return uint32(fold64(uint64(s) + uint64(proto) + uint64(length)))
}

// PseudoHeaderSumIPv6 is the partial sum of the IPv6 pseudo-header (RFC 8200
// section 8.1): addresses, 32-bit upper-layer length and next header.
func PseudoHeaderSumIPv6(src, dst []byte, proto uint8, length uint32) uint32 {
	s := Sum(dst, Sum(src, 0))
	return uint32(fold64(uint64(s) + uint64(proto) + uint64(length>>16) + uint64(length&0xffff)))
}

// TransportChecksum is the checksum of an L4 segment (header and payload)
// with the pseudo-header sum pseudo, its checksum field at csumOff read as
// zero. A result of 0 is returned as 0xffff: UDP reserves 0 for "no checksum"
// (RFC 768), and for TCP and ICMPv6 the two are the same one's-complement
// zero, so a receiver's check passes either way.
func TransportChecksum(pseudo uint32, l4 []byte, csumOff int) uint16 {
	c := Fold(sumSkip(l4, csumOff, pseudo))
	if c == 0 {
		c = 0xffff
	}
	return c
}

// VerifyTransport reports whether l4, its checksum field included, sums with
// pseudo to one's-complement zero. A UDP-over-IPv4 checksum of 0 means "not
// computed"; that is the caller's case to handle before calling this.
func VerifyTransport(pseudo uint32, l4 []byte) bool {
	return fold64(uint64(Sum(l4, pseudo))) == 0xffff
}

// UpdateChecksum patches checksum old after the bytes oldBytes of the covered
// data became newBytes, by RFC 1624 equation 3: HC' = ~(~HC + ~m + m').
// oldBytes and newBytes have equal, even length and start at an even offset
// of the covered data: callers pass the 16-bit-aligned window around the
// changed field. If old was computed in full, the result equals a full
// recomputation bit for bit.
func UpdateChecksum(old uint16, oldBytes, newBytes []byte) uint16 {
	return ApplyChecksumDelta(old, ChecksumDelta(oldBytes, newBytes), false)
}

// UpdateUDPChecksum is UpdateChecksum with UDP's rules: a zero checksum ("not
// computed", allowed over IPv4) stays zero, and a computed zero is sent as
// 0xffff.
func UpdateUDPChecksum(old uint16, oldBytes, newBytes []byte) uint16 {
	return ApplyChecksumDelta(old, ChecksumDelta(oldBytes, newBytes), true)
}
