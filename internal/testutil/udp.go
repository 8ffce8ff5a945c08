package testutil

import (
	"math/rand/v2"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/packet/frame"
)

// UDPCorpus builds the corpus: good datagrams to open and closed ports,
// bad checksums of both kinds, a zero UDP checksum, IPv4 options, VLAN,
// non-UDP, IPv6, ARP, a wrong IP version, and every truncation of a good
// frame.
func UDPCorpus(t testing.TB) [][]byte {
	payload := payloads(rand.New(rand.NewPCG(1, 2)))
	udp4 := func(dport layers.UDPPort, n int) []byte {
		ip := IPv4(layers.IPProtocolUDP)
		u := &layers.UDP{SrcPort: 4000, DstPort: dport}
		u.SetNetworkLayerForChecksum(ip)
		return Serialize(t, Eth(layers.EthernetTypeIPv4), ip, u, payload(n))
	}
	var frames [][]byte
	for _, port := range []layers.UDPPort{7, 53, 9999} {
		for _, n := range []int{0, 1, 17, 200} {
			frames = append(frames, udp4(port, n))
		}
	}
	good := udp4(7, 33)

	ip := func(f []byte) frame.IPv4 { return frame.IPv4(f[frame.EthernetLen:]) }
	udp := func(f []byte) frame.UDP { return frame.UDP(f[frame.EthernetLen+frame.IPv4MinLen:]) }
	badUDP := append([]byte(nil), good...)
	udp(badUDP).SetChecksum(udp(badUDP).Checksum() ^ 0x5a00)
	badIP := append([]byte(nil), good...)
	ip(badIP).SetChecksum(ip(badIP).Checksum() ^ 0x0100)
	zero := append([]byte(nil), good...)
	udp(zero).SetChecksum(0)
	badVersion := append([]byte(nil), good...)
	ip(badVersion)[0] = 0x65 // version 6, IHL 5: the checksum is then wrong too
	frames = append(frames, badUDP, badIP, zero, badVersion)

	opts := IPv4(layers.IPProtocolUDP)
	opts.Options = []layers.IPv4Option{{OptionType: 0x94, OptionLength: 4, OptionData: []byte{0, 0}}} // router alert
	u := &layers.UDP{SrcPort: 1, DstPort: 53}
	u.SetNetworkLayerForChecksum(opts)
	frames = append(frames, Serialize(t, Eth(layers.EthernetTypeIPv4), opts, u, payload(10)))

	vip := IPv4(layers.IPProtocolUDP)
	vu := &layers.UDP{SrcPort: 1, DstPort: 7}
	vu.SetNetworkLayerForChecksum(vip)
	frames = append(frames, Serialize(t, Eth(layers.EthernetTypeDot1Q),
		&layers.Dot1Q{VLANIdentifier: 10, Type: layers.EthernetTypeIPv4}, vip, vu, payload(5)))

	tip := IPv4(layers.IPProtocolTCP)
	tcp := &layers.TCP{SrcPort: 1, DstPort: 80, SYN: true, Window: 1024, DataOffset: 5}
	tcp.SetNetworkLayerForChecksum(tip)
	frames = append(frames, Serialize(t, Eth(layers.EthernetTypeIPv4), tip, tcp))

	ip6 := IPv6(layers.IPProtocolUDP)
	u6 := &layers.UDP{SrcPort: 1, DstPort: 7}
	u6.SetNetworkLayerForChecksum(ip6)
	frames = append(frames, Serialize(t, Eth(layers.EthernetTypeIPv6), ip6, u6, payload(9)))

	frames = append(frames, Serialize(t, Eth(layers.EthernetTypeARP), &layers.ARP{
		AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: layers.ARPRequest, SourceHwAddress: []byte{2, 0, 0, 0, 0, 1}, SourceProtAddress: []byte{192, 0, 2, 1},
		DstHwAddress: make([]byte, 6), DstProtAddress: []byte{192, 0, 2, 2}}))

	for n := 0; n < len(good); n++ {
		frames = append(frames, good[:n])
	}
	return frames
}

// UDPOracle says, from gopacket's decoding and checksum verification alone,
// where the UDP/IPv4 LPG must send a frame.
func UDPOracle(frame []byte) string {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	if truncatedParse(p) {
		return "RxMalformed"
	}
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if ip == nil || ip.Version != 4 {
		return "RxNotIPv4"
	}
	if _, res := ip.VerifyChecksum(); !res.Valid {
		return "RxBadIPv4Csum"
	}
	u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if u == nil {
		return "RxNotUDP"
	}
	// The datagram is cut short if the frame holds less than the IPv4 total
	// length (gopacket's own Truncated flag also fires for application
	// payloads it fails to decode, such as random bytes on port 53).
	if len(ip.Payload) < int(ip.Length)-int(ip.IHL)*4 {
		return "RxBadUDPCsum"
	}
	u.SetNetworkLayerForChecksum(ip)
	if err, res := u.VerifyChecksum(); err != nil || !res.Valid {
		return "RxBadUDPCsum"
	}
	switch u.DstPort {
	case 7:
		return "AppEcho"
	case 53:
		return "AppDNS"
	}
	return "RxPortClosed"
}

// truncatedParse reports whether a header the model's parse graph
// (lib/inet.nsc) follows is missing or cut short: a layer gopacket could
// not decode, or no layer at all where the previous header's type field
// names one the model parses. Headers the model does not parse (TCP) do
// not count.
func truncatedParse(p gopacket.Packet) bool {
	ls := p.Layers()
	if len(ls) == 0 {
		return true
	}
	for i, l := range ls {
		if l.LayerType() == layers.LayerTypeUDP && len(l.LayerContents()) < 8 {
			return true
		}
		if _, failed := l.(*gopacket.DecodeFailure); failed {
			if i == 0 {
				return true // not even Ethernet
			}
			switch ls[i-1].LayerType() {
			case layers.LayerTypeEthernet, layers.LayerTypeDot1Q, layers.LayerTypeIPv4, layers.LayerTypeIPv6:
				return true
			}
			return false
		}
	}
	var next layers.EthernetType
	var ipNext layers.IPProtocol = 255
	switch last := ls[len(ls)-1].(type) {
	case *layers.Ethernet:
		next = last.EthernetType
	case *layers.Dot1Q:
		next = last.Type
	case *layers.IPv4:
		ipNext = last.Protocol
	case *layers.IPv6:
		ipNext = last.NextHeader
	}
	switch next {
	case layers.EthernetTypeIPv4, layers.EthernetTypeIPv6, layers.EthernetTypeARP, layers.EthernetTypeDot1Q:
		return true
	}
	return ipNext == layers.IPProtocolUDP || ipNext == layers.IPProtocolICMPv4 || ipNext == layers.IPProtocolICMPv6
}
