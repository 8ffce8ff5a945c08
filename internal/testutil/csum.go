package testutil

import (
	"net"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/packet/frame"
)

// CsumCorpus is the seed frames of backends/flow/testdata/ops.nsc's
// CsumRx: UDP over IPv4 and IPv6 whose checksum patches meet the
// one's-complement corners. Sources whose 16-bit words sum to 0xffff
// (0.0.255.255, 18.52.237.203) or are all 0xffff, source ports 0, 1 and
// 0xffff (the new source), destination ports 0xffff and 53 (set to 0),
// and each checksum as computed, 0 and 0xffff.
func CsumCorpus(t testing.TB) [][]byte {
	var frames [][]byte
	sums := []int{-1, 0, 0xffff} // -1: as computed
	for _, src := range []net.IP{{0, 0, 255, 255}, {18, 52, 237, 203}, {255, 255, 255, 255}, {0, 0, 0, 0}, {10, 1, 2, 3}} {
		for _, sport := range []layers.UDPPort{0, 1, 0xffff} {
			for _, dport := range []layers.UDPPort{0xffff, 53} {
				for _, ipSum := range sums {
					for _, udpSum := range sums {
						ip := IPv4(layers.IPProtocolUDP)
						ip.SrcIP, ip.DstIP = src, net.IP{10, 1, 2, 4}
						u := &layers.UDP{SrcPort: sport, DstPort: dport}
						u.SetNetworkLayerForChecksum(ip)
						f := Serialize(t, Eth(layers.EthernetTypeIPv4), ip, u)
						setSum(ipSum, frame.IPv4(f[frame.EthernetLen:]).SetChecksum)
						setSum(udpSum, frame.UDP(f[frame.EthernetLen+frame.IPv4MinLen:]).SetChecksum)
						frames = append(frames, f)
					}
				}
			}
		}
	}
	for _, dst := range []string{"::ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db8::1"} {
		for _, sport := range []layers.UDPPort{0, 0xffff} {
			for _, udpSum := range sums {
				ip := IPv6(layers.IPProtocolUDP)
				ip.SrcIP, ip.DstIP = net.ParseIP("::ffff:0:0"), net.ParseIP(dst)
				u := &layers.UDP{SrcPort: sport, DstPort: 0xffff}
				u.SetNetworkLayerForChecksum(ip)
				f := Serialize(t, Eth(layers.EthernetTypeIPv6), ip, u)
				setSum(udpSum, frame.UDP(f[frame.EthernetLen+frame.IPv6Len:]).SetChecksum)
				frames = append(frames, f)
			}
		}
	}
	return frames
}

// setSum overwrites a checksum with set unless sum is -1.
func setSum(sum int, set func(uint16)) {
	if sum >= 0 {
		set(uint16(sum))
	}
}
