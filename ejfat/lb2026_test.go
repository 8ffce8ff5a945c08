package ejfat

// Tests of models/ejfat/lb-2026.nsc against ejfat-lb-pipeline.md (and Part
// B of ejfat-lb-pipeline-2025.md): the worked examples of §10 byte for
// byte, and the crafted frames of the parser §2 and procedure §5-§6.
// Expected frames come from the spec's numbers and from gopacket, never
// from the model's output. The spec* helpers are in lb2025_test.go.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

const specFail26 = "phys_parsefail_counter"

func specRig26(t *testing.T, extra ...string) *specRig {
	return newSpecRig(t, "lb-2026", specScript(t, "lb-2026", extra...))
}

func specUnhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLB2026WorkedExample is §10's 70-byte IPv4 v2 frame and its 54-byte
// output, and A.7's example as lb-2026 forwards it (TTL 63, hdrChecksum
// 0xF7C7 instead of 0xF6C7; B.2).
func TestLB2026WorkedExample(t *testing.T) {
	in := append(specUnhex(t, `00aabbccddee 001122334455 0800 4500 0038 0001 0000 4011 62ae 0a010202
		0a010203 04d2 4c42 0024 17ac 4c42 0200 0000 0001 000000000000000a`), "some payload"...)
	want := append(specUnhex(t, `112233445566 00aabbccddee 0800 4500 0028 0001 0000 3f11 f827 0a010203
		aabbccdd 04d2 4557 0014 016e`), "some payload"...)
	if len(in) != 70 || len(want) != 54 {
		t.Fatalf("%d and %d bytes", len(in), len(want))
	}
	r := specRig26(t)
	out := r.sent(in, "TxQueue")
	specDiff(t, "§10 example", out, want)
	specCheckIP(t, out)
	o := r.run(in)
	for _, c := range []string{"rx_counter", "l2_iface_allow_counter", "l2_dst_allow_counter", "l3_allow_counter",
		"lb_rx_pkt_counter", "lb_rx_v2_counter", "mbr_tx_pkt_counter"} {
		if o.counts[c] != 1 {
			t.Errorf("counter %s = %d, want 1 (%v)", c, o.counts[c], o.counts)
		}
	}

	// A.7's example (see TestLB2025WorkedExample) through lb-2026.
	body := append(specLB(2, 1, 0, 1, 10), specPayload(108)...)
	f := specLBv4(body)
	specFix(body, []uint16{0x0a01, 0x0202, 0x0a01, 0x0203, 17, 132, 50000, 0x4c42, 132, 0}, 0x7e40)
	out = r.sent(f.build(t), "TxQueue")
	for _, c := range []struct {
		what string
		off  int
		want uint16
	}{
		{"totalLen", 16, 136}, {"TTL, protocol", 22, 0x3f11}, {"hdrChecksum", 24, 0xf7c7},
		{"UDP dst port", 36, 17751}, {"UDP length", 38, 116}, {"UDP checksum", 40, 0x6803},
	} {
		if got := binary.BigEndian.Uint16(out[c.off:]); got != c.want {
			t.Errorf("%s = %#04x, want %#04x", c.what, got, c.want)
		}
	}
	specDiff(t, "A.7 example in lb-2026", out, specForwarded(t, f, specMbr0MAC, specLB0v4, specMbr0v4, 17751, false, 63))
}

// TestLB2026Forward: v2 and v3, IPv4 and IPv6, strip (instance 0) and keep
// (instance 1), IPv4 options, TTL and hop limit decremented.
func TestLB2026Forward(t *testing.T) {
	r := specRig26(t)
	pay := specPayload(40)
	opts := []layers.IPv4Option{{OptionType: 148, OptionLength: 4, OptionData: []byte{0, 0}}}
	lb1 := func(f specUDP) specUDP {
		if f.Src.To4() != nil {
			f.Src, f.Dst = specSrc1v4, specLB1v4
		} else {
			f.Src, f.Dst = specSrc1v6, specLB1v6
		}
		return f
	}
	ttl := func(f specUDP, v uint8) specUDP { f.TTL = v; return f }
	for _, c := range []struct {
		name     string
		in       specUDP
		mac      net.HardwareAddr
		own, mbr net.IP
		port     uint16
		keep     bool
	}{
		{"v4 v2 strip", specLBv4(append(specLB(2, 1, 0, 0x1237, 10), pay...)), specMbr0MAC, specLB0v4, specMbr0v4, 17750 + 7, false},
		// tick 20: epoch 1, slot (0x14 ^ 0xffff) & 7 = 3.
		{"v4 v2 epoch 1", specLBv4(append(specLB(2, 1, 0, 0x000f, 20), pay...)), specMbr0MAC, specLB0v4, specMbr0v4, 17750 + 15, false},
		{"v4 v3 strip", specLBv4(append(specLB(3, 0, 0xfffa, 0xab, 3), pay...)), specMbr0MAC, specLB0v4, specMbr0v4, 17750 + 0xb, false},
		{"v6 v2 strip", specLBv6(append(specLB(2, 1, 0, 2, 10), pay...)), specMbr0MAC, specLB0v6, specMbrv6, 17750 + 2, false},
		{"v6 v3 strip", specLBv6(append(specLB(3, 1, 0xfffa, 0xffff, 7), pay...)), specMbr0MAC, specLB0v6, specMbrv6, 17750 + 15, false},
		// Instance 1: 9 bits, xor 0: tick 10 -> slot 10, tick 16..31 with
		// slot 511 (v3); 0 port bits; the header kept.
		{"v4 v2 keep", lb1(specLBv4(append(specLB(2, 1, 0, 0xffff, 10), pay...))), specMbr1MAC, specLB1v4, specMbr1v4, 19522, true},
		{"v6 v3 keep", lb1(specLBv6(append(specLB(3, 1, 0xffff, 9, 31), pay...))), specMbr1MAC, specLB1v6, specMbrv6, 19522, true},
		{"v4 options", func() specUDP { f := specLBv4(append(specLB(2, 1, 0, 1, 10), pay...)); f.Options = opts; return f }(), specMbr0MAC, specLB0v4, specMbr0v4, 17751, false},
		{"v4 options keep", func() specUDP { f := lb1(specLBv4(append(specLB(2, 1, 0, 1, 10), pay...))); f.Options = opts; return f }(), specMbr1MAC, specLB1v4, specMbr1v4, 19522, true},
		{"v4 TTL 2", ttl(specLBv4(append(specLB(2, 1, 0, 1, 10), pay...)), 2), specMbr0MAC, specLB0v4, specMbr0v4, 17751, false},
		{"v4 TTL 255", ttl(specLBv4(append(specLB(2, 1, 0, 1, 10), pay...)), 255), specMbr0MAC, specLB0v4, specMbr0v4, 17751, false},
		{"v6 hop limit 2", ttl(specLBv6(append(specLB(2, 1, 0, 1, 10), pay...)), 2), specMbr0MAC, specLB0v6, specMbrv6, 17751, false},
		{"port 16384", func() specUDP { f := specLBv4(append(specLB(2, 1, 0, 1, 10), pay...)); f.DPort = 16384; return f }(), specMbr0MAC, specLB0v4, specMbr0v4, 17751, false},
		{"port 32767", func() specUDP { f := specLBv4(append(specLB(2, 1, 0, 1, 10), pay...)); f.DPort = 32767; return f }(), specMbr0MAC, specLB0v4, specMbr0v4, 17751, false},
		{"no payload", specLBv4(specLB(2, 1, 0, 1, 10)), specMbr0MAC, specLB0v4, specMbr0v4, 17751, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := r.sent(c.in.build(t), "TxQueue")
			specDiff(t, c.name, out, specForwarded(t, c.in, c.mac, c.own, c.mbr, c.port, c.keep, c.in.TTL-1))
			p := specCheckIP(t, out)
			u := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
			if c.keep != bytes.HasPrefix(u.Payload, []byte{0x4c, 0x42}) {
				t.Errorf("LB header kept = %v, want %v", !c.keep, c.keep)
			}
		})
	}

	// Padding stays after the headers.
	in := specLBv4(specLB(2, 1, 0, 1, 10))
	out := r.sent(append(in.build(t), 0, 0, 0, 0, 0, 0), "TxQueue")
	specDiff(t, "padded", out, append(specForwarded(t, in, specMbr0MAC, specLB0v4, specMbr0v4, 17751, false, 63), 0, 0, 0, 0, 0, 0))

	// §4.8: the IPv6 action on an IPv4 packet writes 0.0.0.0.
	r = specRig26(t,
		"table_add load_balance_calendar_table do_assign_member 0 0 4 => 4",
		"table_add member_info_lookup_table do_ipv6_member_rewrite 0 0x0800 4 => 0x0a0000000004 0xfe800000000000000000000000000004 17750 4 0")
	in = specLBv4(append(specLB(2, 1, 0, 1, 11), pay...))
	out = r.sent(in.build(t), "TxQueue")
	specDiff(t, "IPv6 action, IPv4 packet", out, specForwarded(t, in, specMAC("0a:00:00:00:00:04"), specLB0v4, net.IPv4zero.To4(), 17751, false, 63))
	specCheckIP(t, out)
}

// TestLB2026UDPChecksum: a received 0 stays 0 (IPv4 and IPv6, E18); a
// computed 0 is written as 0xffff (§7.3).
func TestLB2026UDPChecksum(t *testing.T) {
	r := specRig26(t)
	for _, in := range []specUDP{specLBv4(append(specLB(2, 1, 0, 1, 10), specPayload(30)...)), specLBv6(append(specLB(2, 1, 0, 1, 10), specPayload(30)...)),
		func() specUDP {
			f := specLBv4(append(specLB(2, 1, 0, 1, 10), specPayload(30)...))
			f.Src, f.Dst = specSrc1v4, specLB1v4
			return f
		}()} {
		in.ZeroCsum = true
		out := r.sent(in.build(t), "TxQueue")
		p := specDecode(t, out)
		if u := p.Layer(layers.LayerTypeUDP).(*layers.UDP); u.Checksum != 0 {
			t.Errorf("UDP checksum %#04x, want 0 kept", u.Checksum)
		}
	}

	// The last payload word makes the new checksum's sum 0xffff: RFC 1071's
	// result 0 goes out as 0xffff.
	in := specLBv4(append(specLB(2, 1, 0, 1, 10), specPayload(30)...))
	b := in.Body
	b[len(b)-2], b[len(b)-1] = 0, 0
	ws := []uint16{0x0a01, 0x0203, 0xaabb, 0xccdd, 17, uint16(8 + len(b) - 16), 50000, 17751, uint16(8 + len(b) - 16), 0}
	binary.BigEndian.PutUint16(b[len(b)-2:], ^specFoldSum(specWords(ws, b[16:])))
	out := r.sent(in.build(t), "TxQueue")
	if got := binary.BigEndian.Uint16(out[40:]); got != 0xffff {
		t.Errorf("UDP checksum %#04x, want 0xffff for a computed 0", got)
	}
	specCheckIP(t, out)
}

// TestLB2026Responders: §6's examples and frames; the same bytes as
// lb-2025 (B.2).
func TestLB2026Responders(t *testing.T) {
	r := specRig26(t)
	specResponders(t, r, "lb-2026")

	// §6.1's quirk: a tpa that is not own_ip (after an IP filter hit) goes on
	// into the LB stage and is dropped there as not IP.
	r = specRig26(t, "table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0806 0x0a010205 => 0x0a010203 0 0")
	o := r.dropped(specARP(t, specBroadcast, net.ParseIP("10.1.2.5"), 0), "lb_drop_not_ip_pkt_counter")
	for _, c := range []string{"l3_arp_tpa_nomatch", "lb_rx_pkt_counter"} {
		if o.counts[c] != 1 {
			t.Errorf("counter %s not counted: %v", c, o.counts)
		}
	}
	r = specRig26(t, "table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 0x0a0102ff => 0x0a010203 0 0")
	r.dropped(specEcho4(t, specBroadcast, net.ParseIP("10.1.2.255")), "l3_icmpv4_echo_dst_nomatch")

	// The MAC from l2_iface_table when the MAC filter hit is l2_dst_allow.
	r = specRig26(t, "table_add l2_iface_table set_l2_iface 0&&&0xfff => 0 0x02aabbccddee 0",
		"table_add mac_dst_filter_table l2_dst_allow 0&&&0 0x02aabbccddee => 0")
	req := specARP(t, specMAC("02:aa:bb:cc:dd:ee"), specLB0v4, 0)
	want := specARPReply(t, specLB0v4, 0)
	copy(want[6:], specMAC("02:aa:bb:cc:dd:ee"))
	copy(want[22:], specMAC("02:aa:bb:cc:dd:ee"))
	specDiff(t, "ARP reply with the interface's MAC", r.sent(req, "TxQueue"), want)
	// The interface is keyed by VID: a frame on VLAN 7 misses the
	// 0&&&0xfff entry... and is dropped at the IP filter (EtherType 0x8100).
	r.dropped(specVLANTag(specARP(t, specMAC("02:aa:bb:cc:dd:ee"), specLB0v4, 0), 7, 0x0806), "l2_iface_drop_badip_counter")
}

// specVLANTag inserts a tag with vid in front of the EtherType of frame.
func specVLANTag(frame []byte, vid uint16, inner uint16) []byte {
	b := append(bytes.Clone(frame[:12]), 0x81, 0x00, byte(vid>>8), byte(vid))
	b = binary.BigEndian.AppendUint16(b, inner)
	return append(b, frame[14:]...)
}

// TestLB2026ICMP: §6.3, §6.6: unreachables counted by code and dropped,
// other ICMPv4 unhandled; the quoted headers' parsing (P8, P9).
func TestLB2026ICMP(t *testing.T) {
	r := specRig26(t)
	icmp4 := func(typ, code uint8, body []byte) []byte {
		return specSerialize(t,
			&layers.Ethernet{DstMAC: specOwnMAC, SrcMAC: specPeerMAC, EthernetType: layers.EthernetTypeIPv4},
			&layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: specSrc0v4, DstIP: specLB0v4},
			&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, code)},
			gopacket.Payload(body))
	}
	// gopacket's ICMPv4 layer is 8 bytes (its id and seq are the unused
	// field), so body offset k is ICMP offset 8+k. P8 reads the quoted
	// header from ICMP offset 4 and its protocol at ICMP offset 13: body
	// offset 5.
	quoted := func(proto byte) []byte {
		b := make([]byte, 28)
		b[5] = proto
		return b
	}
	for code, reason := range map[uint8]string{0: "net", 1: "host", 3: "port", 4: "frag_needed", 6: "net_unknown",
		7: "host_unknown", 10: "host_prohibited", 2: "other", 13: "other"} {
		r.dropped(icmp4(3, code, quoted(17)), "l3_icmpv4_dest_unreach_"+reason)
	}
	// P8's lengths: the ICMP message needs 24 bytes, 32 when the byte at
	// offset 13 is 17.
	for n := 0; n <= 28; n++ {
		for _, proto := range []byte{17, 6} {
			frame := icmp4(3, 1, quoted(proto)[:n])
			need := 24 - 8 // message of 24 bytes; gopacket's header is 8
			if proto == 17 {
				need = 32 - 8
			}
			if n < need {
				r.dropped(frame, specFail26)
			} else {
				r.dropped(frame, "l3_icmpv4_dest_unreach_host")
			}
		}
	}
	r.dropped(icmp4(0, 0, []byte("echo reply")), "l3_icmpv4_unhandled")
	r.dropped(icmp4(8, 1, []byte("echo with code 1")), "l3_icmpv4_unhandled")
	r.dropped(icmp4(11, 0, quoted(17)), "l3_icmpv4_unhandled")
	r.dropped(icmp4(8, 0, nil)[:14+20+4], specFail26) // no room for the echo header

	icmp6 := func(typ, code uint8, body []byte) []byte {
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolICMPv6, SrcIP: specSrc0v6, DstIP: specLB0v6}
		ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, code)}
		if err := ic.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		return specSerialize(t, &layers.Ethernet{DstMAC: specOwnMAC, SrcMAC: specPeerMAC, EthernetType: layers.EthernetTypeIPv6},
			ip, ic, gopacket.Payload(body))
	}
	// ICMPv6 offsets 4.. are the body: the quoted header's next header is
	// at offset 10 (body offset 6), then 8 bytes of UDP.
	q6 := func(next byte) []byte {
		b := make([]byte, 48)
		b[0] = 0x60
		b[6] = next
		return b
	}
	for code, reason := range map[uint8]string{0: "net", 1: "host_prohibited", 2: "host", 4: "port", 3: "other", 5: "other"} {
		r.dropped(icmp6(1, code, q6(17)), "l3_icmpv6_dest_unreach_"+reason)
	}
	for n := 0; n <= 48; n++ {
		for _, next := range []byte{17, 6} {
			need := 40
			if next == 17 {
				need = 48
			}
			if n < need {
				r.dropped(icmp6(1, 4, q6(next)[:n]), specFail26)
			} else {
				r.dropped(icmp6(1, 4, q6(next)[:n]), "l3_icmpv6_dest_unreach_port")
			}
		}
	}
	// Other ICMPv6 types are parse errors (P7).
	for _, tc := range [][2]uint8{{129, 0}, {136, 0}, {133, 0}, {2, 0}, {128, 1}, {135, 1}} {
		r.dropped(icmp6(tc[0], tc[1], make([]byte, 24)), specFail26)
	}
}

// TestLB2026Punt: §5.1 step 4. Untagged frames to 01:80:c2:00:00:00-0f
// leave at ToHost unchanged (but for parsed headers that are never
// emitted), with the punt counters.
func TestLB2026Punt(t *testing.T) {
	r := specRig26(t)
	hdr := func(dst string, typ uint16) []byte {
		return binary.BigEndian.AppendUint16(append(bytes.Clone(specMAC(dst)), specPeerMAC...), typ)
	}
	lldp := append(hdr("01:80:c2:00:00:0e", 0x88cc), 0x02, 0x07, 0x04, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0, 0)
	lacp := append(hdr("01:80:c2:00:00:02", 0x8809), append([]byte{0x01, 0x01, 0x01, 0x14}, make([]byte, 40)...)...)
	marker := append(hdr("01:80:c2:00:00:02", 0x8809), 0x02, 0x01, 0x01, 0x10)
	for _, c := range []struct {
		name  string
		frame []byte
		count string
	}{
		{"LLDP", lldp, "phys_lldp_counter"},
		{"LACP", lacp, "phys_dot3_slow_lacp_counter"},
		{"marker", marker, "phys_dot3_slow_other_counter"},
		{"LACP of 2 bytes", lacp[:16], "phys_dot3_slow_lacp_counter"},
		{"LLDP of 2 bytes", lldp[:16], "phys_lldp_counter"},
	} {
		out := r.sent(c.frame, "ToHost")
		specDiff(t, c.name, out, c.frame)
		o := r.run(c.frame)
		if o.counts[c.count] != 1 || o.counts["phys_ieee802_multicast_counter"] != 1 {
			t.Errorf("%s: counts %v", c.name, o.counts)
		}
	}
	// Too short for the LLDP header, or LACP's byte: parse errors.
	r.dropped(lldp[:15], specFail26)
	r.dropped(lacp[:15], specFail26)
	// Any EtherType that parses: an LB frame, unchanged.
	lb := specLBv4(append(specLB(2, 1, 0, 1, 10), specPayload(20)...))
	lb.EthDst = specMAC("01:80:c2:00:00:05")
	frame := lb.build(t)
	specDiff(t, "LB frame punted", r.sent(frame, "ToHost"), frame)
	// An NS and an ICMP unreachable punted lose their parsed NS and quoted
	// bytes (§8).
	ns := specNS(t, specSrc0v6, specLB0v6, specSrcLLA)
	copy(ns, specMAC("01:80:c2:00:00:00"))
	want := append(bytes.Clone(ns[:14+40+4]), ns[14+40+4+28:]...)
	specDiff(t, "NS punted", r.sent(ns, "ToHost"), want)
	un := specSerialize(t,
		&layers.Ethernet{DstMAC: specMAC("01:80:c2:00:00:0f"), SrcMAC: specPeerMAC, EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: specSrc0v4, DstIP: specLB0v4},
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(3, 3)},
		gopacket.Payload(append([]byte{0x45, 0, 0, 0, 0, 17}, make([]byte, 30)...)))
	want = append(bytes.Clone(un[:14+20+4]), un[14+20+4+28:]...)
	specDiff(t, "ICMP unreachable punted", r.sent(un, "ToHost"), want)

	// Not punted: tagged frames, and 01:80:c2:00:00:10. They go through
	// the MAC filter, which has neither.
	r.dropped(specVLANTag(lldp, 3, 0x88cc), specFail26) // LLDP is no inner EtherType of P2
	r.dropped(specVLANTag(frame, 3, 0x0800), "l2_dst_drop_counter")
	lb.EthDst = specMAC("01:80:c2:00:00:10")
	r.dropped(lb.build(t), "l2_dst_drop_counter")
	// LLDP to a MAC of the filter: not IP.
	copy(lldp, specOwnMAC)
	r.dropped(lldp, "l2_iface_drop_notip_counter")
	// A frame that does not parse is not punted.
	r.dropped(hdr("01:80:c2:00:00:0e", 0x88a8), specFail26)
}

// TestLB2026VLAN: one tag parsed and removed; the EtherType stays 0x8100,
// which the reference IP filter lacks (§8 VLAN quirk).
func TestLB2026VLAN(t *testing.T) {
	r := specRig26(t)
	lb := specLBv4(append(specLB(2, 1, 0, 1, 10), specPayload(20)...))
	lb.VLAN = 5
	frame := lb.build(t)
	r.dropped(frame, "l2_iface_drop_badip_counter")
	r.dropped(specVLANTag(specEcho4(t, specOwnMAC, specLB0v4), 5, 0x0800), "l2_iface_drop_badip_counter")
	// A second tag, and other inner EtherTypes, do not parse.
	r.dropped(specVLANTag(frame, 6, 0x8100), specFail26)
	r.dropped(specVLANTag(specLBv4(nil).build(t), 6, 0x88cc), specFail26)
	// Truncated inside the tag.
	for n := 14; n < 18; n++ {
		r.dropped(frame[:n], specFail26)
	}

	// With filter and member entries keyed on 0x8100 the frame is forwarded
	// untagged, its EtherType still 0x8100.
	r = specRig26(t,
		"table_add ip_dst_filter_table set_ip_sa 0&&&0 0x8100 0x0a010203 => 0x0a010203 0 0",
		"table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x8100 0 => 0x112233445566 0xaabbccdd 17750 4 0")
	out := r.sent(frame, "TxQueue")
	untagged := lb
	untagged.VLAN = 0
	want := specForwarded(t, untagged, specMbr0MAC, specLB0v4, specMbr0v4, 17751, false, 63)
	want[12], want[13] = 0x81, 0x00
	specDiff(t, "tagged frame forwarded", out, want)
}

// TestLB2026Drops: the crafted bad frames and misses of §2 and §5.4.
func TestLB2026Drops(t *testing.T) {
	r := specRig26(t)
	pay := specPayload(20)
	good := specLBv4(append(specLB(2, 1, 0, 1, 10), pay...))
	frame := good.build(t)
	specTruncations(t, r, "LB v4", frame, 58, "TxQueue", specFail26)
	specTruncations(t, r, "LB v6", specLBv6(append(specLB(3, 1, 0xfffa, 1, 10), pay...)).build(t), 78, "TxQueue", specFail26)

	mod := func(f func(b []byte)) []byte {
		b := bytes.Clone(frame)
		f(b)
		return b
	}
	r.dropped(mod(func(b []byte) { b[42] = 0x4d }), specFail26)              // magic
	r.dropped(mod(func(b []byte) { b[43] = 0x43 }), specFail26)              // magic
	r.dropped(mod(func(b []byte) { b[44] = 1 }), specFail26)                 // LB version 1
	r.dropped(mod(func(b []byte) { b[44] = 4 }), specFail26)                 // LB version 4
	r.dropped(mod(func(b []byte) { b[14] = 0x65 }), specFail26)              // IP version
	r.dropped(mod(func(b []byte) { b[14] = 0x44 }), specFail26)              // IHL 4
	r.dropped(mod(func(b []byte) { b[14] = 0x4f }), specFail26)              // options past the frame
	r.dropped(mod(func(b []byte) { b[23] = 6 }), specFail26)                 // TCP
	r.dropped(mod(func(b []byte) { b[12], b[13] = 0x88, 0xa8 }), specFail26) // 802.1ad
	v6 := specLBv6(append(specLB(2, 1, 0, 1, 10), pay...)).build(t)
	v6[20] = 0 // hop-by-hop
	r.dropped(v6, specFail26)

	// UDP outside 16384..32767 parses and has no LB header (E3) — after
	// the source filter (E1).
	for _, port := range []uint16{0, 53, 16383, 32768, 50000, 65535} {
		f := good
		f.DPort = port
		o := r.dropped(f.build(t), "lb_drop_no_udplb_hdr_pkt_counter")
		if o.counts["lb_rx_pkt_counter"] != 1 {
			t.Errorf("counts %v", o.counts)
		}
		f.Src = specSrc1v4
		r.dropped(f.build(t), "lb_drop_blocked_src_pkt_counter")
	}
	// UDP to a non-LB port, truncated inside UDP: a parse error; from 42
	// bytes on, no LB header.
	short := good
	short.DPort = 53
	for n := 34; n < 42; n++ {
		r.dropped(short.build(t)[:n], specFail26)
	}
	r.dropped(short.build(t)[:42], "lb_drop_no_udplb_hdr_pkt_counter")

	// TTL or hop limit 1 or 0 (E6).
	for _, ttl := range []uint8{0, 1} {
		f := good
		f.TTL = ttl
		r.dropped(f.build(t), "lb_drop_ttl_expired_pkt_counter")
		f6 := specLBv6(append(specLB(2, 1, 0, 1, 10), pay...))
		f6.TTL = ttl
		r.dropped(f6.build(t), "lb_drop_ttl_expired_pkt_counter")
	}
	// The TTL is checked before the epoch: TTL 1 with a tick of no epoch.
	f := specLBv4(append(specLB(2, 1, 0, 1, 32), pay...))
	f.TTL = 1
	r.dropped(f.build(t), "lb_drop_ttl_expired_pkt_counter")

	// Filters.
	f = good
	f.EthDst = specMAC("00:aa:bb:cc:dd:ef")
	r.dropped(f.build(t), "l2_dst_drop_counter")
	f = good
	f.Dst = net.ParseIP("10.1.2.5").To4()
	r.dropped(f.build(t), "l2_iface_drop_badip_counter")
	for _, src := range []net.IP{specSrc1v4, net.ParseIP("192.0.2.1").To4()} {
		f = good
		f.Src = src
		r.dropped(f.build(t), "lb_drop_blocked_src_pkt_counter")
	}
	f6 := specLBv6(append(specLB(2, 1, 0, 1, 10), pay...))
	f6.Src = specSrc1v6
	r.dropped(f6.build(t), "lb_drop_blocked_src_pkt_counter")

	// Epoch miss: ticks 32 and up; calendar miss: tick 11 -> slot 4.
	r.dropped(specLBv4(append(specLB(2, 1, 0, 1, 32), pay...)).build(t), "lb_drop_epoch_assign_miss_pkt_counter")
	r.dropped(specLBv4(append(specLB(3, 1, 5, 1, 1<<40), pay...)).build(t), "lb_drop_epoch_assign_miss_pkt_counter")
	r.dropped(specLBv4(append(specLB(2, 1, 0, 1, 11), pay...)).build(t), "lb_drop_lb_calendar_miss_pkt_counter")
	f = specLBv4(append(specLB(2, 1, 0, 1, 20), pay...))
	f.Src, f.Dst = specSrc1v4, specLB1v4
	r.dropped(f.build(t), "lb_drop_lb_calendar_miss_pkt_counter")

	// Member miss and the member verdicts (E12, E13).
	r = specRig26(t,
		"table_add load_balance_calendar_table do_assign_member 0 0 4 => 7",
		"table_add load_balance_calendar_table do_assign_member 0 0 2 => 8",
		"table_add load_balance_calendar_table do_assign_member 0 0 1 => 9",
		"table_add member_info_lookup_table drop_soft_evicted 0 0x0800 8 =>",
		"table_add member_info_lookup_table drop_deregistered 0 0x0800 9 =>")
	r.dropped(specLBv4(append(specLB(3, 1, 99, 1, 5), pay...)).build(t), "lb_drop_mbr_info_miss_pkt_counter")
	r.dropped(specLBv4(append(specLB(3, 1, 21, 1, 5), pay...)).build(t), "mbr_drop_soft_evicted_counter")
	r.dropped(specLBv4(append(specLB(3, 1, 0xfffe, 1, 5), pay...)).build(t), "mbr_drop_deregistered_counter")
	// The IPv6 member of an IPv4 frame's EtherType is missing.
	f6 = specLBv6(append(specLB(3, 1, 99, 1, 5), pay...))
	r.dropped(f6.build(t), "lb_drop_mbr_info_miss_pkt_counter")
}

// TestLB2026Selects: E10 and E16.
func TestLB2026Selects(t *testing.T) { specSelects(t, "lb-2026") }

// TestLBSpecSimCommand runs `nsc sim` on a pcap of spec frames for both
// versions and compares the pcaps it writes with the spec's outputs.
func TestLBSpecSimCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nsc")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	dir := t.TempDir()
	nsc := filepath.Join(dir, "nsc")
	build := exec.Command(goBin, "build", "-o", nsc, "./cmd/nsc")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build nsc: %v\n%s", err, out)
	}
	example := append(specUnhex(t, `00aabbccddee 001122334455 0800 4500 0038 0001 0000 4011 62ae 0a010202
		0a010203 04d2 4c42 0024 17ac 4c42 0200 0000 0001 000000000000000a`), "some payload"...)
	lldp := append(specUnhex(t, "0180c200000e 001122334455 88cc"), 0x02, 0x07, 0x04)
	echo := specEcho4(t, specOwnMAC, specLB0v4)
	in := [][]byte{example, echo, lldp}
	inPcap := filepath.Join(dir, "in.pcap")
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, f := range in {
		if err := w.WritePacket(gopacket.CaptureInfo{CaptureLength: len(f), Length: len(f)}, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(inPcap, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	echoReply := bytes.Clone(echo)
	copy(echoReply[0:], specPeerMAC)
	copy(echoReply[6:], specOwnMAC)
	copy(echoReply[26:], specLB0v4)
	copy(echoReply[30:], specSrc0v4)
	echoReply[34] = 0
	binary.BigEndian.PutUint16(echoReply[36:], 0x8ac8)
	for _, v := range []struct {
		version string
		sinks   map[string][][]byte
	}{
		// lb-2025 does not parse LLDP, and forwards the example with TTL 64.
		{"lb-2025", map[string][][]byte{"TxQueue": {append(specUnhex(t, `112233445566 00aabbccddee 0800 4500 0028 0001 0000 4011 f727 0a010203
			aabbccdd 04d2 4557 0014 016e`), "some payload"...), echoReply}}},
		{"lb-2026", map[string][][]byte{
			"TxQueue": {append(specUnhex(t, `112233445566 00aabbccddee 0800 4500 0028 0001 0000 3f11 f827 0a010203
				aabbccdd 04d2 4557 0014 016e`), "some payload"...), echoReply},
			"ToHost": {lldp},
		}},
	} {
		out := filepath.Join(dir, v.version)
		cmd := exec.Command(nsc, "sim", "models/ejfat/"+v.version+".nsc", "--graph", LPGName(v.version),
			"--tables", "ejfat/testdata/"+v.version+".tables", "--in", inPcap, "--out", out)
		cmd.Dir = ".."
		msg, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, msg)
		}
		files, _ := filepath.Glob(filepath.Join(out, "*.pcap"))
		if len(files) != len(v.sinks) {
			t.Errorf("%s: pcaps %v, want %d\n%s", v.version, files, len(v.sinks), msg)
		}
		for sink, want := range v.sinks {
			raw, err := os.ReadFile(filepath.Join(out, sink+".pcap"))
			if err != nil {
				t.Fatalf("%s: %v\n%s", v.version, err, msg)
			}
			r, err := pcapgo.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range want {
				got, _, err := r.ReadPacketData()
				if err != nil {
					t.Fatalf("%s %s frame %d: %v", v.version, sink, i, err)
				}
				specDiff(t, v.version+" "+sink, got, w)
			}
		}
	}
}

// specSum71 is §7.1: ~fold(Σ add + Σ ~sub).
func specSum71(add, sub []uint16) uint16 {
	var acc uint64
	for _, w := range add {
		acc += uint64(w)
	}
	for _, w := range sub {
		acc += uint64(^w)
	}
	for acc > 0xffff {
		acc = acc&0xffff + acc>>16
	}
	return 0xffff ^ uint16(acc)
}

// TestLB2026ChecksumArithmetic: with wrong received checksums the error
// carries into the output, exactly as §7.2 and §7.3 compute it from the
// old and new words (computed here from the spec's lists).
func TestLB2026ChecksumArithmetic(t *testing.T) {
	r := specRig26(t)
	for _, c := range specCsumFrames() {
		for _, errs := range specCsumCases {
			frame, out, v4, udpOff := c.send(t, r, errs)
			if v4 { // §7.2: the old base header out, the new (checksum 0) in.
				nw := bytes.Clone(out[14:34])
				nw[10], nw[11] = 0, 0
				if got, want := binary.BigEndian.Uint16(out[24:]), specSum71(specWords(nil, nw), specWords(nil, frame[14:34])); got != want {
					t.Errorf("%s, received checksums %+v: hdrChecksum %#04x, want %#04x", c.name, errs, got, want)
				}
			}
			// §7.3, the addresses as 2 or 8 words.
			srcOff, addr := 26, 4
			if !v4 {
				srcOff, addr = 22, 16
			}
			oldU := frame[udpOff : udpOff+8]
			newU := out[udpOff : udpOff+8]
			sub := specWords(nil, frame[srcOff:srcOff+2*addr])
			sub = append(sub, binary.BigEndian.Uint16(oldU[4:]), 0x11)
			sub = specWords(sub, oldU)
			sub = specWords(sub, frame[udpOff+8:udpOff+24])
			add := specWords(nil, out[srcOff:srcOff+2*addr])
			add = append(add, binary.BigEndian.Uint16(newU[4:]), 0x11)
			add = specWords(add, newU[:6])
			if c.keep {
				add = specWords(add, out[udpOff+8:udpOff+24])
			}
			want := specSum71(add, sub)
			if want == 0 {
				want = 0xffff
			}
			if binary.BigEndian.Uint16(oldU[6:]) == 0 { // §7.3: skipped
				want = 0
			}
			if got := binary.BigEndian.Uint16(newU[6:]); got != want {
				t.Errorf("%s, received checksums %+v: UDP checksum %#04x, want %#04x", c.name, errs, got, want)
			}
			if errs == (specCsumCase{}) {
				specCheckIP(t, out)
			}
		}
	}
}
