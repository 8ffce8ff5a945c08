package testutil

import (
	"math/rand/v2"
	"net"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// OpsCorpus is the seed frames of backends/flow/testdata/ops.nsc, which
// take OpsRx's paths: UDP over IPv4 (with and without options, to the
// table entries' addresses and ports), over VLAN, over IPv6, ICMPv6 echo
// requests, ICMP, TCP, ARP.
func OpsCorpus(t testing.TB) [][]byte {
	frames := UDPCorpus(t)
	payload := payloads(rand.New(rand.NewPCG(5, 6)))
	for _, dst := range [][]byte{{10, 1, 2, 3}, {10, 9, 9, 9}, {192, 0, 2, 7}, {192, 168, 0, 1}} {
		// From 10.0.0.5, t_tern's source ports pick its range entries:
		// 1500 and 1000 in 1000-60000, 500 and 999 only in 0-999, 65000
		// in none.
		for _, sport := range []layers.UDPPort{53, 4000, 1500, 500, 999, 1000, 65000} {
			for _, dport := range []layers.UDPPort{7, 53, 4000} {
				ip := IPv4(layers.IPProtocolUDP)
				ip.DstIP, ip.SrcIP = dst, []byte{192, 168, 0, 1}
				if sport != 53 && sport != 4000 {
					ip.SrcIP = []byte{10, 0, 0, 5}
				}
				if sport == 1500 {
					ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
				}
				u := &layers.UDP{SrcPort: sport, DstPort: dport}
				u.SetNetworkLayerForChecksum(ip)
				frames = append(frames, Serialize(t, Eth(layers.EthernetTypeIPv4), ip, u, payload(int(dport%50))))
			}
		}
	}
	for _, src := range []string{"fe80::1", "2001:db8::5"} {
		for _, dst := range []string{"2001:db8::1", "fe80::2", "ff02::1"} {
			ip := IPv6(layers.IPProtocolUDP)
			ip.SrcIP, ip.DstIP = net.ParseIP(src), net.ParseIP(dst)
			u := &layers.UDP{SrcPort: 4000, DstPort: 53}
			u.SetNetworkLayerForChecksum(ip)
			frames = append(frames, Serialize(t, Eth(layers.EthernetTypeIPv6), ip, u, payload(20)))
			ip6 := IPv6(layers.IPProtocolICMPv6)
			ip6.SrcIP, ip6.DstIP = net.ParseIP(src), net.ParseIP(dst)
			ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)}
			ic.SetNetworkLayerForChecksum(ip6)
			frames = append(frames, Serialize(t, Eth(layers.EthernetTypeIPv6), ip6, ic, &layers.ICMPv6Echo{Identifier: 7, SeqNumber: 9}, payload(12)))
		}
	}
	for _, p := range []layers.IPProtocol{layers.IPProtocolICMPv4, layers.IPProtocolTCP, 99} {
		frames = append(frames, Serialize(t, Eth(layers.EthernetTypeIPv4), IPv4(p), payload(30)))
	}
	frames = append(frames, Serialize(t, Eth(layers.EthernetTypeARP), &layers.ARP{AddrType: 1, Protocol: 0x800, HwAddressSize: 6, ProtAddressSize: 4, Operation: 1,
		SourceHwAddress: make([]byte, 6), SourceProtAddress: make([]byte, 4), DstHwAddress: make([]byte, 6), DstProtAddress: make([]byte, 4)}))
	return frames
}
