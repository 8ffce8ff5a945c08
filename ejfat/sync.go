package ejfat

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Wire constants of the sync message a sender sends the control plane once
// a second.
const (
	SyncMagic   = 0x4C43 // "LC"
	SyncVersion = 2
	SyncLen     = 28
)

// Sync is a sync message in wire form, 28 bytes, big-endian:
//
//	0-1 magic "LC", 2 version (2), 3 reserved, 4-7 event source id,
//	8-15 the sender's current event number, 16-19 average event rate (Hz),
//	20-27 the sender's clock (Unix time, ns).
//
// The caller checks that the slice holds SyncLen bytes.
type Sync []byte

// Magic is the 16-bit magic, SyncMagic in a valid message.
func (b Sync) Magic() uint16 { return binary.BigEndian.Uint16(b) }

// Version is the message version, SyncVersion in a valid message.
func (b Sync) Version() uint8 { return b[2] }

// Reserved is byte 3.
func (b Sync) Reserved() uint8 { return b[3] }

// SourceID is the event source id (udplbd2 ignores it).
func (b Sync) SourceID() uint32 { return binary.BigEndian.Uint32(b[4:]) }

// EventNumber is the latest event number the sender sent.
func (b Sync) EventNumber() uint64 { return binary.BigEndian.Uint64(b[8:]) }

// Rate is the sender's average event rate in Hz.
func (b Sync) Rate() uint32 { return binary.BigEndian.Uint32(b[16:]) }

// UnixNano is the sender's clock when it sent the message.
func (b Sync) UnixNano() uint64 { return binary.BigEndian.Uint64(b[20:]) }

// Valid reports what the control plane checks of a datagram: exactly
// SyncLen bytes, the magic and the version.
func (b Sync) Valid() bool {
	return len(b) == SyncLen && b.Magic() == SyncMagic && b.Version() == SyncVersion
}

// Encode writes a version-2 message with a zero reserved byte.
func (b Sync) Encode(sourceID uint32, event uint64, rate uint32, unixNano uint64) {
	binary.BigEndian.PutUint16(b, SyncMagic)
	b[2], b[3] = SyncVersion, 0
	binary.BigEndian.PutUint32(b[4:], sourceID)
	binary.BigEndian.PutUint64(b[8:], event)
	binary.BigEndian.PutUint32(b[16:], rate)
	binary.BigEndian.PutUint64(b[20:], unixNano)
}

// LayerTypeSync is the sync message's gopacket layer type; decode a UDP
// payload sent to the control plane's sync port from it.
var LayerTypeSync = gopacket.RegisterLayerType(2003, gopacket.LayerTypeMetadata{
	Name: "EJFAT-Sync", Decoder: gopacket.DecodeFunc(decodeSync)})

// SyncMessage is the sync message as a gopacket layer; Sync is its wire
// form.
type SyncMessage struct {
	layers.BaseLayer
	Magic       uint16
	Version     uint8
	Reserved    uint8
	SourceID    uint32
	EventNumber uint64
	Rate        uint32
	UnixNano    uint64
}

// LayerType returns LayerTypeSync.
func (m *SyncMessage) LayerType() gopacket.LayerType { return LayerTypeSync }

// CanDecode returns LayerTypeSync.
func (m *SyncMessage) CanDecode() gopacket.LayerClass { return LayerTypeSync }

// NextLayerType is the payload: nothing follows a valid message.
func (m *SyncMessage) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

// DecodeFromBytes decodes the first SyncLen bytes, whatever their magic
// and version (the control plane's check is Sync.Valid, which also refuses
// bytes past SyncLen: they are the layer's payload here).
func (m *SyncMessage) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < SyncLen {
		df.SetTruncated()
		return fmt.Errorf("EJFAT sync message: %d bytes, need %d", len(data), SyncLen)
	}
	b := Sync(data)
	m.Magic, m.Version, m.Reserved, m.SourceID = b.Magic(), b.Version(), b.Reserved(), b.SourceID()
	m.EventNumber, m.Rate, m.UnixNano = b.EventNumber(), b.Rate(), b.UnixNano()
	m.BaseLayer = layers.BaseLayer{Contents: data[:SyncLen], Payload: data[SyncLen:]}
	return nil
}

// SerializeTo writes the message, fields as they are (set Magic and
// Version).
func (m *SyncMessage) SerializeTo(sb gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	bytes, err := sb.PrependBytes(SyncLen)
	if err != nil {
		return err
	}
	b := Sync(bytes)
	b.Encode(m.SourceID, m.EventNumber, m.Rate, m.UnixNano)
	binary.BigEndian.PutUint16(b, m.Magic)
	b[2], b[3] = m.Version, m.Reserved
	return nil
}

func decodeSync(data []byte, p gopacket.PacketBuilder) error {
	return decodeLayer(&SyncMessage{}, data, p)
}
