package ejfat

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/packet/frame"
)

// Corpus returns crafted frames for testing an LB version against the
// reference configuration of its table script (testdata/): seed 000's two
// transfers; good LB v1/v2/v3 frames over IPv4 and IPv6 for every LB
// instance and a spread of ticks, entropies and selects; and bad or
// foreign ones: wrong magic, unknown versions, ports outside the LB range,
// IPv4 options, TTL 0/1/2, zero and wrong UDP checksums, VLAN tags, unknown
// senders, other MAC and IP destinations, ARP requests and replies, ICMPv4
// and ICMPv6 echo and destination-unreachable messages, neighbour
// solicitations with and without options, router solicitations, LLDP,
// LACP, TCP, IPv6 extension headers, and every truncation of a few good
// frames. The frames are the same for every version; which ones each
// version forwards, answers or drops is the version's business.
func Corpus() ([][]byte, error) {
	c := &corpus{}
	seed, err := Seed000Frames()
	if err != nil {
		return nil, err
	}
	c.frames = append(c.frames, seed...)
	c.crafted()
	for _, f := range []int{1, 2, 3, 4} { // a few good frames, cut everywhere
		good := c.frames[len(seed)+f*7]
		for n := 0; n < len(good); n++ {
			c.frames = append(c.frames, good[:n])
		}
	}
	return c.frames, c.err
}

type corpus struct {
	frames [][]byte
	err    error
}

// crafted adds the crafted frames, good and bad, of every kind.
func (c *corpus) crafted() {
	c.lbFrames()
	c.foreign()
	c.responders()
	c.l2()
}

var (
	corpusOwnMAC  = mustMAC("00:aa:bb:cc:dd:ee")
	corpusPeerMAC = mustMAC("00:11:22:33:44:55")
	// LB instances of the reference configurations: 0 and 1 (2025/2026),
	// and seed 000's single one (10.1.2.3, fe80::2).
	corpusLB4  = []net.IP{net.IPv4(10, 1, 2, 3), net.IPv4(10, 1, 2, 4)}
	corpusLB6  = []net.IP{net.ParseIP("fd9f:53b7:a261:48ed:2aa:bbff:fecc:ddee"), net.ParseIP("fd9f:53b7:a261:48ed::1"), net.ParseIP("fe80::2")}
	corpusSrc4 = []net.IP{net.IPv4(10, 1, 2, 2), net.IPv4(10, 1, 2, 10), net.IPv4(192, 0, 2, 99)}
	corpusSrc6 = []net.IP{net.ParseIP("fe80::1"), net.ParseIP("fe80::10"), net.ParseIP("2001:db8::99")}
)

func (c *corpus) add(ls ...gopacket.SerializableLayer) []byte {
	b := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(b, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		if c.err == nil {
			c.err = fmt.Errorf("corpus frame %d: %w", len(c.frames), err)
		}
		return nil
	}
	f := append([]byte(nil), b.Bytes()...)
	c.frames = append(c.frames, f)
	return f
}

func eth(typ layers.EthernetType) *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: corpusPeerMAC, DstMAC: corpusOwnMAC, EthernetType: typ}
}

func ip4(src, dst net.IP, proto layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, IHL: 5, Id: 1, TTL: 64, Protocol: proto, SrcIP: src.To4(), DstIP: dst.To4()}
}

func ip6(src, dst net.IP, next layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: next, SrcIP: src, DstIP: dst}
}

// lbUDP adds an LB frame over IPv4 or IPv6 to dport with header h.
func (c *corpus) lbUDP(v6 bool, src, dst net.IP, dport layers.UDPPort, h *LB, payload []byte) []byte {
	u := &layers.UDP{SrcPort: 50000, DstPort: dport}
	if v6 {
		ip := ip6(src, dst, layers.IPProtocolUDP)
		u.SetNetworkLayerForChecksum(ip)
		return c.add(eth(layers.EthernetTypeIPv6), ip, u, h, gopacket.Payload(payload))
	}
	ip := ip4(src, dst, layers.IPProtocolUDP)
	u.SetNetworkLayerForChecksum(ip)
	return c.add(eth(layers.EthernetTypeIPv4), ip, u, h, gopacket.Payload(payload))
}

// lbFrames: good LB frames of every version, for each instance.
func (c *corpus) lbFrames() {
	payload := []byte("event data, opaque to the load balancer")
	for _, v6 := range []bool{false, true} {
		for inst := range 2 {
			src, dst := corpusSrc4[inst], corpusLB4[inst]
			if v6 {
				src, dst = corpusSrc6[inst], corpusLB6[inst]
			}
			for _, tick := range []uint64{0, 5, 10, 11, 16, 20, 31, 32, 0x1ff, 1 << 40} {
				c.lbUDP(v6, src, dst, LBPort, &LB{Magic: LBMagic, Version: 2, Protocol: 1, Entropy: uint16(tick * 3), Tick: tick}, payload)
				c.lbUDP(v6, src, dst, LBPort+1, &LB{Magic: LBMagic, Version: 3, Protocol: 1, SlotSelect: uint16(tick * 7), PortSelect: uint16(tick), Tick: tick}, payload)
				c.lbUDP(v6, src, dst, LBPort, &LB{Magic: LBMagic, Version: 1, Protocol: 1, Tick: tick}, payload)
			}
		}
		// seed 000's LB (fe80::2) and unknown senders.
		src, dst := corpusSrc4[0], corpusLB4[0]
		if v6 {
			src, dst = corpusSrc6[0], corpusLB6[2]
		}
		c.lbUDP(v6, src, dst, LBPort, &LB{Magic: LBMagic, Version: 1, Protocol: 1, Tick: 20}, payload)
		unknown := corpusSrc4[2]
		if v6 {
			unknown = corpusSrc6[2]
		}
		c.lbUDP(v6, unknown, dst, LBPort, &LB{Magic: LBMagic, Version: 2, Protocol: 1, Tick: 10}, payload)
		// Bad LB headers and ports.
		c.lbUDP(v6, src, dst, LBPort, &LB{Magic: 0x4c43, Version: 2, Tick: 10}, payload)
		c.lbUDP(v6, src, dst, LBPort, &LB{Magic: 0x4c43, Version: 1, Tick: 10}, payload)
		for _, port := range []layers.UDPPort{0x3fff, 0x4000, 0x7fff, 0x8000, 53} {
			c.lbUDP(v6, src, dst, port, &LB{Magic: LBMagic, Version: 2, Tick: 10}, payload)
		}
	}
	// Unknown versions: an LB-sized body with version 0, 4 and 255.
	for _, ver := range []byte{0, 4, 255} {
		b := make([]byte, 16+8)
		binary.BigEndian.PutUint16(b, LBMagic)
		b[2] = ver
		b[15] = 10
		u := &layers.UDP{SrcPort: 50000, DstPort: LBPort}
		ip := ip4(corpusSrc4[0], corpusLB4[0], layers.IPProtocolUDP)
		u.SetNetworkLayerForChecksum(ip)
		c.add(eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload(b))
	}
	c.ipv4Variants(payload)
}

// ipv4Variants: options, TTLs, checksums.
func (c *corpus) ipv4Variants(payload []byte) {
	h := func() *LB { return &LB{Magic: LBMagic, Version: 2, Protocol: 1, Entropy: 1, Tick: 10} }
	for _, n := range []int{1, 2, 10} { // IHL 6, 7, 15
		ip := ip4(corpusSrc4[0], corpusLB4[0], layers.IPProtocolUDP)
		for range n {
			ip.Options = append(ip.Options, layers.IPv4Option{OptionType: 1}, layers.IPv4Option{OptionType: 1}, layers.IPv4Option{OptionType: 1}, layers.IPv4Option{OptionType: 1})
		}
		u := &layers.UDP{SrcPort: 50000, DstPort: LBPort}
		u.SetNetworkLayerForChecksum(ip)
		c.add(eth(layers.EthernetTypeIPv4), ip, u, h(), gopacket.Payload(payload))
	}
	for _, ttl := range []uint8{0, 1, 2, 255} {
		ip := ip4(corpusSrc4[0], corpusLB4[0], layers.IPProtocolUDP)
		ip.TTL = ttl
		u := &layers.UDP{SrcPort: 50000, DstPort: LBPort}
		u.SetNetworkLayerForChecksum(ip)
		c.add(eth(layers.EthernetTypeIPv4), ip, u, h(), gopacket.Payload(payload))
		ip6h := ip6(corpusSrc6[0], corpusLB6[0], layers.IPProtocolUDP)
		ip6h.HopLimit = ttl
		u6 := &layers.UDP{SrcPort: 50000, DstPort: LBPort}
		u6.SetNetworkLayerForChecksum(ip6h)
		c.add(eth(layers.EthernetTypeIPv6), ip6h, u6, h(), gopacket.Payload(payload))
	}
	// Zero, 0xffff and wrong UDP checksums, a wrong IPv4 header checksum.
	for _, v6 := range []bool{false, true} {
		src, dst := corpusSrc4[0], corpusLB4[0]
		if v6 {
			src, dst = corpusSrc6[0], corpusLB6[0]
		}
		base := c.lbUDP(v6, src, dst, LBPort, h(), payload)
		if base == nil {
			return
		}
		udp := frame.EthernetLen + frame.IPv4MinLen
		if v6 {
			udp = frame.EthernetLen + frame.IPv6Len
		}
		for _, sum := range []uint16{0, 0xffff, 0x1234} {
			f := append([]byte(nil), base...)
			frame.UDP(f[udp:]).SetChecksum(sum)
			c.frames = append(c.frames, f)
		}
		if !v6 {
			f := append([]byte(nil), base...)
			ip := frame.IPv4(f[frame.EthernetLen:])
			ip.SetChecksum(ip.Checksum() ^ 0x5500)
			c.frames = append(c.frames, f)
		}
	}
}

// foreign: traffic that is not for the LB.
func (c *corpus) foreign() {
	payload := []byte("not an event")
	// Other MAC and IP destinations.
	other := &layers.Ethernet{SrcMAC: corpusPeerMAC, DstMAC: mustMAC("00:aa:bb:cc:dd:ef"), EthernetType: layers.EthernetTypeIPv4}
	u := &layers.UDP{SrcPort: 50000, DstPort: LBPort}
	ip := ip4(corpusSrc4[0], corpusLB4[0], layers.IPProtocolUDP)
	u.SetNetworkLayerForChecksum(ip)
	c.add(other, ip, u, &LB{Magic: LBMagic, Version: 2, Tick: 10}, gopacket.Payload(payload))
	ip = ip4(corpusSrc4[0], net.IPv4(10, 1, 2, 99), layers.IPProtocolUDP)
	u = &layers.UDP{SrcPort: 50000, DstPort: LBPort}
	u.SetNetworkLayerForChecksum(ip)
	c.add(eth(layers.EthernetTypeIPv4), ip, u, &LB{Magic: LBMagic, Version: 2, Tick: 10}, gopacket.Payload(payload))
	bcast := &layers.Ethernet{SrcMAC: corpusPeerMAC, DstMAC: mustMAC("ff:ff:ff:ff:ff:ff"), EthernetType: layers.EthernetTypeIPv4}
	ip = ip4(corpusSrc4[0], corpusLB4[0], layers.IPProtocolUDP)
	u = &layers.UDP{SrcPort: 50000, DstPort: LBPort}
	u.SetNetworkLayerForChecksum(ip)
	c.add(bcast, ip, u, &LB{Magic: LBMagic, Version: 2, Tick: 10}, gopacket.Payload(payload))
	// TCP, an IPv6 extension header, an unknown EtherType.
	ip = ip4(corpusSrc4[0], corpusLB4[0], layers.IPProtocolTCP)
	t := &layers.TCP{SrcPort: 1, DstPort: 2, Window: 1}
	t.SetNetworkLayerForChecksum(ip)
	c.add(eth(layers.EthernetTypeIPv4), ip, t, gopacket.Payload(payload))
	i6 := ip6(corpusSrc6[0], corpusLB6[0], layers.IPProtocolIPv6HopByHop)
	c.add(eth(layers.EthernetTypeIPv6), i6, gopacket.Payload(append([]byte{17, 0, 1, 4, 0, 0, 0, 0}, payload...)))
	c.add(&layers.Ethernet{SrcMAC: corpusPeerMAC, DstMAC: corpusOwnMAC, EthernetType: 0x88b5}, gopacket.Payload(payload))
	// IPv4 with a wrong version, IHL < 5.
	if f := c.lbUDP(false, corpusSrc4[0], corpusLB4[0], LBPort, &LB{Magic: LBMagic, Version: 2, Tick: 10}, payload); f != nil {
		g := append([]byte(nil), f...)
		g[frame.EthernetLen] = 0x65 // version 6, IHL 5
		h := append([]byte(nil), f...)
		h[frame.EthernetLen] = 0x44 // version 4, IHL 4
		c.frames = append(c.frames, g, h)
	}
}

// responders: ARP, ICMPv4, ICMPv6 and ND traffic.
func (c *corpus) responders() {
	for i, tpa := range []net.IP{corpusLB4[0], corpusLB4[1], net.IPv4(10, 1, 2, 99)} {
		for _, op := range []uint16{layers.ARPRequest, layers.ARPReply} {
			a := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
				Operation: op, SourceHwAddress: corpusPeerMAC, SourceProtAddress: corpusSrc4[0].To4(), DstHwAddress: make([]byte, 6), DstProtAddress: tpa.To4()}
			e := eth(layers.EthernetTypeARP)
			if i == 0 {
				e.DstMAC = mustMAC("ff:ff:ff:ff:ff:ff")
			}
			c.add(e, a)
			c.add(e, a, gopacket.Payload(make([]byte, 18))) // padded to 60 bytes
		}
	}
	echo := []byte("payload goes here")
	for _, dst := range []net.IP{corpusLB4[0], corpusLB4[1], net.IPv4(10, 1, 2, 99)} {
		for _, tc := range []layers.ICMPv4TypeCode{
			layers.CreateICMPv4TypeCode(8, 0), layers.CreateICMPv4TypeCode(8, 1), layers.CreateICMPv4TypeCode(0, 0),
			layers.CreateICMPv4TypeCode(3, 0), layers.CreateICMPv4TypeCode(3, 3), layers.CreateICMPv4TypeCode(3, 4),
			layers.CreateICMPv4TypeCode(3, 10), layers.CreateICMPv4TypeCode(3, 13), layers.CreateICMPv4TypeCode(11, 0),
		} {
			ip := ip4(corpusSrc4[0], dst, layers.IPProtocolICMPv4)
			body := echo
			if tc.Type() == 3 { // the datagram that was not delivered: IPv4 + UDP
				body = make([]byte, 28)
				body[0], body[9] = 0x45, 17
			}
			c.add(eth(layers.EthernetTypeIPv4), ip, &layers.ICMPv4{TypeCode: tc, Id: 33, Seq: 9}, gopacket.Payload(body))
		}
	}
	for _, dst := range []net.IP{corpusLB6[0], corpusLB6[1], net.ParseIP("ff02::1")} {
		for _, tc := range []layers.ICMPv6TypeCode{
			layers.CreateICMPv6TypeCode(128, 0), layers.CreateICMPv6TypeCode(128, 1), layers.CreateICMPv6TypeCode(129, 0),
			layers.CreateICMPv6TypeCode(1, 0), layers.CreateICMPv6TypeCode(1, 4), layers.CreateICMPv6TypeCode(1, 7),
			layers.CreateICMPv6TypeCode(133, 0),
		} {
			ip := ip6(corpusSrc6[0], dst, layers.IPProtocolICMPv6)
			ic := &layers.ICMPv6{TypeCode: tc}
			ic.SetNetworkLayerForChecksum(ip)
			body := append([]byte{0, 33, 0, 9}, echo...)
			if tc.Type() == 1 {
				body = make([]byte, 4+48) // quoting an IPv6 header of a UDP datagram
				frame.IPv6(body[4:]).Encode(&frame.IPv6Fields{NextHeader: 17, Src: netip.IPv6Unspecified(), Dst: netip.IPv6Unspecified()})
			}
			c.add(eth(layers.EthernetTypeIPv6), ip, ic, gopacket.Payload(body))
		}
	}
	// Neighbour solicitations: for LB 0's and LB 1's addresses and another,
	// from a unicast and from the unspecified address, with a source
	// link-layer option, another option, or none.
	for _, target := range []net.IP{corpusLB6[0], corpusLB6[1], net.ParseIP("fd9f::99")} {
		for _, src := range []net.IP{corpusSrc6[0], net.IPv6unspecified} {
			for _, opt := range []layers.ICMPv6Options{
				{{Type: layers.ICMPv6OptSourceAddress, Data: corpusPeerMAC}},
				{{Type: layers.ICMPv6OptMTU, Data: []byte{0, 0, 0, 0, 5, 220}}},
				nil,
			} {
				dst := net.ParseIP("ff02::1:ff00:0")
				copy(dst[13:], target[13:])
				ip := ip6(src, dst, layers.IPProtocolICMPv6)
				ip.HopLimit = 255
				ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(135, 0)}
				ic.SetNetworkLayerForChecksum(ip)
				e := eth(layers.EthernetTypeIPv6)
				e.DstMAC = net.HardwareAddr{0x33, 0x33, 0xff, target[13], target[14], target[15]}
				c.add(e, ip, ic, &layers.ICMPv6NeighborSolicitation{TargetAddress: target, Options: opt})
			}
		}
	}
}

// l2: VLAN tags, reserved multicast, LLDP and LACP.
func (c *corpus) l2() {
	payload := []byte("event")
	for _, vid := range []uint16{0, 5} {
		ip := ip4(corpusSrc4[0], corpusLB4[0], layers.IPProtocolUDP)
		u := &layers.UDP{SrcPort: 50000, DstPort: LBPort}
		u.SetNetworkLayerForChecksum(ip)
		c.add(eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: vid, Type: layers.EthernetTypeIPv4}, ip, u,
			&LB{Magic: LBMagic, Version: 2, Tick: 10}, gopacket.Payload(payload))
		a := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: layers.ARPRequest, SourceHwAddress: corpusPeerMAC, SourceProtAddress: corpusSrc4[0].To4(), DstHwAddress: make([]byte, 6), DstProtAddress: corpusLB4[0].To4()}
		c.add(eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: vid, Type: layers.EthernetTypeARP}, a)
	}
	// Two tags.
	c.add(eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 1, Type: layers.EthernetTypeDot1Q}, &layers.Dot1Q{VLANIdentifier: 2, Type: layers.EthernetTypeIPv4}, gopacket.Payload(payload))
	for _, dst := range []string{"01:80:c2:00:00:00", "01:80:c2:00:00:02", "01:80:c2:00:00:0e", "01:80:c2:00:00:10"} {
		mac := mustMAC(dst)
		c.add(&layers.Ethernet{SrcMAC: corpusPeerMAC, DstMAC: mac, EthernetType: 0x88cc}, gopacket.Payload([]byte{0x02, 0x07, 4, 0, 1, 2, 3, 4, 5, 6}))
		c.add(&layers.Ethernet{SrcMAC: corpusPeerMAC, DstMAC: mac, EthernetType: 0x8809}, gopacket.Payload(append([]byte{1, 1}, make([]byte, 44)...)))
		c.add(&layers.Ethernet{SrcMAC: corpusPeerMAC, DstMAC: mac, EthernetType: 0x8809}, gopacket.Payload(append([]byte{2, 1}, make([]byte, 44)...)))
		ip := ip4(corpusSrc4[0], corpusLB4[0], layers.IPProtocolUDP)
		u := &layers.UDP{SrcPort: 50000, DstPort: LBPort}
		u.SetNetworkLayerForChecksum(ip)
		c.add(&layers.Ethernet{SrcMAC: corpusPeerMAC, DstMAC: mac, EthernetType: layers.EthernetTypeIPv4}, ip, u, &LB{Magic: LBMagic, Version: 2, Tick: 10}, gopacket.Payload(payload))
	}
	c.add(&layers.Ethernet{SrcMAC: corpusPeerMAC, DstMAC: mustMAC("01:80:c2:00:00:0e"), EthernetType: 0x88cc}) // LLDP with no TLV
}
