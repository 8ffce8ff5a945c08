package fuzz

import (
	"math/rand/v2"
	"net"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Corpus is the frames every model gets besides those made from its
// predicates: Ethernet with IPv4 and IPv6 UDP to the model's own ports
// and others, a VLAN tag, ICMP, ARP, IPv4 options and fragments, and
// truncations of each, built by gopacket (an encoder nsc did not write).
func Corpus(m Model) [][]byte {
	rnd := rand.New(rand.NewPCG(uint64(len(m.Source)), 1))
	payload := func() gopacket.Payload {
		b := make([]byte, rnd.IntN(48))
		for i := range b {
			b[i] = byte(rnd.UintN(4)) // small values: selectors and tests hit
		}
		return b
	}
	eth := func(t layers.EthernetType) *layers.Ethernet {
		return &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: t}
	}
	v4 := func(p layers.IPProtocol) *layers.IPv4 {
		return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: p, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
	}
	v6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: net.ParseIP("fe80::1"), DstIP: net.ParseIP("fe80::2")}
	ser := func(ls ...gopacket.SerializableLayer) []byte {
		for _, l := range ls {
			if u, ok := l.(*layers.UDP); ok {
				for _, n := range ls {
					if nl, ok := n.(gopacket.NetworkLayer); ok {
						_ = u.SetNetworkLayerForChecksum(nl)
					}
				}
			}
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
			panic(err) // the layers above always serialize
		}
		return buf.Bytes()
	}
	ports := append([]int{53, 4789}, m.Ports...)
	var out [][]byte
	for _, p := range ports {
		udp := func() *layers.UDP { return &layers.UDP{SrcPort: 1234, DstPort: layers.UDPPort(p)} }
		out = append(out,
			ser(eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolUDP), udp(), payload()),
			ser(eth(layers.EthernetTypeIPv6), v6, udp(), payload()),
			ser(eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 7, Type: layers.EthernetTypeIPv4}, v4(layers.IPProtocolUDP), udp(), payload()))
		opt := v4(layers.IPProtocolUDP)
		opt.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
		out = append(out, ser(eth(layers.EthernetTypeIPv4), opt, udp(), payload()))
		frag := v4(layers.IPProtocolUDP)
		frag.Flags = layers.IPv4MoreFragments
		out = append(out, ser(eth(layers.EthernetTypeIPv4), frag, udp(), payload()))
	}
	out = append(out,
		ser(eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolICMPv4), &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0)}, payload()),
		ser(eth(layers.EthernetTypeARP), &layers.ARP{AddrType: 1, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4, Operation: 1,
			SourceHwAddress: []byte{2, 0, 0, 0, 0, 1}, SourceProtAddress: []byte{10, 0, 0, 1}, DstHwAddress: make([]byte, 6), DstProtAddress: []byte{10, 0, 0, 2}}))
	// A bad UDP checksum and truncations of every frame.
	bad := append([]byte(nil), out[0]...)
	bad[40] ^= 0xff
	out = append(out, bad)
	n := len(out)
	for _, f := range out[:n] {
		for _, cut := range []int{14, 20, 34, 41, 42, len(f) - 1} {
			if cut < len(f) {
				out = append(out, append([]byte(nil), f[:cut]...))
			}
		}
	}
	return out
}
