package ejfat

import "encoding/binary"

// LBHeader is a version 2 or 3 LB header in wire form, LBLen bytes,
// big-endian:
//
//	0-1 magic "LB", 2 version, 3 protocol (REVersion: an RE header follows),
//	4-5 v2 reserved / v3 slot select, 6-7 v2 entropy / v3 port select,
//	8-15 tick (the event number).
//
// Its methods read and write the fields in place; the caller checks that
// the slice holds LBLen bytes (Valid does).
type LBHeader []byte

// Magic is the 16-bit magic, LBMagic in a valid header.
func (b LBHeader) Magic() uint16 { return binary.BigEndian.Uint16(b) }

// Version is the header's version.
func (b LBHeader) Version() uint8 { return b[2] }

// Protocol is the version of the header that follows.
func (b LBHeader) Protocol() uint8 { return b[3] }

// Slot is v3's slot select (v2: the reserved word).
func (b LBHeader) Slot() uint16 { return binary.BigEndian.Uint16(b[4:]) }

// Port is v3's port select (v2: the entropy).
func (b LBHeader) Port() uint16 { return binary.BigEndian.Uint16(b[6:]) }

// Tick is the event number the LB picks the epoch and slot by.
func (b LBHeader) Tick() uint64 { return binary.BigEndian.Uint64(b[8:]) }

// Valid reports whether b starts with a version 2 or 3 LB header: what a
// receiver takes for one in front of the RE header (whose first byte,
// 0x10, is never 'L').
func (b LBHeader) Valid() bool {
	return len(b) >= LBLen && b.Magic() == LBMagic && (b.Version() == 2 || b.Version() == 3)
}

// Encode writes a header of version (2 or 3) in front of an RE header,
// its two 16-bit words slot and port.
func (b LBHeader) Encode(version uint8, slot, port uint16, tick uint64) {
	binary.BigEndian.PutUint16(b, LBMagic)
	b[2], b[3] = version, REVersion
	binary.BigEndian.PutUint16(b[4:], slot)
	binary.BigEndian.PutUint16(b[6:], port)
	binary.BigEndian.PutUint64(b[8:], tick)
}
