package lbfast_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/packet"
)

// sum16 is the RFC 1071 one's-complement sum of b, folded (written here
// from the RFC, independent of nsc's packet package).
func sum16(b []byte, acc uint32) uint32 {
	for len(b) >= 2 {
		acc += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	for acc > 0xffff {
		acc = acc&0xffff + acc>>16
	}
	return acc
}

// checksumsOK reports whether a decoded frame's IPv4 header checksum and
// UDP/ICMP checksums verify; ok is false when it has none of them.
func checksumsOK(p gopacket.Packet) (valid, ok bool) {
	valid = true
	var pseudo uint32
	if ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ip != nil {
		ok = true
		valid = valid && sum16(ip.Contents, 0) == 0xffff
		pseudo = sum16(ip.SrcIP.To4(), 0) + sum16(ip.DstIP.To4(), 0)
	}
	if ip, _ := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ip != nil {
		pseudo = sum16(ip.SrcIP, 0) + sum16(ip.DstIP, 0)
	}
	if u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP); u != nil {
		ok = true
		if u.Checksum != 0 || p.Layer(layers.LayerTypeIPv6) != nil {
			l4 := append(append([]byte(nil), u.Contents...), u.Payload...)
			valid = valid && sum16(l4, pseudo+17+uint32(len(l4))) == 0xffff
		}
	}
	if ic, _ := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6); ic != nil {
		ok = true
		ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		msg := append(append([]byte(nil), ic.Contents...), ic.Payload...)[:ip.Length]
		valid = valid && sum16(msg, pseudo+58+uint32(len(msg))) == 0xffff
	}
	if ic, _ := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ic != nil {
		ok = true
		valid = valid && sum16(append(append([]byte(nil), ic.Contents...), ic.Payload...), 0) == 0xffff
	}
	return valid, ok
}

// TestForwardedFramesDecode is the independent oracle on the generated
// fast paths: every frame of the crafted corpus that arrived with valid
// checksums and leaves for the wire decodes with gopacket, its checksums
// verify (computed here from RFC 1071), an LB forward has no LB header
// left unless kept (lb-2021 always removes it and sends frames without
// one back unchanged), and replies are ARP replies, echo replies or neighbour
// advertisements.
func TestForwardedFramesDecode(t *testing.T) {
	frames := seeds(t)
	for _, v := range ejfat.Versions {
		t.Run(v, func(t *testing.T) {
			pl, _ := pair(t, v)
			buf := make([]byte, 2*packet.Headroom+2048)
			kinds := map[string]int{}
			for i, f := range frames {
				in := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
				valid, ok := checksumsOK(in)
				if ok && !valid {
					continue
				}
				if u, _ := in.Layer(layers.LayerTypeUDP).(*layers.UDP); u != nil && u.Checksum == 0 && v == "lb-2025" {
					continue // lb-2025 patches a zero UDP checksum arithmetically (spec B.2)
				}
				copy(buf[packet.Headroom:], f)
				r := pl.Process(buf, packet.Headroom, len(f))
				if r.Sink < 0 || pl.SinkName(int(r.Sink)) != "TxWire" {
					continue
				}
				if bytes.Equal(r.Data, f) {
					if v != "lb-2021" {
						t.Errorf("frame %d: sent back unchanged", i)
					}
					kinds["reflected"]++ // v1: passed the filter, no LB header
					continue
				}
				out := gopacket.NewPacket(r.Data, layers.LayerTypeEthernet, gopacket.Default)
				if el := out.ErrorLayer(); el != nil {
					t.Errorf("frame %d: output does not decode: %v\n%x", i, el.Error(), r.Data)
					continue
				}
				if valid, ok := checksumsOK(out); ok && !valid {
					t.Errorf("frame %d: output checksums do not verify:\n in %x\nout %x", i, f, r.Data)
				}
				switch {
				case out.Layer(layers.LayerTypeARP) != nil:
					if a := out.Layer(layers.LayerTypeARP).(*layers.ARP); a.Operation != layers.ARPReply {
						t.Errorf("frame %d: ARP out is not a reply", i)
					}
					kinds["arp reply"]++
				case out.Layer(layers.LayerTypeICMPv4) != nil:
					if ic := out.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ic.TypeCode != layers.CreateICMPv4TypeCode(0, 0) {
						t.Errorf("frame %d: ICMPv4 out is %v", i, ic.TypeCode)
					}
					kinds["echo reply"]++
				case out.Layer(layers.LayerTypeICMPv6) != nil:
					ic := out.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6)
					if tc := ic.TypeCode.Type(); tc != layers.ICMPv6TypeEchoReply && tc != layers.ICMPv6TypeNeighborAdvertisement {
						t.Errorf("frame %d: ICMPv6 out is %v", i, ic.TypeCode)
					}
					kinds[ic.TypeCode.String()]++
				case out.Layer(layers.LayerTypeUDP) != nil:
					u := out.Layer(layers.LayerTypeUDP).(*layers.UDP)
					inU := in.Layer(layers.LayerTypeUDP).(*layers.UDP)
					kept := len(u.Payload) == len(inU.Payload)
					hasLB := len(u.Payload) >= 4 && binary.BigEndian.Uint16(u.Payload) == ejfat.LBMagic
					if kept != hasLB && v != "lb-2021" {
						t.Errorf("frame %d: LB header kept=%v but present=%v", i, kept, hasLB)
					}
					kinds["forward"]++
				}
			}
			t.Logf("%v", kinds)
			if kinds["forward"] == 0 {
				t.Error("nothing forwarded")
			}
		})
	}
}
