package ejfat

import (
	"bytes"
	"fmt"
	"maps"
	"net"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// GopacketLB is the lb-2025 forward path (ESnet udplb c4ee776, spec
// ejfat-lb-pipeline-2025.md A.7) written by hand with gopacket only: a
// DecodingLayerParser over Ethernet, IPv4, IPv6, UDP and the LB header,
// the table lookups as Go maps, and SerializeLayers with FixLengths and
// ComputeChecksums. It is the baseline nsc's generated code is benchmarked
// against, for one LB instance with a single /0 epoch.
//
// What it does, for a frame the lb-2025 parser accepts as IPv4 or IPv6 UDP
// to a port in 16384..32767 carrying an LB v2 or v3 header:
//
//   - drop unless the Ethernet dst is the LB's MAC and the IP dst the LB's
//     address (T1, T2), and, when Sources is set, the IP src is in it
//     (T3, T4);
//   - slot = (v2: tick & 0xffff, v3: slot_select) XOR SlotXor, masked to
//     SlotBits bits; the calendar gives the member (a miss drops), the
//     member its rewrite (a miss, or no address of the packet's IP
//     version, drops);
//   - Ethernet src = the LB's MAC, dst = the member's; IP src = the LB's
//     address, dst = the member's; TTL and hop limit untouched; UDP dst port
//     = udp_base + (entropy or port_select, masked to PortBits bits); the LB
//     header is removed unless the member keeps it; lengths and checksums
//     are recomputed by gopacket; the frame is not padded to 60 bytes, and
//     the bytes after the UDP payload (Ethernet padding) follow unchanged.
//
// For a frame whose checksums and lengths were right, this gives lb-2025's
// bytes, with two exceptions: a UDP checksum that sums to zero is sent as
// 0xffff (lb-2025 sends 0x0000), and a zero UDP checksum ("none") is
// computed (lb-2025 patches it arithmetically). Wrong input checksums are
// corrected, not carried over as lb-2025's incremental arithmetic does, and
// lengths come from the bytes, not from the length fields. The responders
// (ARP, ICMP echo, ND) are not implemented: those frames are dropped as
// "not LB".
//
// A GopacketLB is not safe for concurrent use: Forward reuses its buffers.
type GopacketLB struct {
	cfg GopacketLBConfig

	parser  *gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
	eth     layers.Ethernet
	ip4     layers.IPv4
	ip6     layers.IPv6
	udp     lbUDP
	lb      LB
	payload gopacket.Payload
	buf     gopacket.SerializeBuffer
	out     []gopacket.SerializableLayer
	frame   []byte // the output when it has a tail

	own4, own6 net.IP
}

// GopacketLBConfig is one LB instance of lb-2025's tables.
type GopacketLBConfig struct {
	MAC  net.HardwareAddr // the LB's own MAC (T1)
	IPv4 net.IP           // the LB's own addresses (T2)
	IPv6 net.IP
	// Sources is the allow-list of IP sources (T3, T4); nil allows all.
	Sources []net.IP
	// The /0 epoch's slot options (do_assign_epoch: 9 bits, XOR 0).
	SlotBits uint8
	SlotXor  uint16
	Calendar map[uint16]uint16 // calendar slot -> member id (T6)
	Members  map[uint16]GopacketLBMember
}

// GopacketLBMember is a member's rewrite (T7).
type GopacketLBMember struct {
	MAC      net.HardwareAddr
	IPv4     net.IP // nil: no IPv4 rewrite (IPv4 packets miss)
	IPv6     net.IP // nil: no IPv6 rewrite
	UDPBase  uint16
	PortBits uint8
	Keep     bool // keep the LB header
}

// Drop reasons of GopacketLB.Forward.
const (
	GopacketDropNotLB    = "not LB" // a parse failure of lb-2025, or a responder's frame
	GopacketDropMAC      = "mac_dst miss"
	GopacketDropIP       = "ip_dst miss"
	GopacketDropSrc      = "blocked src"
	GopacketDropCalendar = "calendar miss"
	GopacketDropMember   = "member miss"
)

// lbUDP is UDP whose next layer is the LB header for the ports lb-2025
// takes for LB traffic, 16384..32767.
type lbUDP struct{ layers.UDP }

func (u *lbUDP) NextLayerType() gopacket.LayerType {
	if u.DstPort&0xc000 == 0x4000 {
		return LayerTypeLB
	}
	return gopacket.LayerTypePayload
}

// NewGopacketLB makes a load balancer of cfg.
func NewGopacketLB(cfg GopacketLBConfig) (*GopacketLB, error) {
	if len(cfg.MAC) != 6 {
		return nil, fmt.Errorf("gopacket LB: MAC %v is not 6 bytes", cfg.MAC)
	}
	l := &GopacketLB{cfg: cfg, own4: cfg.IPv4.To4(), own6: cfg.IPv6.To16()}
	if cfg.IPv4 != nil && l.own4 == nil {
		return nil, fmt.Errorf("gopacket LB: %v is not an IPv4 address", cfg.IPv4)
	}
	// Own copies of the tables, addresses in their wire form.
	l.cfg.Calendar = maps.Clone(cfg.Calendar)
	l.cfg.Members = make(map[uint16]GopacketLBMember, len(cfg.Members))
	for id, m := range cfg.Members {
		if len(m.MAC) != 6 || (m.IPv4 != nil && m.IPv4.To4() == nil) || (m.IPv6 != nil && m.IPv6.To16() == nil) {
			return nil, fmt.Errorf("gopacket LB: member %d: bad MAC %v or address %v, %v", id, m.MAC, m.IPv4, m.IPv6)
		}
		m.IPv4, m.IPv6 = m.IPv4.To4(), m.IPv6.To16()
		l.cfg.Members[id] = m
	}
	l.parser = gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet)
	l.parser.SetDecodingLayerContainer(gopacket.DecodingLayerSparse(nil).
		Put(&l.eth).Put(&l.ip4).Put(&l.ip6).Put(&l.udp).Put(&l.lb).Put(&l.payload))
	l.decoded = make([]gopacket.LayerType, 0, 8)
	l.buf = gopacket.NewSerializeBufferExpectedSize(128, 64)
	l.out = make([]gopacket.SerializableLayer, 0, 5)
	return l, nil
}

// Forward runs one frame through the LB. It returns the frame to send
// (valid until the next call) or, for a dropped frame, nil and the reason.
func (l *GopacketLB) Forward(frame []byte) ([]byte, string) {
	if err := l.parser.DecodeLayers(frame, &l.decoded); err != nil {
		return nil, GopacketDropNotLB
	}
	// Ethernet, IPv4 or IPv6, UDP, LB v2/v3 (and the payload, if any).
	if len(l.decoded) < 4 || l.decoded[3] != LayerTypeLB || (l.lb.Version != 2 && l.lb.Version != 3) {
		return nil, GopacketDropNotLB
	}
	v4 := l.decoded[1] == layers.LayerTypeIPv4
	if v4 && (l.ip4.Version != 4 || l.ip4.Protocol != layers.IPProtocolUDP) ||
		!v4 && (l.ip6.Version != 6 || l.ip6.NextHeader != layers.IPProtocolUDP) {
		return nil, GopacketDropNotLB
	}

	if !bytes.Equal(l.eth.DstMAC, l.cfg.MAC) {
		return nil, GopacketDropMAC
	}
	var src, dst net.IP
	if v4 {
		src, dst = l.ip4.SrcIP, l.ip4.DstIP
		if l.own4 == nil || !dst.Equal(l.own4) {
			return nil, GopacketDropIP
		}
	} else {
		src, dst = l.ip6.SrcIP, l.ip6.DstIP
		if l.own6 == nil || !dst.Equal(l.own6) {
			return nil, GopacketDropIP
		}
	}
	if l.cfg.Sources != nil && !containsIP(l.cfg.Sources, src) {
		return nil, GopacketDropSrc
	}

	sel, portSel := uint16(l.lb.Tick), l.lb.Entropy
	if l.lb.Version == 3 {
		sel, portSel = l.lb.SlotSelect, l.lb.PortSelect
	}
	id, ok := l.cfg.Calendar[(sel^l.cfg.SlotXor)&mask16(l.cfg.SlotBits)]
	if !ok {
		return nil, GopacketDropCalendar
	}
	m, ok := l.cfg.Members[id]
	if !ok || (v4 && m.IPv4 == nil) || (!v4 && m.IPv6 == nil) {
		return nil, GopacketDropMember
	}

	// Rewrite and serialize.
	l.eth.SrcMAC, l.eth.DstMAC = l.cfg.MAC, m.MAC
	out := append(l.out[:0], &l.eth)
	if v4 {
		l.ip4.SrcIP, l.ip4.DstIP = l.own4, m.IPv4
		out = append(out, &l.ip4)
		l.udp.SetNetworkLayerForChecksum(&l.ip4)
	} else {
		l.ip6.SrcIP, l.ip6.DstIP = l.own6, m.IPv6
		out = append(out, &l.ip6)
		l.udp.SetNetworkLayerForChecksum(&l.ip6)
	}
	l.udp.DstPort = layers.UDPPort(m.UDPBase + portSel&mask16(m.PortBits))
	out = append(out, &l.udp)
	if m.Keep {
		out = append(out, &l.lb)
	}
	l.payload = l.lb.Payload
	out = append(out, &l.payload)
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(l.buf, opts, out...); err != nil {
		return nil, GopacketDropNotLB
	}
	// gopacket's Ethernet pads a frame to 60 bytes; lb-2025 never pads but
	// sends the bytes after the UDP payload (the input's padding) as they
	// were.
	n := 14 + 40 + int(l.ip6.Length)
	if v4 {
		n = 14 + int(l.ip4.Length)
	}
	b := l.buf.Bytes()[:n]
	if end := cap(frame) - cap(l.lb.Payload) + len(l.lb.Payload); end < len(frame) {
		l.frame = append(append(l.frame[:0], b...), frame[end:]...)
		return l.frame, ""
	}
	return b, ""
}

// mask16 is (1 << bits) - 1 in 16 bits: 0xffff from 16 bits on.
func mask16(bits uint8) uint16 {
	if bits >= 16 {
		return 0xffff
	}
	return 1<<bits - 1
}

func containsIP(list []net.IP, ip net.IP) bool {
	for _, a := range list {
		if a.Equal(ip) {
			return true
		}
	}
	return false
}
