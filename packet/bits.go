package packet

import "encoding/binary"

// inRange reports whether bits [off, off+width) lie inside b, for width 1..128.
// It is written so a huge off cannot overflow the comparison.
func inRange(b []byte, off, width int) bool {
	return width >= 1 && width <= 128 && off >= 0 && off <= len(b)*8-width
}

// GetBits reads width bits (1..128) starting at bit offset off (bit 0 = MSB of
// b[0]), big-endian as on the wire. ok is false when the field is not wholly
// inside b or width is out of range.
func GetBits(b []byte, off, width int) (Value, bool) {
	if !inRange(b, off, width) {
		return Value{}, false
	}
	if off&7 == 0 {
		// Byte-aligned whole-byte fields (MACs, addresses, ports) are most
		// lookups; read them with single loads.
		b := b[off>>3:]
		switch width {
		case 8:
			return Value{Lo: uint64(b[0])}, true
		case 16:
			return Value{Lo: uint64(binary.BigEndian.Uint16(b))}, true
		case 32:
			return Value{Lo: uint64(binary.BigEndian.Uint32(b))}, true
		case 48:
			return Value{Lo: uint64(binary.BigEndian.Uint16(b))<<32 | uint64(binary.BigEndian.Uint32(b[2:]))}, true
		case 64:
			return Value{Lo: binary.BigEndian.Uint64(b)}, true
		case 128:
			return Value{Hi: binary.BigEndian.Uint64(b), Lo: binary.BigEndian.Uint64(b[8:])}, true
		}
	}
	if width <= 64 {
		return Value{Lo: getUint64(b, off, width)}, true
	}
	return Value{Hi: getUint64(b, off, width-64), Lo: getUint64(b, off+width-64, 64)}, true
}

// getUint64 reads a field of width 1..64 already known to be inside b.
func getUint64(b []byte, off, width int) uint64 {
	i, lead := off>>3, uint(off&7)
	// x holds the 64 bits starting at off: eight bytes shifted left by the
	// lead bits, topped up from a ninth byte. Bytes past b read as zero; they
	// are past the field too.
	x := load64(b, i) << lead
	if lead != 0 && i+8 < len(b) {
		x |= uint64(b[i+8]) >> (8 - lead)
	}
	return x >> (64 - uint(width))
}

// load64 reads up to eight bytes at b[i:] big-endian, zero-padded.
func load64(b []byte, i int) uint64 {
	if i+8 <= len(b) {
		return binary.BigEndian.Uint64(b[i:])
	}
	var x uint64
	for k := 0; k < 8; k++ {
		x <<= 8
		if i+k < len(b) {
			x |= uint64(b[i+k])
		}
	}
	return x
}

// SetBits writes the low width bits (1..128) of v at bit offset off, leaving
// the surrounding bits alone. It reports false, writing nothing, when the field
// is not wholly inside b.
func SetBits(b []byte, off, width int, v Value) bool {
	if !inRange(b, off, width) {
		return false
	}
	if off&7 == 0 {
		b := b[off>>3:]
		switch width {
		case 8:
			b[0] = byte(v.Lo)
			return true
		case 16:
			binary.BigEndian.PutUint16(b, uint16(v.Lo))
			return true
		case 32:
			binary.BigEndian.PutUint32(b, uint32(v.Lo))
			return true
		case 48:
			binary.BigEndian.PutUint16(b, uint16(v.Lo>>32))
			binary.BigEndian.PutUint32(b[2:], uint32(v.Lo))
			return true
		case 64:
			binary.BigEndian.PutUint64(b, v.Lo)
			return true
		case 128:
			binary.BigEndian.PutUint64(b, v.Hi)
			binary.BigEndian.PutUint64(b[8:], v.Lo)
			return true
		}
	}
	if width <= 64 {
		setUint64(b, off, width, v.Lo)
		return true
	}
	setUint64(b, off, width-64, v.Hi)
	setUint64(b, off+width-64, 64, v.Lo)
	return true
}

// setUint64 writes the low width (1..64) bits of x into a field known to be
// inside b. It patches one 64-bit word (plus a ninth byte when the field
// straddles one) where b has room, else goes byte by byte.
func setUint64(b []byte, off, width int, x uint64) {
	i, lead, w := off>>3, uint(off&7), uint(width)
	switch {
	case lead+w <= 64 && i+8 <= len(b):
		sh := 64 - lead - w
		m := ^uint64(0) >> (64 - w) << sh
		u := binary.BigEndian.Uint64(b[i:])
		binary.BigEndian.PutUint64(b[i:], u&^m|x<<sh&m)
		return
	case lead+w > 64 && i+9 <= len(b):
		r := lead + w - 64 // bits in the ninth byte, 1..7
		m := ^uint64(0) >> lead
		u := binary.BigEndian.Uint64(b[i:])
		binary.BigEndian.PutUint64(b[i:], u&^m|x>>r&m)
		mb := byte(0xff << (8 - r))
		b[i+8] = b[i+8]&^mb | byte(x<<(8-r))&mb
		return
	}
	end := off + width // first bit after the field
	for width > 0 {
		i := (end - 1) >> 3
		shift := uint(-end & 7) // bits of b[i] right of the field
		n := min(8-int(shift), width)
		m := byte((1<<uint(n) - 1) << shift)
		b[i] = b[i]&^m | byte(x<<shift)&m
		x >>= uint(n)
		width -= n
		end -= n
	}
}
