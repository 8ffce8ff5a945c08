package ejfat

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// EVIO6Flags are the two flag bits of an EVIO6 segment header, as scapy's
// FlagsField(["last", "first"]) numbers them.
type EVIO6Flags uint8

// The EVIO6 flags.
const (
	EVIO6Last  EVIO6Flags = 1 // the last (possibly short) segment
	EVIO6First EVIO6Flags = 2 // the first segment
)

// EVIO6Seg is an EVIO6 segment header in wire form, 8 bytes, big-endian:
// version 4 bits, reserved 10, flags 2 (first 0b10, last 0b01), roc id 16,
// offset 32. The event's length is not in it: the event is complete when
// the last segment and every byte before it have arrived. The caller checks
// that the slice holds EVIO6Len bytes.
type EVIO6Seg []byte

// Version is the 4-bit version.
func (b EVIO6Seg) Version() uint8 { return b[0] >> 4 }

// Reserved is the 10 reserved bits.
func (b EVIO6Seg) Reserved() uint16 { return binary.BigEndian.Uint16(b) >> 2 & 0x3ff }

// Flags are the first and last flags.
func (b EVIO6Seg) Flags() EVIO6Flags { return EVIO6Flags(b[1] & 3) }

// RocID is the readout controller (source) id.
func (b EVIO6Seg) RocID() uint16 { return binary.BigEndian.Uint16(b[2:]) }

// Offset is where the segment's payload starts in the event.
func (b EVIO6Seg) Offset() uint32 { return binary.BigEndian.Uint32(b[4:]) }

// SetFlags writes the two flag bits, keeping version and reserved.
func (b EVIO6Seg) SetFlags(f EVIO6Flags) { b[1] = b[1]&^3 | uint8(f&3) }

// SetRocID writes the roc id.
func (b EVIO6Seg) SetRocID(id uint16) { binary.BigEndian.PutUint16(b[2:], id) }

// SetOffset writes the offset.
func (b EVIO6Seg) SetOffset(off uint32) { binary.BigEndian.PutUint32(b[4:], off) }

// Encode writes every field, each masked to its width.
func (b EVIO6Seg) Encode(version uint8, reserved uint16, flags EVIO6Flags, rocID uint16, offset uint32) {
	binary.BigEndian.PutUint16(b, uint16(version&0xf)<<12|reserved&0x3ff<<2|uint16(flags&3))
	b.SetRocID(rocID)
	b.SetOffset(offset)
}

// EVIO6 is seed 000's EVIO6 segment header, 8 bytes: Version 4 bits,
// Reserved 10, Flags 2, RocID 16, Offset 32.
type EVIO6 struct {
	layers.BaseLayer
	Version  uint8  // 4 bits
	Reserved uint16 // 10 bits
	Flags    EVIO6Flags
	RocID    uint16
	Offset   uint32
}

// LayerType returns LayerTypeEVIO6.
func (e *EVIO6) LayerType() gopacket.LayerType { return LayerTypeEVIO6 }

// CanDecode returns LayerTypeEVIO6.
func (e *EVIO6) CanDecode() gopacket.LayerClass { return LayerTypeEVIO6 }

// NextLayerType is the payload: the segment's data.
func (e *EVIO6) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

// DecodeFromBytes decodes the 8-byte header.
func (e *EVIO6) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < EVIO6Len {
		df.SetTruncated()
		return fmt.Errorf("EVIO6 segment header: %d bytes, need %d", len(data), EVIO6Len)
	}
	b := EVIO6Seg(data)
	e.Version, e.Reserved, e.Flags = b.Version(), b.Reserved(), b.Flags()
	e.RocID, e.Offset = b.RocID(), b.Offset()
	e.BaseLayer = layers.BaseLayer{Contents: data[:EVIO6Len], Payload: data[EVIO6Len:]}
	return nil
}

// SerializeTo writes the header; fields wider than their bits are an error.
func (e *EVIO6) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	if e.Version > 0xf || e.Reserved > 0x3ff || e.Flags > 3 {
		return fmt.Errorf("EVIO6 segment header: version %d, reserved %d or flags %d too wide", e.Version, e.Reserved, e.Flags)
	}
	bytes, err := b.PrependBytes(EVIO6Len)
	if err != nil {
		return err
	}
	EVIO6Seg(bytes).Encode(e.Version, e.Reserved, e.Flags, e.RocID, e.Offset)
	return nil
}

func decodeEVIO6(data []byte, p gopacket.PacketBuilder) error { return decodeLayer(&EVIO6{}, data, p) }
