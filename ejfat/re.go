package ejfat

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Wire constants of the RE header (seed 000's "Reassembly Engine
// Meta-Data").
const (
	RELen     = 20
	REVersion = 1
)

// RE is an RE header in wire form, 20 bytes, big-endian:
//
//	bits 0-3 version (1), 4-15 reserved (0), 16-31 data id,
//	32-63 offset of this segment's payload in the event,
//	64-95 length of the whole event, 96-159 event number.
//
// Its methods read and write the fields in place; the caller checks that
// the slice holds RELen bytes (a shorter one panics, like a slice index).
type RE []byte

// Version is the 4-bit version.
func (b RE) Version() uint8 { return b[0] >> 4 }

// Reserved is the 12 reserved bits.
func (b RE) Reserved() uint16 { return binary.BigEndian.Uint16(b) & 0xfff }

// DataID is the source or channel the event came from.
func (b RE) DataID() uint16 { return binary.BigEndian.Uint16(b[2:]) }

// Offset is where the segment's payload starts in the event.
func (b RE) Offset() uint32 { return binary.BigEndian.Uint32(b[4:]) }

// Length is the length of the whole event.
func (b RE) Length() uint32 { return binary.BigEndian.Uint32(b[8:]) }

// EventNumber is the event number (the LB's tick).
func (b RE) EventNumber() uint64 { return binary.BigEndian.Uint64(b[12:]) }

// Valid reports what a receiver checks: RELen bytes, version 1 and the
// reserved bits of byte 1 zero (byte 0 == 0x10, byte 1 == 0).
func (b RE) Valid() bool { return len(b) >= RELen && b[0] == REVersion<<4 && b[1] == 0 }

// SetVersionReserved writes the first 16 bits: version 4 bits, reserved 12.
func (b RE) SetVersionReserved(version uint8, reserved uint16) {
	binary.BigEndian.PutUint16(b, uint16(version)<<12|reserved&0xfff)
}

// SetDataID writes the data id.
func (b RE) SetDataID(id uint16) { binary.BigEndian.PutUint16(b[2:], id) }

// SetOffset writes the segment's offset.
func (b RE) SetOffset(off uint32) { binary.BigEndian.PutUint32(b[4:], off) }

// SetLength writes the event's length.
func (b RE) SetLength(n uint32) { binary.BigEndian.PutUint32(b[8:], n) }

// SetEventNumber writes the event number.
func (b RE) SetEventNumber(n uint64) { binary.BigEndian.PutUint64(b[12:], n) }

// Encode writes a version-1 header with zero reserved bits.
func (b RE) Encode(dataID uint16, offset, length uint32, event uint64) {
	b.SetVersionReserved(REVersion, 0)
	b.SetDataID(dataID)
	b.SetOffset(offset)
	b.SetLength(length)
	b.SetEventNumber(event)
}

// LayerTypeRE is the RE header's gopacket layer type. No LB header chains
// to it (an LB layer's next layer stays the payload, so LB parsers that
// know nothing of it keep working): decode an LB layer's payload from
// LayerTypeRE.
var LayerTypeRE = gopacket.RegisterLayerType(2002, gopacket.LayerTypeMetadata{
	Name: "EJFAT-RE", Decoder: gopacket.DecodeFunc(decodeRE)})

// REHeader is the RE header as a gopacket layer; RE is its wire form.
type REHeader struct {
	layers.BaseLayer
	Version     uint8  // 4 bits
	Reserved    uint16 // 12 bits
	DataID      uint16
	Offset      uint32
	Length      uint32
	EventNumber uint64
}

// LayerType returns LayerTypeRE.
func (h *REHeader) LayerType() gopacket.LayerType { return LayerTypeRE }

// CanDecode returns LayerTypeRE.
func (h *REHeader) CanDecode() gopacket.LayerClass { return LayerTypeRE }

// NextLayerType is the payload: the segment's bytes of the event.
func (h *REHeader) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

// DecodeFromBytes decodes the 20-byte header. Any version decodes (a
// receiver's check is RE.Valid).
func (h *REHeader) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < RELen {
		df.SetTruncated()
		return fmt.Errorf("EJFAT RE header: %d bytes, need %d", len(data), RELen)
	}
	b := RE(data)
	h.Version, h.Reserved, h.DataID = b.Version(), b.Reserved(), b.DataID()
	h.Offset, h.Length, h.EventNumber = b.Offset(), b.Length(), b.EventNumber()
	h.BaseLayer = layers.BaseLayer{Contents: data[:RELen], Payload: data[RELen:]}
	return nil
}

// SerializeTo writes the header; a version or reserved field wider than its
// bits is an error.
func (h *REHeader) SerializeTo(sb gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	if h.Version > 0xf || h.Reserved > 0xfff {
		return fmt.Errorf("EJFAT RE header: version %d or reserved %d too wide", h.Version, h.Reserved)
	}
	bytes, err := sb.PrependBytes(RELen)
	if err != nil {
		return err
	}
	b := RE(bytes)
	b.SetVersionReserved(h.Version, h.Reserved)
	b.SetDataID(h.DataID)
	b.SetOffset(h.Offset)
	b.SetLength(h.Length)
	b.SetEventNumber(h.EventNumber)
	return nil
}

func decodeRE(data []byte, p gopacket.PacketBuilder) error { return decodeLayer(&REHeader{}, data, p) }
