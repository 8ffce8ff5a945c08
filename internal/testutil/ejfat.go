package testutil

import (
	"encoding/binary"
	"net"
	"slices"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// ReassemblerEntries are table entries for models/ejfat/reassembler.nsc:
// ports 20000–20015 keep the LB header, 21000 is not a data port, any
// other takes segments without it.
const ReassemblerEntries = `
table_add data_ports keep_lb 20000->20015 => 1
table_add data_ports not_data 21000->21000 => 1
`

// Event is what an EJFAT sender sends: bytes with a data id and an event
// number, from a source address (specs/ejfat-reassembly.md §1).
type Event struct {
	Src    net.IP // 4 bytes: over IPv4; 16: over IPv6
	DataID uint16
	Tick   uint64
	Data   []byte
}

// Segment is one datagram of an event as it reaches the receiver, built
// here from the spec (§2–3), independently of the models.
type Segment struct {
	Src            net.IP
	DataID         uint16
	Tick           uint64
	Offset, Length uint32 // Length: the whole event's
	Payload        []byte
	// LB is the version of a kept LB header (2 or 3), 0 for none.
	LB int
	// LBBytes, if set, is the kept LB header instead of a good one.
	LBBytes []byte
	// RE0 and RE1 are the RE header's first two bytes (0x10, 0 if valid).
	RE0, RE1 byte
	Port     uint16 // the UDP destination port
}

// Segments cuts ev into segments of at most size payload bytes, in order,
// as §3 says: contiguous offsets from 0, the event length in every one.
func Segments(ev Event, size int, lb int) []Segment {
	var out []Segment
	for off := 0; ; off += size {
		end := min(off+size, len(ev.Data))
		out = append(out, Segment{Src: ev.Src, DataID: ev.DataID, Tick: ev.Tick,
			Offset: uint32(off), Length: uint32(len(ev.Data)), Payload: ev.Data[off:end],
			LB: lb, RE0: 0x10, Port: 19522})
		if end == len(ev.Data) {
			return out
		}
	}
}

// Headers are the segment's LB (if kept) and RE headers.
func (s Segment) Headers() []byte {
	b := slices.Clone(s.LBBytes)
	if s.LB != 0 && b == nil {
		b = append(b, 'L', 'B', byte(s.LB), 1, 0, 0, 0x12, 0x34)
		b = binary.BigEndian.AppendUint64(b, s.Tick)
	}
	b = append(b, s.RE0, s.RE1)
	b = binary.BigEndian.AppendUint16(b, s.DataID)
	b = binary.BigEndian.AppendUint32(b, s.Offset)
	b = binary.BigEndian.AppendUint32(b, s.Length)
	return binary.BigEndian.AppendUint64(b, s.Tick)
}

// Frame is the segment's Ethernet frame, lengths and checksums by gopacket.
func (s Segment) Frame(t testing.TB) []byte {
	u := &layers.UDP{SrcPort: 46000, DstPort: layers.UDPPort(s.Port)}
	payload := gopacket.Payload(append(s.Headers(), s.Payload...))
	if s.Src.To4() != nil && len(s.Src) == 4 {
		ip := IPv4(layers.IPProtocolUDP)
		ip.SrcIP = s.Src
		u.SetNetworkLayerForChecksum(ip)
		return Serialize(t, Eth(layers.EthernetTypeIPv4), ip, u, payload)
	}
	ip := IPv6(layers.IPProtocolUDP)
	ip.SrcIP = s.Src
	u.SetNetworkLayerForChecksum(ip)
	return Serialize(t, Eth(layers.EthernetTypeIPv6), ip, u, payload)
}
