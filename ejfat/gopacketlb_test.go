package ejfat

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// LB 0 of the 2025 reference configuration (spec A.4, and §10 of the 2026
// spec for its member 0): slot options 3 bits XOR 0xffff; member 0 gets
// udp_base 0x4556, port_bits 4, the LB header stripped. Tick 10 falls in
// slot (0x000a ^ 0xffff) & 7 = 5.
var (
	gplOwnMAC  = mustMAC("00:aa:bb:cc:dd:ee")
	gplOwn4    = net.IP{10, 1, 2, 3}
	gplOwn6    = net.ParseIP("fd9f:53b7:a261:48ed:2aa:bbff:fecc:ddee")
	gplMbrMAC  = mustMAC("11:22:33:44:55:66")
	gplMbr4    = net.IP{170, 187, 204, 221}
	gplMbr6    = net.ParseIP("fe80::3")
	gplSrc4    = net.IP{10, 1, 2, 2}
	gplSrc6    = net.ParseIP("fe80::1")
	gplKeepMAC = mustMAC("99:88:77:66:55:44")
)

func gplConfig() GopacketLBConfig {
	return GopacketLBConfig{
		MAC: gplOwnMAC, IPv4: gplOwn4, IPv6: gplOwn6,
		Sources:  []net.IP{gplSrc4, gplSrc6},
		SlotBits: 3, SlotXor: 0xffff,
		Calendar: map[uint16]uint16{5: 0, 2: 1},
		Members: map[uint16]GopacketLBMember{
			0: {MAC: gplMbrMAC, IPv4: gplMbr4, IPv6: gplMbr6, UDPBase: 0x4556, PortBits: 4},
			// Like LB 1's members: base 0x4c42, no port bits, header kept.
			1: {MAC: gplKeepMAC, IPv4: net.IP{10, 11, 12, 13}, IPv6: gplMbr6, UDPBase: 0x4c42, Keep: true},
		},
	}
}

func newGopacketLB(t testing.TB) *GopacketLB {
	t.Helper()
	l, err := NewGopacketLB(gplConfig())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// gplFrame builds an LB frame: IPv4 10.1.2.2 -> 10.1.2.3 (id 1, TTL 64)
// or IPv6 fe80::1 -> LB 0's address (hop limit 64), UDP 50000 -> 0x4c42,
// the LB header lb, then payload.
func gplFrame(t testing.TB, v6 bool, lb *LB, payload []byte) []byte {
	t.Helper()
	var ip gopacket.SerializableLayer
	udp := &layers.UDP{SrcPort: 50000, DstPort: LBPort}
	eth := &layers.Ethernet{SrcMAC: mustMAC("00:11:22:33:44:55"), DstMAC: gplOwnMAC, EthernetType: layers.EthernetTypeIPv4}
	if v6 {
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: gplSrc6, DstIP: gplOwn6}
		udp.SetNetworkLayerForChecksum(ip6)
		eth.EthernetType = layers.EthernetTypeIPv6
		ip = ip6
	} else {
		ip4 := &layers.IPv4{Version: 4, IHL: 5, Id: 1, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: gplSrc4, DstIP: gplOwn4}
		udp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	}
	b, err := serializeFrame(gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, udp, lb, gopacket.Payload(payload))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gplA7Payload is what follows the LB header in A.7's example: an EVIO6
// segment header (first, ROC 0xabc, offset 0) and 100 zero bytes, seed
// 000's first segment. With LB v2 protocol 1, entropy 1 and tick 10 it
// gives exactly the example's input numbers (checked below).
func gplA7Payload() []byte {
	return append([]byte{0, 2, 0x0a, 0xbc, 0, 0, 0, 0}, make([]byte, 100)...)
}

func gplA7LB() *LB { return &LB{Magic: LBMagic, Version: 2, Protocol: 1, Entropy: 1, Tick: 10} }

// TestGopacketLBA7 checks the IPv4 v2 example of spec A.7: hdrChecksum
// 0x624E -> 0xF6C7, totalLen 152 -> 136, UDP 50000 -> 17751, UDP length
// 132 -> 116, UDP checksum 0x7E40 -> 0x6803, TTL stays 64.
func TestGopacketLBA7(t *testing.T) {
	in := gplFrame(t, false, gplA7LB(), gplA7Payload())
	be := binary.BigEndian
	if be.Uint16(in[24:]) != 0x624e || be.Uint16(in[16:]) != 152 || be.Uint16(in[38:]) != 132 || be.Uint16(in[40:]) != 0x7e40 {
		t.Fatalf("not A.7's input: %x", in[:60])
	}
	out, drop := newGopacketLB(t).Forward(in)
	if drop != "" {
		t.Fatal(drop)
	}
	// The whole frame, written out by hand from A.7.
	want := "112233445566" + "00aabbccddee" + "0800" +
		"4500" + "0088" + "0001" + "0000" + "4011" + "f6c7" + "0a010203" + "aabbccdd" +
		"c350" + "4557" + "0074" + "6803" +
		"00020abc00000000" + hex.EncodeToString(make([]byte, 100))
	if got := hex.EncodeToString(out); got != want {
		t.Errorf("A.7 output\n got %s\nwant %s", got, want)
	}
}

// gplDelta25 is lb-2025's UDP checksum after A.7's steps, by the spec's
// ones'-complement rules: swap the source, the destination, the IP length
// (L -> L-16), the port, the UDP length (U -> U-16), subtract the 8 LB
// header words, apply to the old checksum.
func gplDelta25(oldCsum uint16, swaps [][2][]byte, lbHdr []byte) uint16 {
	s := uint32(^oldCsum)
	for _, sw := range swaps {
		for i := 0; i < len(sw[0]); i += 2 {
			s += uint32(^binary.BigEndian.Uint16(sw[0][i:])) + uint32(binary.BigEndian.Uint16(sw[1][i:]))
		}
	}
	for i := 0; i < len(lbHdr); i += 2 {
		s += uint32(^binary.BigEndian.Uint16(lbHdr[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func gplBE16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

// TestGopacketLBIPv6 forwards the A.7 packet over IPv6: the rewrite of
// A.7 step 10 for IPv6, and a UDP checksum equal to lb-2025's incremental
// one (which, for a right input checksum, verifies).
func TestGopacketLBIPv6(t *testing.T) {
	in := gplFrame(t, true, gplA7LB(), gplA7Payload())
	out, drop := newGopacketLB(t).Forward(in)
	if drop != "" {
		t.Fatal(drop)
	}
	if len(out) != len(in)-16 {
		t.Errorf("%d bytes from %d", len(out), len(in))
	}
	p := gopacket.NewPacket(out, layers.LayerTypeEthernet, gopacket.Default)
	eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	udp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	inP := gopacket.NewPacket(in, layers.LayerTypeEthernet, gopacket.Default)
	inIP := inP.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	inUDP := inP.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if !bytes.Equal(eth.SrcMAC, gplOwnMAC) || !bytes.Equal(eth.DstMAC, gplMbrMAC) ||
		!ip.SrcIP.Equal(gplOwn6) || !ip.DstIP.Equal(gplMbr6) || ip.HopLimit != 64 ||
		ip.Length != inIP.Length-16 || udp.Length != inUDP.Length-16 || udp.DstPort != 17751 || udp.SrcPort != 50000 {
		t.Errorf("rewrite: %v -> %v, %v -> %v, hop limit %d, length %d, UDP %d -> %d length %d",
			eth.SrcMAC, eth.DstMAC, ip.SrcIP, ip.DstIP, ip.HopLimit, ip.Length, udp.SrcPort, udp.DstPort, udp.Length)
	}
	if !bytes.Equal(udp.Payload, gplA7Payload()) {
		t.Errorf("payload %x", udp.Payload)
	}
	want := gplDelta25(inUDP.Checksum, [][2][]byte{
		{inIP.SrcIP, gplOwn6}, {inIP.DstIP, gplMbr6},
		{gplBE16(inIP.Length), gplBE16(inIP.Length - 16)},
		{gplBE16(uint16(inUDP.DstPort)), gplBE16(17751)},
		{gplBE16(inUDP.Length), gplBE16(inUDP.Length - 16)},
	}, in[14+40+8:14+40+8+16])
	if udp.Checksum != want {
		t.Errorf("UDP checksum %#04x, lb-2025 gives %#04x", udp.Checksum, want)
	}
	if !v1UDPVerifies(t, p) {
		t.Errorf("UDP checksum %#04x does not verify", udp.Checksum)
	}
	// And the IPv4 one the same way: A.7's 0x6803.
	in4 := gplFrame(t, false, gplA7LB(), gplA7Payload())
	want4 := gplDelta25(0x7e40, [][2][]byte{
		{gplSrc4, gplOwn4}, {gplOwn4, gplMbr4}, {gplBE16(152), gplBE16(136)},
		{gplBE16(LBPort), gplBE16(17751)}, {gplBE16(132), gplBE16(116)},
	}, in4[14+20+8:14+20+8+16])
	if want4 != 0x6803 {
		t.Errorf("lb-2025's arithmetic gives %#04x for A.7, not 0x6803", want4)
	}
}

// TestGopacketLBV3Keep: a v3 header selects slot (21 ^ 0xffff) & 7 = 2,
// whose member keeps the header and has no port bits.
func TestGopacketLBV3Keep(t *testing.T) {
	lb := &LB{Magic: LBMagic, Version: 3, Protocol: 1, SlotSelect: 21, PortSelect: 7, Tick: 99}
	in := gplFrame(t, false, lb, []byte("some payload"))
	out, drop := newGopacketLB(t).Forward(in)
	if drop != "" {
		t.Fatal(drop)
	}
	p := gopacket.NewPacket(out, layers.LayerTypeEthernet, gopacket.Default)
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if len(out) != len(in) || !bytes.Equal(out[:6], gplKeepMAC) || udp.DstPort != 0x4c42 ||
		!ip.DstIP.Equal(net.IP{10, 11, 12, 13}) || !ip.SrcIP.Equal(gplOwn4) ||
		!bytes.Equal(udp.Payload, in[14+20+8:]) || v1Sum16(ip.Contents) != 0xffff || !v1UDPVerifies(t, p) {
		t.Errorf("v3 keep: %x", out)
	}
	// Port select 7 with member 0's 4 bits: 0x4556 + 7.
	cfg := gplConfig()
	cfg.Calendar[2] = 0
	l, err := NewGopacketLB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, _ = l.Forward(in)
	if got := binary.BigEndian.Uint16(out[36:]); got != 0x4556+7 || len(out) != len(in)-16 {
		t.Errorf("v3 port %#04x, %d bytes", got, len(out))
	}
}

// TestGopacketLBShortAndPadded: no padding to 60 bytes, and the input's
// padding goes out unchanged behind the payload.
func TestGopacketLBShortAndPadded(t *testing.T) {
	l := newGopacketLB(t)
	in := gplFrame(t, false, gplA7LB(), []byte("some payload"))
	if len(in) != 70 {
		t.Fatalf("%d bytes", len(in))
	}
	out, drop := l.Forward(in)
	if drop != "" || len(out) != 54 || string(out[42:]) != "some payload" {
		t.Errorf("%s %d bytes %x", drop, len(out), out)
	}
	padded := append(bytes.Clone(in), 0xee, 0xee, 0xee, 0xee)
	out2, drop := l.Forward(padded)
	if drop != "" || len(out2) != 58 || !bytes.Equal(out2[:54], out[:54]) || !bytes.Equal(out2[54:], []byte{0xee, 0xee, 0xee, 0xee}) {
		t.Errorf("padded: %s %x", drop, out2)
	}
}

func TestGopacketLBDrops(t *testing.T) {
	l := newGopacketLB(t)
	good := gplFrame(t, false, gplA7LB(), gplA7Payload())
	edit := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	for _, tc := range []struct {
		name, want string
		frame      []byte
	}{
		{"other MAC", GopacketDropMAC, edit(func(b []byte) { b[5] = 0xef })},
		{"other IP", GopacketDropIP, edit(func(b []byte) { b[33] = 4 })},
		{"blocked source", GopacketDropSrc, edit(func(b []byte) { b[29] = 9 })},
		{"empty slot", GopacketDropCalendar, gplFrame(t, false, &LB{Magic: LBMagic, Version: 2, Tick: 11}, nil)},
		{"runt", GopacketDropNotLB, good[:14]},
		{"LB v1", GopacketDropNotLB, gplFrame(t, false, &LB{Magic: LBMagic, Version: 1, Tick: 10}, make([]byte, 20))},
		{"bad magic", GopacketDropNotLB, edit(func(b []byte) { b[42] = 0 })},
		{"port 53", GopacketDropNotLB, edit(func(b []byte) { b[36], b[37] = 0, 53 })},
		{"IPv4 version 5", GopacketDropNotLB, edit(func(b []byte) { b[14] = 0x55 })},
		{"TCP", GopacketDropNotLB, edit(func(b []byte) { b[23] = 6 })},
		{"ARP", GopacketDropNotLB, edit(func(b []byte) { b[12], b[13] = 8, 6 })},
		{"cut in the LB header", GopacketDropNotLB, good[:14+20+8+10]},
	} {
		if out, drop := l.Forward(tc.frame); drop != tc.want || out != nil {
			t.Errorf("%s: %q, want %q", tc.name, drop, tc.want)
		}
	}
	// A slot whose member has no rewrite; an IPv6 frame for a member with
	// an IPv4 address only.
	cfg := gplConfig()
	cfg.Calendar[5] = 7
	cfg.Members[7] = GopacketLBMember{MAC: gplMbrMAC, IPv4: gplMbr4}
	cfg.Calendar[4] = 9 // tick 11
	l2, err := NewGopacketLB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, d := l2.Forward(gplFrame(t, true, gplA7LB(), nil)); d != GopacketDropMember {
		t.Errorf("IPv6 to an IPv4-only member: %q", d)
	}
	if _, d := l2.Forward(gplFrame(t, false, &LB{Magic: LBMagic, Version: 2, Tick: 11}, nil)); d != GopacketDropMember {
		t.Errorf("member 9: %q", d)
	}
	// Truncations never panic.
	for n := 0; n < len(good); n++ {
		l.Forward(good[:n])
	}
}

// BenchmarkGopacketLB forwards seed 000-like v2 traffic, IPv4 and IPv6
// alternating, through the gopacket load balancer.
