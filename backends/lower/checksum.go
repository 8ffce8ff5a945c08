package lower

import (
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// A checksum verify or compute, lowered: the region packet.Packet.region
// sums. A checksum of its own header (ChecksumHeader) covers the
// header's bytes; any other from the header's start to the end of the
// payload of the first IP header (IPs, in order) valid in front of it,
// or to the frame's end, plus, for an L4 checksum, that IP header's
// pseudo-header (Pseudo). An ICRC's region is packet.Packet.icrcRegion's,
// from the same IP headers.

// IPHeader is a header of the IP convention (docs/language.md 4.4): its
// fields' indexes, and where the pseudo-header and payload come from.
type IPHeader struct {
	H                       int
	Src, Dst, Proto, Length int
	// V6: Length counts the payload behind the header (IPv6's
	// payload_len), and the pseudo-header takes it as two words; else it
	// counts the header too (IPv4's total_len), one word.
	V6 bool
	// Words are the byte offsets, in the header, of the pseudo-header's
	// address words (Src's, then Dst's); a field's odd last byte is a
	// word of its own, its low byte 0 (Lone).
	Words []int
	Lone  []bool
	// Unaligned is an address field that is not whole bytes, which no
	// pseudo-header can take (packet.Packet.region fails), or -1.
	Unaligned int
}

// IPHeaders returns the schema's IP headers (IPv4, then IPv6), those
// that have the convention's fields.
func IPHeaders(s *packet.Schema) []IPHeader {
	var ips []IPHeader
	for _, c := range []struct {
		name, proto, length string
		v6                  bool
	}{{"ipv4", "proto", "total_len", false}, {"ipv6", "next_hdr", "payload_len", true}} {
		h, ok := s.Header(c.name)
		if !ok || h.Metadata {
			continue
		}
		field := func(name string) int { i, _ := h.Field(name); return i }
		ip := IPHeader{H: h.ID, Src: field("src"), Dst: field("dst"), Proto: field(c.proto), Length: field(c.length), V6: c.v6, Unaligned: -1}
		if ip.Src < 0 || ip.Dst < 0 || ip.Proto < 0 || ip.Length < 0 {
			continue
		}
		for _, f := range []int{ip.Src, ip.Dst} {
			fs := h.Fields[f]
			if (fs.Offset%8 != 0 || fs.Width%8 != 0) && ip.Unaligned < 0 {
				ip.Unaligned = f
			}
			end := (fs.Offset + fs.Width) / 8
			for k := fs.Offset / 8; k < end; k += 2 {
				ip.Words = append(ip.Words, k)
				ip.Lone = append(ip.Lone, k+1 >= end)
			}
		}
		ips = append(ips, ip)
	}
	return ips
}

// Checksum is a lowered checksum verify or compute.
type Checksum struct {
	H    int
	Spec *packet.HeaderSpec
	// Field is the checksum field.
	Field packet.FieldSpec
	// Own: the checksum covers its header alone (ChecksumHeader).
	Own bool
	// IPs are the IP headers whose payload the region may end with.
	IPs []IPHeader
	// Pseudo: the region's sum takes the IP header's pseudo-header.
	Pseudo bool
	// Absent is the IPv4 header while which is valid a zero checksum
	// means none was computed and verifies (RFC 768), or nil; Nonzero:
	// a compute that sums to zero writes 0xffff instead
	// (HeaderSpec.ChecksumOptional).
	Absent  *IPHeader
	Nonzero bool
}

// LowerChecksum lowers checksum verify or compute node n.
func (w *Walker) LowerChecksum(n *dataflow.Node) *Checksum {
	s := w.P.Graph.Schema
	spec := s.Headers[n.Op.Header]
	c := &Checksum{H: n.Op.Header, Spec: spec, Field: spec.Fields[spec.Checksum], Own: spec.ChecksumKind == packet.ChecksumHeader}
	ips := IPHeaders(s)
	if !c.Own {
		c.IPs = ips
		c.Pseudo = spec.ChecksumKind == packet.ChecksumL4
	}
	if c.Nonzero = spec.ChecksumOptional; c.Nonzero && len(ips) > 0 && !ips[0].V6 {
		c.Absent = &ips[0]
	}
	return c
}

// ICRC is a lowered `checksum verify|compute icrc(H)`: H is the BTH, its
// region packet.Packet.icrcRegion's from the IP header in front (IPs).
type ICRC struct {
	H   int
	IPs []IPHeader
}
