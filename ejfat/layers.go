package ejfat

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Wire constants of the EJFAT LB header.
const (
	LBMagic = 0x4C42 // "LB"
	LBPort  = 0x4C42 // the UDP port of seed 000 (v1 requires it exactly)
	LBv1Len = 12     // v1: magic, version, protocol, tick
	LBLen   = 16     // v2 and v3: magic, version, protocol, two 16-bit words, tick
	// EVIO6Len is the length of seed 000's EVIO6 segment header.
	EVIO6Len = 8
)

// Layer types of the EJFAT headers. The EVIO6 segment header follows a v1
// LB header of protocol 1, as seed 000's scapy bind_layers says. No UDP
// port is registered for LayerTypeLB (a forwarded frame may go to port
// 0x4c42 without an LB header): decode a UDP payload from LayerTypeLB, or
// call layers.RegisterUDPPortLayerType(LBPort, LayerTypeLB) to have every
// UDP datagram to that port taken for one, as the 2021 Wireshark plug-in
// does.
var (
	LayerTypeLB = gopacket.RegisterLayerType(2000, gopacket.LayerTypeMetadata{
		Name: "EJFAT-LB", Decoder: gopacket.DecodeFunc(decodeLB)})
	LayerTypeEVIO6 = gopacket.RegisterLayerType(2001, gopacket.LayerTypeMetadata{
		Name: "EVIO6Seg", Decoder: gopacket.DecodeFunc(decodeEVIO6)})
)

// LB is the EJFAT load-balancer header in any of its versions, told apart
// by Version:
//
//	v1 (12 bytes, 2021 code): Magic 16, Version 8, Protocol 8, Tick 64
//	v2 (16 bytes):            Magic 16, Version 8, Protocol 8, Reserved 16, Entropy 16, Tick 64
//	v3 (16 bytes):            Magic 16, Version 8, Protocol 8, SlotSelect 16, PortSelect 16, Tick 64
//
// v2's Reserved/Entropy and v3's SlotSelect/PortSelect are the same bytes:
// decoding fills the pair of the header's version, serializing writes it.
type LB struct {
	layers.BaseLayer
	Magic    uint16
	Version  uint8
	Protocol uint8
	Reserved uint16 // v2
	Entropy  uint16 // v2
	// SlotSelect and PortSelect are v3's.
	SlotSelect, PortSelect uint16
	Tick                   uint64
}

// LBHeaderLen is the length of an LB header of a version: 12 for v1, 16 for
// v2 and v3, 0 for any other.
func LBHeaderLen(version uint8) int {
	switch version {
	case 1:
		return LBv1Len
	case 2, 3:
		return LBLen
	}
	return 0
}

// LayerType returns LayerTypeLB.
func (l *LB) LayerType() gopacket.LayerType { return LayerTypeLB }

// CanDecode returns LayerTypeLB.
func (l *LB) CanDecode() gopacket.LayerClass { return LayerTypeLB }

// NextLayerType is EVIO6 after a v1 header of protocol 1 (seed 000), the
// payload otherwise.
func (l *LB) NextLayerType() gopacket.LayerType {
	if l.Version == 1 && l.Protocol == 1 {
		return LayerTypeEVIO6
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes decodes an LB header: the magic must be LBMagic and the
// version 1, 2 or 3, which gives the length.
func (l *LB) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < 4 {
		df.SetTruncated()
		return fmt.Errorf("EJFAT LB header: %d bytes, need at least 4", len(data))
	}
	l.Magic = binary.BigEndian.Uint16(data)
	l.Version, l.Protocol = data[2], data[3]
	if l.Magic != LBMagic {
		return fmt.Errorf("EJFAT LB header: magic %#04x, want %#04x", l.Magic, LBMagic)
	}
	n := LBHeaderLen(l.Version)
	if n == 0 {
		return fmt.Errorf("EJFAT LB header: unknown version %d", l.Version)
	}
	if len(data) < n {
		df.SetTruncated()
		return fmt.Errorf("EJFAT LB header v%d: %d bytes, need %d", l.Version, len(data), n)
	}
	l.Reserved, l.Entropy, l.SlotSelect, l.PortSelect = 0, 0, 0, 0
	switch h := LBHeader(data); l.Version {
	case 1:
		l.Tick = binary.BigEndian.Uint64(data[4:])
	case 2:
		l.Reserved, l.Entropy, l.Tick = h.Slot(), h.Port(), h.Tick()
	case 3:
		l.SlotSelect, l.PortSelect, l.Tick = h.Slot(), h.Port(), h.Tick()
	}
	l.BaseLayer = layers.BaseLayer{Contents: data[:n], Payload: data[n:]}
	return nil
}

// SerializeTo writes the header of l's version, fields as they are (no
// field is filled in: set Magic to LBMagic).
func (l *LB) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	n := LBHeaderLen(l.Version)
	if n == 0 {
		return fmt.Errorf("EJFAT LB header: cannot serialize version %d", l.Version)
	}
	bytes, err := b.PrependBytes(n)
	if err != nil {
		return err
	}
	switch h := LBHeader(bytes); l.Version {
	case 1:
		binary.BigEndian.PutUint64(bytes[4:], l.Tick)
	case 2:
		h.Encode(l.Version, l.Reserved, l.Entropy, l.Tick)
	case 3:
		h.Encode(l.Version, l.SlotSelect, l.PortSelect, l.Tick)
	}
	// As they are: Encode wrote LBMagic and REVersion.
	binary.BigEndian.PutUint16(bytes, l.Magic)
	bytes[2], bytes[3] = l.Version, l.Protocol
	return nil
}

func decodeLB(data []byte, p gopacket.PacketBuilder) error { return decodeLayer(&LB{}, data, p) }

// decodingLayer is a layer that decodes itself: each header's gopacket
// decoder is decodeLayer of a new one.
type decodingLayer interface {
	gopacket.Layer
	gopacket.DecodingLayer
}

func decodeLayer(l decodingLayer, data []byte, p gopacket.PacketBuilder) error {
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	return p.NextDecoder(l.NextLayerType())
}
