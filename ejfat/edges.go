package ejfat

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/packet/frame"
)

// EdgeSeeds returns the seeds of the frames at the edges of length
// (difftest.Edges cuts them and pads them): the crafted frames of Corpus,
// and for every size of sizes an LB v2 frame over IPv4 and an LB v3 frame
// over IPv6 to LB 0 of that length (their payload filling it), ICMP and
// ICMPv6 echo requests of that length, and an ARP request and a good LB
// frame padded with zeros to it (a frame too short for its headers is the
// good one cut to the length).
func EdgeSeeds(sizes []int) ([][]byte, error) {
	c := &corpus{}
	c.crafted()
	for _, n := range sizes {
		c.sized(n)
	}
	return c.frames, c.err
}

// sized adds the frames of length n.
func (c *corpus) sized(n int) {
	// fill is a payload after hdr bytes of headers, at most limit bytes
	// (what the length fields can say): the frame is padded beyond.
	fill := func(hdr, limit int) []byte {
		p := make([]byte, max(0, min(limit, n-hdr)))
		for i := range p {
			p[i] = byte(i*7 + 1)
		}
		return p
	}
	// An ICMP header is a UDP header's length, 8 bytes.
	const ipv4UDP, ipv6UDP = frame.EthernetLen + frame.IPv4MinLen + frame.UDPLen, frame.EthernetLen + frame.IPv6Len + frame.UDPLen
	h := &LB{Magic: LBMagic, Version: 2, Protocol: 1, Entropy: 3, Tick: 10}
	c.size(n, c.lbUDP(false, corpusSrc4[0], corpusLB4[0], LBPort, h, fill(ipv4UDP+LBLen, 0xffff-frame.IPv4MinLen-frame.UDPLen-LBLen)))
	h3 := &LB{Magic: LBMagic, Version: 3, Protocol: 1, SlotSelect: 7, PortSelect: 1, Tick: 10}
	c.size(n, c.lbUDP(true, corpusSrc6[0], corpusLB6[0], LBPort+1, h3, fill(ipv6UDP+LBLen, 0xffff-frame.UDPLen-LBLen)))
	ip := ip4(corpusSrc4[0], corpusLB4[0], layers.IPProtocolICMPv4)
	echo := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 1, Seq: 2}
	c.size(n, c.add(eth(layers.EthernetTypeIPv4), ip, echo, gopacket.Payload(fill(ipv4UDP, 0xffff-frame.IPv4MinLen-frame.UDPLen))))
	ip6h := ip6(corpusSrc6[0], corpusLB6[0], layers.IPProtocolICMPv6)
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}
	ic.SetNetworkLayerForChecksum(ip6h)
	c.size(n, c.add(eth(layers.EthernetTypeIPv6), ip6h, ic, gopacket.Payload(append([]byte{0, 1, 0, 2}, fill(ipv6UDP, 0xffff-frame.UDPLen)...))))
	a := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: layers.ARPRequest, SourceHwAddress: corpusPeerMAC, SourceProtAddress: corpusSrc4[0].To4(), DstHwAddress: make([]byte, 6), DstProtAddress: corpusLB4[0].To4()}
	c.size(n, c.add(eth(layers.EthernetTypeARP), a))
	c.size(n, c.lbUDP(false, corpusSrc4[0], corpusLB4[0], LBPort, h, []byte("event")))
}

// size makes the frame just added, f, n bytes long: cut, or padded with
// zeros.
func (c *corpus) size(n int, f []byte) {
	if f != nil {
		k := min(n, len(f))
		c.frames[len(c.frames)-1] = append(f[:k:k], make([]byte, n-k)...)
	}
}
