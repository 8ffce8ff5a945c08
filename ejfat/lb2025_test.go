package ejfat

// Tests of models/ejfat/lb-2025.nsc against ejfat-lb-pipeline-2025.md Part A:
// every worked example byte for byte, and the crafted frames of the
// spec's parser and control flow. Expected frames come from the spec's
// numbers, from gopacket (which builds and checksums the frames the spec
// describes) and from the spec's own ones'-complement arithmetic
// implemented here; never from the model's output.
//
// The helpers of this file (spec*) are shared with lb2026_test.go.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/sim"
)

// ---- running a model ----

// specRig runs one version's LPG with a table script loaded.
type specRig struct {
	t    *testing.T
	mach *sim.Machine
	prev sim.Counters
}

// specOut is what one frame did: left at a sink, or dropped.
type specOut struct {
	sink   string // the emit node it left by, "" if dropped
	data   []byte
	drop   string // the drop reason, "" if it left
	dropAt string
	counts map[string]uint64 // count nodes passed, by label
}

func (o specOut) String() string {
	if o.sink != "" {
		return fmt.Sprintf("sent at %s: %x", o.sink, o.data)
	}
	return fmt.Sprintf("dropped at %s: %q", o.dropAt, o.drop)
}

// specScript is a version's reference table script plus extra lines.
func specScript(t *testing.T, version string, extra ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", version+".tables"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n" + strings.Join(extra, "\n") + "\n"
}

// specScriptWithout is the reference script with the lines containing any
// of the given strings left out.
func specScriptWithout(t *testing.T, version string, drop ...string) string {
	var keep []string
	for _, l := range strings.Split(specScript(t, version), "\n") {
		out := false
		for _, d := range drop {
			out = out || strings.Contains(l, d)
		}
		if !out {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func newSpecRig(t *testing.T, version, script string) *specRig {
	t.Helper()
	m, g, err := LPG(version)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := Tables(m, version+".tables", strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	mach, err := sim.New(g, ts)
	if err != nil {
		t.Fatal(err)
	}
	return &specRig{t: t, mach: mach, prev: mach.Counters()}
}

// run runs one frame (not changed) and reports its one outcome.
func (r *specRig) run(frame []byte) specOut {
	r.t.Helper()
	var out specOut
	sent := 0
	r.mach.Run(bytes.Clone(frame), func(s *dataflow.Node, d []byte) {
		sent++
		out.sink, out.data = s.Name, bytes.Clone(d)
	})
	c := r.mach.Counters()
	drops := 0
	for k, v := range c.Drops {
		if v != r.prev.Drops[k] {
			drops++
			out.drop, out.dropAt = k.Reason, k.Node
		}
	}
	out.counts = map[string]uint64{}
	for k, v := range c.Counts {
		if d := v - r.prev.Counts[k]; d != 0 {
			out.counts[k] = d
		}
	}
	r.prev = c
	if sent+drops != 1 {
		r.t.Fatalf("frame %x: %d sent, %d drops (%+v)", frame, sent, drops, c.Drops)
	}
	return out
}

// sent runs frame and wants it to leave at sink.
func (r *specRig) sent(frame []byte, sink string) []byte {
	r.t.Helper()
	o := r.run(frame)
	if o.sink != sink {
		r.t.Fatalf("frame %x: %v, want it sent at %s", frame, o, sink)
	}
	return o.data
}

// dropped runs frame and wants it dropped for reason.
func (r *specRig) dropped(frame []byte, reason string) specOut {
	r.t.Helper()
	o := r.run(frame)
	if o.drop != reason {
		r.t.Fatalf("frame %x: %v, want it dropped: %q", frame, o, reason)
	}
	return o
}

// ---- the spec's ones'-complement arithmetic, and RFC 1071 ----

// specWords appends the big-endian 16-bit words of b, an odd last byte
// padded with a zero (RFC 1071).
func specWords(ws []uint16, b []byte) []uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		ws = append(ws, binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		ws = append(ws, uint16(b[len(b)-1])<<8)
	}
	return ws
}

// specFoldSum is the ones'-complement sum of ws, folded to 16 bits
// (0 only when every word is 0).
func specFoldSum(ws []uint16) uint16 {
	var s uint64
	for _, w := range ws {
		s += uint64(w)
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// specChecksumOK is RFC 1071's receiver test: the sum of everything the
// checksum covers, the checksum included, is 0xffff.
func specChecksumOK(ws []uint16) bool { return specFoldSum(ws) == 0xffff }

// specDelta is lb-2025's delta accumulator (2025 spec, "Ones'-complement
// helpers"): operands are the added words and the complements of the
// subtracted ones.
type specDelta struct{ ops []uint16 }

func (d *specDelta) add(b []byte) { d.ops = specWords(d.ops, b) }
func (d *specDelta) sub(b []byte) {
	for _, w := range specWords(nil, b) {
		d.ops = append(d.ops, ^w)
	}
}
func (d *specDelta) swap(old, new []byte) { d.sub(old); d.add(new) }

// fold is the closed form: 0 if every operand is 0, else
// ((Σ - 1) mod 0xffff) + 1.
func (d *specDelta) fold() uint16 {
	var s uint64
	for _, w := range d.ops {
		s += uint64(w)
	}
	if s == 0 {
		return 0
	}
	return uint16((s-1)%0xffff + 1)
}

// specApply is apply(h, d) = ~(~h ⊕ d) in its closed form.
func specApply(h, d uint16) uint16 {
	if h == 0xffff && d == 0 {
		return 0xffff
	}
	return 0xffff - uint16((uint32(^h)+uint32(d)-1)%0xffff+1)
}

func specBE16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

// ---- frames ----

var (
	specOwnMAC  = specMAC("00:aa:bb:cc:dd:ee")
	specPeerMAC = specMAC("00:11:22:33:44:55")
	specMbr0MAC = specMAC("11:22:33:44:55:66") // LB 0's member 0
	specMbr1MAC = specMAC("99:88:77:66:55:44") // LB 1's member 0

	specLB0v4   = net.ParseIP("10.1.2.3").To4()
	specLB1v4   = net.ParseIP("10.1.2.4").To4()
	specLB0v6   = net.ParseIP("fd9f:53b7:a261:48ed:2aa:bbff:fecc:ddee")
	specLB1v6   = net.ParseIP("fd9f:53b7:a261:48ed::1")
	specSrc0v4  = net.ParseIP("10.1.2.2").To4() // allowed for LB 0
	specSrc1v4  = net.ParseIP("10.1.2.10").To4()
	specSrc0v6  = net.ParseIP("fe80::1")
	specSrc1v6  = net.ParseIP("fe80::10")
	specMbr0v4  = net.ParseIP("170.187.204.221").To4()
	specMbr1v4  = net.ParseIP("10.11.12.13").To4()
	specMbrv6   = net.ParseIP("fe80::3")
	specAllNode = net.ParseIP("ff02::1")
)

func specMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// specSerialize builds a frame with gopacket, lengths and checksums fixed.
// gopacket pads an Ethernet frame to 60 bytes; the specs never pad, so the
// Ethernet header is put in front of what gopacket serialized after it.
func specSerialize(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	var head []byte
	if eth, ok := ls[0].(*layers.Ethernet); ok {
		head = append(append(bytes.Clone(eth.DstMAC), eth.SrcMAC...), byte(eth.EthernetType>>8), byte(eth.EthernetType))
		ls = ls[1:]
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append(head, buf.Bytes()...)
}

// specLB is a 16-byte LB header: magic, version, protocol, the two 16-bit
// fields of the body (v2: rsvd, entropy; v3: slot_select, port_select),
// tick.
func specLB(version, proto byte, a, b uint16, tick uint64) []byte {
	h := []byte{0x4c, 0x42, version, proto}
	h = binary.BigEndian.AppendUint16(h, a)
	h = binary.BigEndian.AppendUint16(h, b)
	return binary.BigEndian.AppendUint64(h, tick)
}

// specUDP describes a UDP frame; build makes it with gopacket.
type specUDP struct {
	EthDst, EthSrc net.HardwareAddr
	VLAN           uint16 // a tag with this VID if not 0
	Src, Dst       net.IP // 4 or 16 bytes
	TTL            uint8  // TTL or hop limit
	ID             uint16
	Options        []layers.IPv4Option
	SPort, DPort   uint16
	Body           []byte // after the UDP header: LB header, payload
	ZeroCsum       bool   // send UDP checksum 0
}

func (f specUDP) build(t *testing.T) []byte {
	t.Helper()
	eth := &layers.Ethernet{DstMAC: f.EthDst, SrcMAC: f.EthSrc}
	ls := []gopacket.SerializableLayer{eth}
	next := layers.EthernetTypeIPv4
	if f.Src.To4() == nil {
		next = layers.EthernetTypeIPv6
	}
	if f.VLAN != 0 {
		eth.EthernetType = layers.EthernetTypeDot1Q
		ls = append(ls, &layers.Dot1Q{VLANIdentifier: f.VLAN, Type: next})
	} else {
		eth.EthernetType = next
	}
	u := &layers.UDP{SrcPort: layers.UDPPort(f.SPort), DstPort: layers.UDPPort(f.DPort)}
	if next == layers.EthernetTypeIPv4 {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: f.TTL, Id: f.ID, Protocol: layers.IPProtocolUDP,
			SrcIP: f.Src.To4(), DstIP: f.Dst.To4(), Options: f.Options}
		u.SetNetworkLayerForChecksum(ip)
		ls = append(ls, ip)
	} else {
		ip := &layers.IPv6{Version: 6, HopLimit: f.TTL, NextHeader: layers.IPProtocolUDP, SrcIP: f.Src, DstIP: f.Dst}
		u.SetNetworkLayerForChecksum(ip)
		ls = append(ls, ip)
	}
	ls = append(ls, u, gopacket.Payload(f.Body))
	b := specSerialize(t, ls...)
	if f.ZeroCsum {
		off := len(b) - len(f.Body) - 2
		b[off], b[off+1] = 0, 0
	}
	return b
}

// specPayload is n bytes of a fixed pattern.
func specPayload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

// specFix makes the last two bytes of b such that the RFC 1071 checksum of
// the words (sum of the other covered words, b included) comes out as
// want: the checksum of the spec examples whose payload the spec does not
// give.
func specFix(b []byte, others []uint16, want uint16) {
	b[len(b)-2], b[len(b)-1] = 0, 0
	s := specFoldSum(specWords(others, b))
	// want = ~(s + w)  =>  w = ~want - s (ones' complement)
	w := specFoldSum([]uint16{^want, ^s})
	binary.BigEndian.PutUint16(b[len(b)-2:], w)
}

// specDecode decodes a frame with gopacket and fails on any error layer.
func specDecode(t *testing.T, b []byte) gopacket.Packet {
	t.Helper()
	p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
	if e := p.ErrorLayer(); e != nil {
		t.Fatalf("gopacket cannot decode %x: %v", b, e.Error())
	}
	return p
}

// specCheckIP checks a forwarded or answered frame with gopacket and
// RFC 1071: the IPv4 header checksum, and the UDP or ICMP checksum (a
// zero UDP checksum is reported, not checked). It returns the decoded
// packet.
func specCheckIP(t *testing.T, b []byte) gopacket.Packet {
	t.Helper()
	p := specDecode(t, b)
	var pseudo []uint16
	if ip, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		if !specChecksumOK(specWords(nil, ip.Contents)) {
			t.Errorf("IPv4 header checksum %#04x does not verify: %x", ip.Checksum, ip.Contents)
		}
		pseudo = specWords(specWords(nil, ip.SrcIP.To4()), ip.DstIP.To4())
		pseudo = append(pseudo, uint16(ip.Protocol))
	}
	if ip, ok := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
		pseudo = specWords(specWords(nil, ip.SrcIP), ip.DstIP)
		pseudo = append(pseudo, uint16(ip.NextHeader))
	}
	if u, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP); ok && u.Checksum != 0 {
		seg := append(bytes.Clone(u.Contents), u.Payload...)
		if len(seg) != int(u.Length) {
			t.Fatalf("UDP length %d, %d bytes", u.Length, len(seg))
		}
		ws := append(pseudo, u.Length)
		if !specChecksumOK(specWords(ws, seg)) {
			t.Errorf("UDP checksum %#04x does not verify", u.Checksum)
		}
	}
	if ic, ok := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ok {
		ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		msg := b[14+len(ip.Contents) : 14+int(ip.Length)]
		if !specChecksumOK(specWords(nil, msg)) {
			t.Errorf("ICMP checksum %#04x does not verify", ic.Checksum)
		}
	}
	if ic, ok := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6); ok {
		ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		msg := b[14+40 : 14+40+int(ip.Length)]
		ws := append(pseudo, ip.Length)
		if !specChecksumOK(specWords(ws, msg)) {
			t.Errorf("ICMPv6 checksum %#04x does not verify", ic.Checksum)
		}
	}
	return p
}

// specDiff reports the first differing byte of got and want.
func specDiff(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Errorf("%s: differs at byte %d\n got  %x\n want %x", what, i, got, want)
}

// ---- lb-2025 ----

const (
	specFail25 = "rx_rslt[0] parse fail"
)

func specRig25(t *testing.T, extra ...string) *specRig {
	return newSpecRig(t, "lb-2025", specScript(t, "lb-2025", extra...))
}

// specLBv4 is an LB frame to LB 0 (10.1.2.3) from its allowed sender.
func specLBv4(body []byte) specUDP {
	return specUDP{EthDst: specOwnMAC, EthSrc: specPeerMAC, Src: specSrc0v4, Dst: specLB0v4,
		TTL: 64, ID: 1, SPort: 50000, DPort: 0x4c42, Body: body}
}

// specLBv6 is an LB frame to LB 0 (its unicast IPv6 address) from fe80::1.
func specLBv6(body []byte) specUDP {
	return specUDP{EthDst: specOwnMAC, EthSrc: specPeerMAC, Src: specSrc0v6, Dst: specLB0v6,
		TTL: 64, SPort: 50000, DPort: 0x4c42, Body: body}
}

// specForwarded is the frame the spec says a forwarded LB frame becomes:
// the member's MAC and address, the LB's own MAC and address as source,
// the new port, the LB header stripped unless keep, TTL as given; built by
// gopacket with the checksums computed from scratch (equal to the spec's
// incremental ones for a frame that came in with correct checksums).
func specForwarded(t *testing.T, in specUDP, memberMAC net.HardwareAddr, ownIP, memberIP net.IP, port uint16, keep bool, ttl uint8) []byte {
	t.Helper()
	out := in
	out.EthDst, out.EthSrc = memberMAC, specOwnMAC
	out.Src, out.Dst = ownIP, memberIP
	out.DPort = port
	out.TTL = ttl
	if !keep {
		out.Body = in.Body[16:]
	}
	return out.build(t)
}

// TestLB2025WorkedExample is A.7's example: an IPv4 v2 packet of LB 0,
// hdrChecksum 0x624E -> 0xF6C7, totalLen 152 -> 136, UDP dst port ->
// 17751, UDP length 132 -> 116, UDP checksum 0x7E40 -> 0x6803, TTL 64.
// The spec's "UDP 50000" is the source port: 50000 is outside 16384..32767
// and would not parse as a destination; the checksums say the destination
// was 0x4c42 and the LB header 4c42 0201 0000 0001 tick 10 (entropy 1 ->
// port 0x4556 + 1; tick 10 -> slot 5, A.7 step 6).
func TestLB2025WorkedExample(t *testing.T) {
	body := append(specLB(2, 1, 0, 1, 10), specPayload(108)...)
	in := specLBv4(body)
	// The payload's last word makes the UDP checksum the example's 0x7e40.
	pseudo := []uint16{0x0a01, 0x0202, 0x0a01, 0x0203, 17, 132, 50000, 0x4c42, 132, 0}
	specFix(body, pseudo, 0x7e40)
	frame := in.build(t)
	if got := binary.BigEndian.Uint16(frame[24:]); got != 0x624e {
		t.Fatalf("input hdrChecksum %#04x, the example has 0x624e", got)
	}
	if got := binary.BigEndian.Uint16(frame[40:]); got != 0x7e40 {
		t.Fatalf("input UDP checksum %#04x, the example has 0x7e40", got)
	}
	if len(frame) != 14+152 {
		t.Fatalf("input is %d bytes", len(frame))
	}

	r := specRig25(t)
	out := r.sent(frame, "TxQueue")
	if len(out) != len(frame)-16 {
		t.Fatalf("output %d bytes, want %d", len(out), len(frame)-16)
	}
	for _, c := range []struct {
		what string
		off  int
		want uint16
	}{
		{"totalLen", 16, 136},
		{"TTL, protocol", 22, 0x4011},
		{"hdrChecksum", 24, 0xf6c7},
		{"UDP src port", 34, 50000},
		{"UDP dst port", 36, 17751},
		{"UDP length", 38, 116},
		{"UDP checksum", 40, 0x6803},
	} {
		if got := binary.BigEndian.Uint16(out[c.off:]); got != c.want {
			t.Errorf("%s = %#04x, want %#04x", c.what, got, c.want)
		}
	}
	want := specForwarded(t, in, specMbr0MAC, specLB0v4, specMbr0v4, 17751, false, 64)
	specDiff(t, "A.7 example", out, want)
	specCheckIP(t, out)

	// The spec's own arithmetic (A.7 steps 4, 10-13) gives the same two
	// checksums.
	var ip, udp specDelta
	for _, d := range []*specDelta{&ip, &udp} {
		d.swap(specSrc0v4, specLB0v4)
		d.swap(specLB0v4, specMbr0v4)
		d.swap(specBE16(152), specBE16(136))
	}
	udp.swap(specBE16(0x4c42), specBE16(17751))
	udp.sub(body[:16])
	udp.swap(specBE16(132), specBE16(116))
	if got := specApply(0x624e, ip.fold()); got != 0xf6c7 {
		t.Errorf("spec arithmetic: hdrChecksum %#04x", got)
	}
	if got := specApply(0x7e40, udp.fold()); got != 0x6803 {
		t.Errorf("spec arithmetic: UDP checksum %#04x", got)
	}

	o := r.run(frame)
	for _, c := range []string{"packet_rx_counter", "rx_rslt[13] LB", "lb_ctx_rx_pkt_counter", "lb_ctx_rx_v2_counter", "lb_mbr_tx_pkt_counter"} {
		if o.counts[c] != 1 {
			t.Errorf("counter %s = %d, want 1 (%v)", c, o.counts[c], o.counts)
		}
	}
}

// TestLB2025Forward: v2 and v3, IPv4 and IPv6, strip (LB 0) and keep (LB 1),
// IPv4 options, TTL 1, against frames gopacket builds as the spec says.
func TestLB2025Forward(t *testing.T) {
	r := specRig25(t)
	pay := specPayload(40)
	lb1 := func(f specUDP) specUDP {
		f.Src, f.Dst = specSrc1v4, specLB1v4
		return f
	}
	lb1v6 := func(f specUDP) specUDP {
		f.Src, f.Dst = specSrc1v6, specLB1v6
		return f
	}
	opts := []layers.IPv4Option{{OptionType: 148, OptionLength: 4, OptionData: []byte{0, 0}}}
	for _, c := range []struct {
		name     string
		in       specUDP
		mac      net.HardwareAddr
		own, mbr net.IP
		port     uint16
		keep     bool
	}{
		// v2, tick 10: slot (0x000a ^ 0xffff) & 7 = 5, epoch 0; entropy 0x1237 & 0xf = 7.
		{"v4 v2 strip", specLBv4(append(specLB(2, 1, 0, 0x1237, 10), pay...)), specMbr0MAC, specLB0v4, specMbr0v4, 0x4556 + 7, false},
		// tick 20 -> epoch 1 (/60, priority 5 over the /0), slot (0x14 ^ 0xffff) & 7 = 3.
		{"v4 v2 epoch 1", specLBv4(append(specLB(2, 1, 0, 0x000f, 20), pay...)), specMbr0MAC, specLB0v4, specMbr0v4, 0x4556 + 15, false},
		// v3: slot_select 0xfffa -> (0xfffa ^ 0xffff) & 7 = 5; port_select 0xab -> 0xb.
		{"v4 v3 strip", specLBv4(append(specLB(3, 0, 0xfffa, 0xab, 1<<40), pay...)), specMbr0MAC, specLB0v4, specMbr0v4, 0x4556 + 0xb, false},
		{"v6 v2 strip", specLBv6(append(specLB(2, 1, 0, 2, 10), pay...)), specMbr0MAC, specLB0v6, specMbrv6, 0x4556 + 2, false},
		{"v6 v3 strip", specLBv6(append(specLB(3, 1, 0xfffa, 0xffff, 7), pay...)), specMbr0MAC, specLB0v6, specMbrv6, 0x4556 + 15, false},
		// LB 1: 9 bits, xor 0: tick 10 -> slot 10; 0 port bits, header kept.
		{"v4 v2 keep", lb1(specLBv4(append(specLB(2, 1, 0, 0xffff, 10), pay...))), specMbr1MAC, specLB1v4, specMbr1v4, 0x4c42, true},
		{"v6 v3 keep", lb1v6(specLBv6(append(specLB(3, 1, 0xfe00|10, 9, 99), pay...))), specMbr1MAC, specLB1v6, specMbrv6, 0x4c42, true},
		{"v4 options", func() specUDP { f := specLBv4(append(specLB(2, 1, 0, 1, 10), pay...)); f.Options = opts; return f }(), specMbr0MAC, specLB0v4, specMbr0v4, 0x4557, false},
		{"v4 options keep", func() specUDP {
			f := lb1(specLBv4(append(specLB(2, 1, 0, 1, 10), pay...)))
			f.Options = opts
			return f
		}(), specMbr1MAC, specLB1v4, specMbr1v4, 0x4c42, true},
		// TTL 1: lb-2025 never looks at the TTL.
		{"v4 TTL 1", func() specUDP { f := specLBv4(append(specLB(2, 1, 0, 1, 10), pay...)); f.TTL = 1; return f }(), specMbr0MAC, specLB0v4, specMbr0v4, 0x4557, false},
		{"v6 hop limit 0", func() specUDP { f := specLBv6(append(specLB(2, 1, 0, 1, 10), pay...)); f.TTL = 0; return f }(), specMbr0MAC, specLB0v6, specMbrv6, 0x4557, false},
		// Any port in 16384..32767 is LB traffic.
		{"port 16384", func() specUDP { f := specLBv4(append(specLB(2, 1, 0, 1, 10), pay...)); f.DPort = 16384; return f }(), specMbr0MAC, specLB0v4, specMbr0v4, 0x4557, false},
		{"port 32767", func() specUDP { f := specLBv4(append(specLB(2, 1, 0, 1, 10), pay...)); f.DPort = 32767; return f }(), specMbr0MAC, specLB0v4, specMbr0v4, 0x4557, false},
		// Ethernet padding and trailing bytes are remainder.
		{"short payload", specLBv4(specLB(2, 1, 0, 1, 10)), specMbr0MAC, specLB0v4, specMbr0v4, 0x4557, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			frame := c.in.build(t)
			out := r.sent(frame, "TxQueue")
			want := specForwarded(t, c.in, c.mac, c.own, c.mbr, c.port, c.keep, c.in.TTL)
			specDiff(t, c.name, out, want)
			p := specCheckIP(t, out)
			u := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
			if c.keep != bytes.HasPrefix(u.Payload, []byte{0x4c, 0x42}) {
				t.Errorf("LB header kept = %v, want %v", !c.keep, c.keep)
			}
		})
	}
}

// TestLB2025PaddedFrame: Ethernet padding after the IP datagram stays
// after the emitted headers.
func TestLB2025PaddedFrame(t *testing.T) {
	r := specRig25(t)
	in := specLBv4(specLB(2, 1, 0, 1, 10))
	frame := append(in.build(t), 0, 0, 0, 0, 0, 0) // 58 + 6 = 64 bytes
	out := r.sent(frame, "TxQueue")
	want := append(specForwarded(t, in, specMbr0MAC, specLB0v4, specMbr0v4, 0x4557, false, 64), 0, 0, 0, 0, 0, 0)
	specDiff(t, "padded", out, want)
}

// TestLB2025ZeroUDPChecksum: A.7 step 13 updates a zero checksum like any
// other (~fold(d), not a valid checksum), and never writes 0xffff for 0.
func TestLB2025ZeroUDPChecksum(t *testing.T) {
	r := specRig25(t)
	for _, keep := range []bool{false, true} {
		in := specLBv4(append(specLB(2, 1, 0, 1, 10), specPayload(30)...))
		own, mbr, port := specLB0v4, specMbr0v4, uint16(0x4557)
		if keep {
			in.Src, in.Dst = specSrc1v4, specLB1v4
			own, mbr, port = specLB1v4, specMbr1v4, 0x4c42
		}
		in.ZeroCsum = true
		frame := in.build(t)
		out := r.sent(frame, "TxQueue")
		var d specDelta
		d.swap(in.Src, own)
		d.swap(in.Dst, mbr)
		ipLen := binary.BigEndian.Uint16(frame[16:])
		udpLen := binary.BigEndian.Uint16(frame[38:])
		if !keep {
			d.swap(specBE16(ipLen), specBE16(ipLen-16))
		}
		d.swap(specBE16(0x4c42), specBE16(port))
		if !keep {
			d.sub(in.Body[:16])
			d.swap(specBE16(udpLen), specBE16(udpLen-16))
		}
		want := specApply(0, d.fold())
		if want == 0 {
			t.Fatal("test frame chosen badly: the spec's result is 0")
		}
		if got := binary.BigEndian.Uint16(out[40:]); got != want {
			t.Errorf("keep=%v: UDP checksum %#04x, want ~fold(d) = %#04x", keep, got, want)
		}
	}

	// A result of 0x0000 is written as 0x0000 (A.7 step 13): the frame's
	// last payload word makes the correct new checksum 0.
	in := specLBv4(append(specLB(2, 1, 0, 1, 10), specPayload(30)...))
	outSeg := func(body []byte) []uint16 { // the words of the output's UDP checksum
		ws := []uint16{0x0a01, 0x0203, 0xaabb, 0xccdd, 17, uint16(8 + len(body) - 16)}
		ws = append(ws, 50000, 0x4557, uint16(8+len(body)-16), 0)
		return specWords(ws, body[16:])
	}
	b := in.Body
	b[len(b)-2], b[len(b)-1] = 0, 0
	s := specFoldSum(outSeg(b))
	binary.BigEndian.PutUint16(b[len(b)-2:], ^s) // sum becomes 0xffff: checksum 0
	frame := in.build(t)
	out := r.sent(frame, "TxQueue")
	if got := binary.BigEndian.Uint16(out[40:]); got != 0 {
		t.Errorf("UDP checksum %#04x, want 0x0000 (lb-2025 writes a zero result)", got)
	}
	if !specChecksumOK(outSeg(b)) {
		t.Error("test frame chosen badly")
	}
}

// specTruncations runs every prefix of frame: shorter than hdrEnd (the
// bytes the parser consumes) it is a parse failure; from hdrEnd on the
// remainder is cut and the output is the full frame's output cut by as
// much.
func specTruncations(t *testing.T, r *specRig, name string, frame []byte, hdrEnd int, sink, failReason string) {
	t.Helper()
	full := r.sent(frame, sink)
	for n := 0; n < len(frame); n++ {
		o := r.run(frame[:n])
		if n < hdrEnd {
			if o.drop != failReason {
				t.Errorf("%s cut to %d bytes: %v, want %q", name, n, o, failReason)
			}
			continue
		}
		want := full[:len(full)-(len(frame)-n)]
		if o.sink != sink || !bytes.Equal(o.data, want) {
			t.Errorf("%s cut to %d bytes: %v, want %x", name, n, o, want)
		}
	}
}

// specARP is an ARP request from 10.1.2.2 / specPeerMAC for tpa.
func specARP(t *testing.T, ethDst net.HardwareAddr, tpa net.IP, pad int) []byte {
	b := specSerialize(t,
		&layers.Ethernet{DstMAC: ethDst, SrcMAC: specPeerMAC, EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: layers.ARPRequest, SourceHwAddress: specMAC("00:11:22:33:44:56"), SourceProtAddress: specSrc0v4,
			DstHwAddress: make([]byte, 6), DstProtAddress: tpa.To4()})
	return append(b, make([]byte, pad)...)
}

// specARPReply is the reply the spec describes (A.6.1, 2026 §6.1): to the
// request's Ethernet source (not sha), sha and spa ours, tha and tpa the
// requester's, the remainder kept.
func specARPReply(t *testing.T, own net.IP, pad int) []byte {
	b := specSerialize(t,
		&layers.Ethernet{DstMAC: specPeerMAC, SrcMAC: specOwnMAC, EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: layers.ARPReply, SourceHwAddress: specOwnMAC, SourceProtAddress: own.To4(),
			DstHwAddress: specMAC("00:11:22:33:44:56"), DstProtAddress: specSrc0v4})
	return append(b, make([]byte, pad)...)
}

// specEcho4 is A.6.2's / §10's echo request: 10.1.2.2 -> dst, id 33, seq
// 9, data "payload goes here".
func specEcho4(t *testing.T, ethDst net.HardwareAddr, dst net.IP) []byte {
	return specSerialize(t,
		&layers.Ethernet{DstMAC: ethDst, SrcMAC: specPeerMAC, EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, IHL: 5, TTL: 64, Id: 7, Protocol: layers.IPProtocolICMPv4, SrcIP: specSrc0v4, DstIP: dst.To4()},
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 33, Seq: 9},
		gopacket.Payload("payload goes here"))
}

// specEcho6 is an ICMPv6 echo request from src to dst with data whose last
// word makes its checksum csum (0: whatever it is).
func specEcho6(t *testing.T, ethDst net.HardwareAddr, src, dst net.IP, csum uint16) []byte {
	data := append([]byte("ping six data..."), 0, 0)
	if csum != 0 {
		ws := specWords(specWords(nil, src), dst)
		ws = append(ws, 0, uint16(8+len(data)), 58, 0x8000, 0, 0x1234, 5)
		specFix(data, ws, csum)
	}
	ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolICMPv6, SrcIP: src, DstIP: dst}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)}
	if err := ic.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	return specSerialize(t,
		&layers.Ethernet{DstMAC: ethDst, SrcMAC: specPeerMAC, EthernetType: layers.EthernetTypeIPv6},
		ip, ic, &layers.ICMPv6Echo{Identifier: 0x1234, SeqNumber: 5}, gopacket.Payload(data))
}

// specNS is a neighbor solicitation for target from src (:: for DAD)
// with the given options (payload length from them).
func specNS(t *testing.T, src, target net.IP, opts layers.ICMPv6Options) []byte {
	dst := append(net.ParseIP("ff02::1:ff00:0"), nil...)
	copy(dst[13:], target[13:])
	ethDst := net.HardwareAddr{0x33, 0x33, 0xff, target[13], target[14], target[15]}
	ip := &layers.IPv6{Version: 6, HopLimit: 255, NextHeader: layers.IPProtocolICMPv6, SrcIP: src, DstIP: dst}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(135, 0)}
	if err := ic.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	return specSerialize(t,
		&layers.Ethernet{DstMAC: ethDst, SrcMAC: specPeerMAC, EthernetType: layers.EthernetTypeIPv6},
		ip, ic, &layers.ICMPv6NeighborSolicitation{TargetAddress: target, Options: opts})
}

// specNA is the advertisement the spec describes (A.6.4, 2026 §6.5): 86
// bytes, hop limit 255, payload length 32, R=0, O=0, S as given, one
// target link-layer option with our MAC, checksum computed by gopacket.
func specNA(t *testing.T, ethDst net.HardwareAddr, own, dst net.IP, solicited bool) []byte {
	ip := &layers.IPv6{Version: 6, HopLimit: 255, NextHeader: layers.IPProtocolICMPv6, SrcIP: own, DstIP: dst}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(136, 0)}
	if err := ic.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	var flags uint8
	if solicited {
		flags = 0x40
	}
	return specSerialize(t,
		&layers.Ethernet{DstMAC: ethDst, SrcMAC: specOwnMAC, EthernetType: layers.EthernetTypeIPv6},
		ip, ic, &layers.ICMPv6NeighborAdvertisement{Flags: flags, TargetAddress: own,
			Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptTargetAddress, Data: specOwnMAC}}})
}

var specSrcLLA = layers.ICMPv6Options{{Type: layers.ICMPv6OptSourceAddress, Data: specMAC("00:11:22:33:44:57")}}

// TestLB2025Responders: A.6's examples and frames.
func TestLB2025Responders(t *testing.T) {
	r := specRig25(t)
	specResponders(t, r, "lb-2025")

	// A.6.1: tpa != IP_SA after a T2 hit (an entry for 10.1.2.5 with
	// IP_SA 10.1.2.3).
	r = specRig25(t, "table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0806 0x0a010205 => 0x0a010203 0 0")
	r.dropped(specARP(t, specBroadcast, net.ParseIP("10.1.2.5"), 0), "rx_rslt[4] ARP tpa != own")
	// A.6.2: an ICMP echo to an address of T2 that is not IP_SA.
	r = specRig25(t, "table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 0x0a0102ff => 0x0a010203 0 0")
	r.dropped(specEcho4(t, specBroadcast, net.ParseIP("10.1.2.255")), "rx_rslt[5] ICMPv4 echo dst != own")
}

var specBroadcast = specMAC("ff:ff:ff:ff:ff:ff")

// specResponders runs the responder examples both versions share (the
// 2025 spec's B.2: the same bytes for the same configuration).
func specResponders(t *testing.T, r *specRig, version string) {
	okARP, okEcho4, okEcho6, okNS := "rx_rslt[8] ARP ok", "rx_rslt[9] ICMPv4 echo ok", "rx_rslt[10] ICMPv6 echo ok", "rx_rslt[11] NS ok"
	ipMiss, nsMiss := "rx_rslt[3] IP dst miss", "rx_rslt[7] NS target != own"
	fail := specFail25
	if version == "lb-2026" {
		okARP, okEcho4, okEcho6, okNS = "l3_arp_ok", "l3_icmpv4_echo_ok", "l3_icmpv6_echo_ok", "l3_ipv6nd_neigh_sol_ok"
		ipMiss, nsMiss = "l2_iface_drop_badip_counter", "l3_ipv6nd_neigh_sol_target_nomatch"
		fail = specFail26
	}
	counted := func(o specOut, c string) {
		t.Helper()
		if o.counts[c] != 1 {
			t.Errorf("counter %q not counted: %v", c, o.counts)
		}
	}

	// ARP request for 10.1.2.3 (LB 0) and 10.1.2.4 (LB 1), 42 bytes and
	// padded to 60: the reply has the request's length.
	for _, c := range []struct {
		own net.IP
		pad int
	}{{specLB0v4, 0}, {specLB1v4, 0}, {specLB0v4, 18}} {
		req := specARP(t, specBroadcast, c.own, c.pad)
		out := r.sent(req, "TxQueue")
		specDiff(t, "ARP reply", out, specARPReply(t, c.own, c.pad))
		p := specDecode(t, out)
		if a := p.Layer(layers.LayerTypeARP).(*layers.ARP); a.Operation != layers.ARPReply {
			t.Errorf("ARP operation %d", a.Operation)
		}
		counted(r.run(req), okARP)
	}
	specTruncations(t, r, "ARP", specARP(t, specBroadcast, specLB0v4, 0), 42, "TxQueue", fail)
	// Not for us: 10.1.2.99 is in no T2 entry.
	r.dropped(specARP(t, specBroadcast, net.ParseIP("10.1.2.99"), 0), ipMiss)
	// An ARP reply is a parse failure.
	rep := specARP(t, specOwnMAC, specLB0v4, 0)
	rep[21] = 2
	r.dropped(rep, fail)
	// Other hardware/protocol values too.
	for _, off := range []int{15, 17, 18, 19} {
		b := specARP(t, specBroadcast, specLB0v4, 0)
		b[off] ^= 0x40
		r.dropped(b, fail)
	}

	// ICMPv4 echo: request checksum 0x82c8 -> reply 0x8ac8, the IPv4 header
	// as received apart from the address swap.
	req := specEcho4(t, specOwnMAC, specLB0v4)
	if c := binary.BigEndian.Uint16(req[36:]); c != 0x82c8 {
		t.Fatalf("echo request checksum %#04x, the spec's is 0x82c8", c)
	}
	out := r.sent(req, "TxQueue")
	want := bytes.Clone(req)
	copy(want[0:], specPeerMAC)
	copy(want[6:], specOwnMAC)
	copy(want[26:], specLB0v4)
	copy(want[30:], specSrc0v4)
	want[34] = 0
	binary.BigEndian.PutUint16(want[36:], 0x8ac8)
	specDiff(t, "echo reply", out, want)
	p := specCheckIP(t, out)
	if ic := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ic.TypeCode != layers.CreateICMPv4TypeCode(0, 0) || ic.Id != 33 || ic.Seq != 9 {
		t.Errorf("echo reply %v", ic)
	}
	counted(r.run(req), okEcho4)
	specTruncations(t, r, "ICMPv4 echo", req, 42, "TxQueue", fail)
	// A destination in no T2 entry.
	r.dropped(specEcho4(t, specOwnMAC, net.ParseIP("10.1.2.77")), ipMiss)

	// ICMPv6 echo to our unicast address: 0x7efc -> 0x7dfc (A.6.3).
	req = specEcho6(t, specOwnMAC, specSrc0v6, specLB0v6, 0x7efc)
	out = r.sent(req, "TxQueue")
	want = bytes.Clone(req)
	copy(want[0:], specPeerMAC)
	copy(want[6:], specOwnMAC)
	copy(want[22:], specLB0v6)
	copy(want[38:], specSrc0v6)
	want[54] = 129
	binary.BigEndian.PutUint16(want[56:], 0x7dfc)
	specDiff(t, "ICMPv6 echo reply", out, want)
	specCheckIP(t, out)
	counted(r.run(req), okEcho6)
	specTruncations(t, r, "ICMPv6 echo", req, 62, "TxQueue", fail)
	// To ff02::1 (in T2 for LB 0): answered from the unicast address, the
	// checksum right for the new pseudo-header.
	req = specEcho6(t, specMAC("33:33:00:00:00:01"), specSrc0v6, specAllNode, 0)
	out = r.sent(req, "TxQueue")
	p = specCheckIP(t, out)
	if ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6); !ip.SrcIP.Equal(specLB0v6) || !ip.DstIP.Equal(specSrc0v6) || ip.HopLimit != 64 {
		t.Errorf("echo reply from %v to %v hop limit %d", ip.SrcIP, ip.DstIP, ip.HopLimit)
	}
	if ic := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6); ic.TypeCode.Type() != 129 {
		t.Errorf("ICMPv6 type %d", ic.TypeCode.Type())
	}
	// An echo request with code 1, and an echo reply, are parse failures.
	b := specEcho6(t, specOwnMAC, specSrc0v6, specLB0v6, 0)
	b[55] = 1
	r.dropped(b, fail)
	b[54], b[55] = 129, 0
	r.dropped(b, fail)

	// NS -> NA, from fe80::1 with a source link-layer option: to fe80::1
	// and the option's MAC, S=1, checksum 0xeca4.
	req = specNS(t, specSrc0v6, specLB0v6, specSrcLLA)
	out = r.sent(req, "TxQueue")
	if len(out) != 86 {
		t.Errorf("NA is %d bytes, want 86", len(out))
	}
	if c := binary.BigEndian.Uint16(out[56:]); c != 0xeca4 {
		t.Errorf("NA checksum %#04x, want 0xeca4", c)
	}
	if f := binary.BigEndian.Uint32(out[58:]); f != 0x40000000 {
		t.Errorf("NA flags %#08x, want 0x40000000", f)
	}
	specDiff(t, "NA", out, specNA(t, specMAC("00:11:22:33:44:57"), specLB0v6, specSrc0v6, true))
	p = specCheckIP(t, out)
	if na, ok := p.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement); !ok || !na.TargetAddress.Equal(specLB0v6) || !na.Solicited() || na.Override() || na.Router() {
		t.Errorf("NA %+v", p.Layer(layers.LayerTypeICMPv6NeighborAdvertisement))
	}
	counted(r.run(req), okNS)
	specTruncations(t, r, "NS", req, 86, "TxQueue", fail)
	// From :: (payload length 24, no option): to ff02::1 and
	// 33:33:00:00:00:01, S=0, checksum 0x2c23.
	req = specNS(t, net.IPv6unspecified, specLB0v6, nil)
	out = r.sent(req, "TxQueue")
	if c := binary.BigEndian.Uint16(out[56:]); c != 0x2c23 {
		t.Errorf("NA checksum %#04x, want 0x2c23", c)
	}
	if f := binary.BigEndian.Uint32(out[58:]); f != 0 {
		t.Errorf("NA flags %#08x, want 0", f)
	}
	specDiff(t, "NA to all nodes", out, specNA(t, specMAC("33:33:00:00:00:01"), specLB0v6, specAllNode, false))
	specTruncations(t, r, "NS from ::", req, 78, "TxQueue", fail)
	// No option from a unicast source: the request's Ethernet source.
	req = specNS(t, specSrc0v6, specLB0v6, nil)
	specDiff(t, "NA without option", r.sent(req, "TxQueue"), specNA(t, specPeerMAC, specLB0v6, specSrc0v6, true))
	// A first option that is not type 1 (a nonce, 8 bytes): its first 2
	// bytes are parsed, the other 6 follow the NA as remainder.
	nonce := layers.ICMPv6Options{{Type: 14, Data: []byte{1, 2, 3, 4, 5, 6}}}
	req = specNS(t, specSrc0v6, specLB0v6, nonce)
	want = append(specNA(t, specPeerMAC, specLB0v6, specSrc0v6, true), 1, 2, 3, 4, 5, 6)
	specDiff(t, "NA after a nonce option", r.sent(req, "TxQueue"), want)
	// Trailing bytes after a 24-byte NS (payload length 24) are remainder.
	req = append(specNS(t, net.IPv6unspecified, specLB0v6, nil), 9, 8, 7, 6)
	want = append(specNA(t, specMAC("33:33:00:00:00:01"), specLB0v6, specAllNode, false), 9, 8, 7, 6)
	specDiff(t, "NA with trailing bytes", r.sent(req, "TxQueue"), want)
	// For LB 1's address, from its solicited-node group.
	req = specNS(t, specSrc1v6, specLB1v6, specSrcLLA)
	specDiff(t, "NA of LB 1", r.sent(req, "TxQueue"), specNA(t, specMAC("00:11:22:33:44:57"), specLB1v6, specSrc1v6, true))
	// A target that is not IP_SA: an NS for LB 1's address sent to LB 0's
	// solicited-node group.
	req = specNS(t, specSrc0v6, specLB1v6, specSrcLLA)
	copy(req[14+24+13:], specLB0v6[13:])
	copy(req[3:], specLB0v6[13:])
	r.dropped(req, nsMiss)
}

// TestLB2025Drops: the crafted bad frames and the misses of A.5 and A.7.
func TestLB2025Drops(t *testing.T) {
	r := specRig25(t)
	pay := specPayload(20)
	good := specLBv4(append(specLB(2, 1, 0, 1, 10), pay...))
	frame := good.build(t)

	// Truncated at every length: the parser consumes 58 bytes.
	specTruncations(t, r, "LB v4", frame, 58, "TxQueue", specFail25)
	specTruncations(t, r, "LB v6", specLBv6(append(specLB(3, 1, 0xfffa, 1, 10), pay...)).build(t), 78, "TxQueue", specFail25)

	mod := func(f func(b []byte)) []byte {
		b := bytes.Clone(frame)
		f(b)
		return b
	}
	r.dropped(mod(func(b []byte) { b[42] = 0x4d }), specFail25)        // magic 0x4d42
	r.dropped(mod(func(b []byte) { b[43] = 0x43 }), specFail25)        // magic 0x4c43
	r.dropped(mod(func(b []byte) { b[44] = 1 }), specFail25)           // LB version 1
	r.dropped(mod(func(b []byte) { b[44] = 4 }), specFail25)           // LB version 4
	r.dropped(mod(func(b []byte) { b[14] = 0x65 }), specFail25)        // IP version 6 in an IPv4 header
	r.dropped(mod(func(b []byte) { b[14] = 0x44 }), specFail25)        // IHL 4
	r.dropped(mod(func(b []byte) { b[14] = 0x4f }), specFail25)        // options past the frame
	r.dropped(mod(func(b []byte) { b[23] = 6 }), specFail25)           // TCP
	r.dropped(mod(func(b []byte) { b[12], b[13] = 8, 1 }), specFail25) // an unknown EtherType
	for _, port := range []uint16{0, 53, 16383, 32768, 50000, 65535} {
		f := good
		f.DPort = port
		r.dropped(f.build(t), specFail25)
	}
	// VLAN-tagged, LLDP and LACP frames do not parse in lb-2025.
	tagged := good
	tagged.VLAN = 5
	r.dropped(tagged.build(t), specFail25)
	lldp := append([]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x88, 0xcc, 0x02, 0x07}, make([]byte, 44)...)
	r.dropped(lldp, specFail25)
	lacp := append([]byte{0x01, 0x80, 0xc2, 0, 0, 0x02, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x88, 0x09, 0x01, 0x01}, make([]byte, 44)...)
	r.dropped(lacp, specFail25)
	// IPv6 extension headers (here hop-by-hop) do not parse.
	v6 := specLBv6(append(specLB(2, 1, 0, 1, 10), pay...)).build(t)
	v6[20] = 0
	r.dropped(v6, specFail25)

	// T1 and T2 misses.
	f := good
	f.EthDst = specMAC("00:aa:bb:cc:dd:ef")
	o := r.dropped(f.build(t), "rx_rslt[1] MAC miss")
	if o.counts["packet_rx_counter"] != 1 {
		t.Errorf("packet_rx_counter not counted: %v", o.counts)
	}
	f = good
	f.Dst = net.ParseIP("10.1.2.5").To4()
	r.dropped(f.build(t), "rx_rslt[3] IP dst miss")
	// A sender allowed for LB 1 is blocked at LB 0, and an unknown one.
	for _, src := range []net.IP{specSrc1v4, net.ParseIP("192.0.2.1").To4()} {
		f = good
		f.Src = src
		r.dropped(f.build(t), "lb_ctx_drop_blocked_src_pkt_counter")
	}
	f6 := specLBv6(append(specLB(2, 1, 0, 1, 10), pay...))
	f6.Src = specSrc1v6
	r.dropped(f6.build(t), "lb_ctx_drop_blocked_src_pkt_counter")
	// Calendar miss: tick 11 -> slot (0x000b ^ 0xffff) & 7 = 4, not in LB 0's
	// calendar; LB 1's tick 20 -> epoch 1, slot 20.
	f = specLBv4(append(specLB(2, 1, 0, 1, 11), pay...))
	r.dropped(f.build(t), "lb_ctx_drop_lb_calendar_miss_pkt_counter")
	f = specLBv4(append(specLB(2, 1, 0, 1, 20), pay...))
	f.Src, f.Dst = specSrc1v4, specLB1v4
	r.dropped(f.build(t), "lb_ctx_drop_lb_calendar_miss_pkt_counter")

	// Epoch miss: the reference configuration's /0 entries catch every
	// tick, so without them tick 32 finds no epoch.
	re := newSpecRig(t, "lb-2025", specScriptWithout(t, "lb-2025", "0x0/0"))
	f = specLBv4(append(specLB(2, 1, 0, 1, 32), pay...))
	re.dropped(f.build(t), "lb_ctx_drop_epoch_assign_miss_pkt_counter")
	re.sent(specLBv4(append(specLB(2, 1, 0, 1, 20), pay...)).build(t), "TxQueue") // epoch 1, slot 3

	// Member miss: a slot that points at member 7, which T7 lacks.
	rm := specRig25(t, "table_add load_balance_calendar_table do_assign_member 0 0 4 => 7")
	rm.dropped(specLBv4(append(specLB(2, 1, 0, 1, 11), pay...)).build(t), "lb_ctx_drop_mbr_info_miss_pkt_counter")
}

// TestLB2025DropEntries: a hit on an entry whose action is `drop` sets the
// drop flag; the packet goes on with the state the entry left (zeros),
// counting, and is never sent (A.5).
func TestLB2025DropEntries(t *testing.T) {
	pay := specPayload(20)
	good := specLBv4(append(specLB(2, 1, 0, 1, 10), pay...))
	for _, c := range []struct {
		name  string
		extra []string
		frame specUDP
		drop  string
	}{
		{"T1", []string{"table_add mac_dst_filter_table drop 0&&&0 0x00aabbccddef => 0"},
			func() specUDP { f := good; f.EthDst = specMAC("00:aa:bb:cc:dd:ef"); return f }(), "drop flag"},
		// T2's drop leaves IP_SA 0 and LB_ID 0: LB 0's tables go on.
		{"T2", []string{"table_add ip_dst_filter_table drop 0&&&0 0x0800 0x0a010205 => 0"},
			func() specUDP { f := good; f.Dst = net.ParseIP("10.1.2.5").To4(); return f }(), "drop flag"},
		{"T3", []string{"table_add ipv4_src_filter_table drop 0 0x0a010263 =>"},
			func() specUDP { f := good; f.Src = net.ParseIP("10.1.2.99").To4(); return f }(), "drop flag"},
		// T5's drop leaves epoch 0 and slot_bits 0: slot 0, which LB 0's
		// calendar lacks...
		{"T5 slot 0 missing", []string{"table_add epoch_assign_table drop 0 0x2000000000000000/4 => 0"},
			specLBv4(append(specLB(2, 1, 0, 1, 0x2000000000000005), pay...)), "lb_ctx_drop_lb_calendar_miss_pkt_counter"},
		// ...and with slot 0 in the calendar the packet reaches T7.
		{"T5", []string{"table_add epoch_assign_table drop 0 0x2000000000000000/4 => 0", "table_add load_balance_calendar_table do_assign_member 0 0 0 => 0"},
			specLBv4(append(specLB(2, 1, 0, 1, 0x2000000000000005), pay...)), "drop flag"},
		// T6's drop leaves member 0; tick 11 is slot 4.
		{"T6", []string{"table_add load_balance_calendar_table drop 0 0 4 =>"},
			specLBv4(append(specLB(2, 1, 0, 1, 11), pay...)), "drop flag"},
		{"T7", []string{"table_add load_balance_calendar_table do_assign_member 0 0 4 => 5", "table_add member_info_lookup_table drop 0 0x0800 5 =>"},
			specLBv4(append(specLB(2, 1, 0, 1, 11), pay...)), "drop flag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := specRig25(t, c.extra...)
			o := r.dropped(c.frame.build(t), c.drop)
			if c.drop == "drop flag" && o.counts["lb_mbr_tx_pkt_counter"] != 1 {
				t.Errorf("the member tx counter counts a dropped packet too: %v", o.counts)
			}
		})
	}
	// A responder after a T1 drop hit: the ARP reply is not sent.
	r := specRig25(t, "table_add mac_dst_filter_table drop 0&&&0 0x00aabbccddef => 0")
	o := r.dropped(specARP(t, specMAC("00:aa:bb:cc:dd:ef"), specLB0v4, 0), "drop flag")
	if o.counts["rx_rslt[8] ARP ok"] != 1 {
		t.Errorf("counts %v", o.counts)
	}
}

// TestLB2025Selects: calendar slot and port selection (A.7 steps 6, 11).
func TestLB2025Selects(t *testing.T) { specSelects(t, "lb-2025") }

// specSelects checks the slot and port arithmetic of both versions: the
// 2026 spec's v3 examples on the reference configuration, then slot_bits
// and port_bits 0, 3, 9, 16 and more against the spec's formulas, each
// slot made the only calendar entry of a test epoch so that a wrong slot
// misses.
func specSelects(t *testing.T, version string) {
	// §10: v3 slot_select 21 -> (0x0015 ^ 0xffff) & 7 = 2; 99 -> 4.
	r := newSpecRig(t, version, specScript(t, version,
		"table_add load_balance_calendar_table do_assign_member 0 0 2 => 2",
		"table_add load_balance_calendar_table do_assign_member 0 0 4 => 4",
		"table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 2 => 0x0a0000000002 0xaabbccdd 17750 4 0",
		"table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 4 => 0x0a0000000004 0xaabbccdd 17750 4 0"))
	for sel, member := range map[uint16]byte{21: 2, 99: 4, 0xfffa: 0} {
		out := r.sent(specLBv4(append(specLB(3, 1, sel, 1, 5), specPayload(8)...)).build(t), "TxQueue")
		want := specMAC("0a:00:00:00:00:02")
		want[5] = member
		if member == 0 {
			want = specMbr0MAC
		}
		if !bytes.Equal(out[:6], want) {
			t.Errorf("slot_select %d: sent to %x, want %x", sel, out[:6], want)
		}
	}

	mask := func(bits int) uint16 {
		if bits >= 16 {
			return 0xffff
		}
		return uint16(1)<<bits - 1
	}
	for _, c := range []struct {
		bits int
		xor  uint16
		sel  uint16
		v2   bool
	}{
		{0, 0, 0x1234, false}, {0, 0xffff, 0xffff, true}, {3, 0xffff, 21, false}, {3, 0x0005, 0x7777, true},
		{9, 0, 0x0bcd, false}, {9, 0x0f0f, 0xffff, true}, {15, 0x8001, 0xffff, false},
		{16, 0x1234, 0xabcd, false}, {16, 0, 0xfedc, true}, {20, 0x00ff, 0x1111, false}, {31, 0xffff, 0x0001, true},
	} {
		slot := (c.sel ^ c.xor) & mask(c.bits)
		r := newSpecRig(t, version, specScript(t, version,
			fmt.Sprintf("table_add epoch_assign_table do_assign_epoch_with_slot_sel_opts 0 0x3000000000000000/4 => 77 %d %#x 0", c.bits, c.xor),
			fmt.Sprintf("table_add load_balance_calendar_table do_assign_member 0 77 %d => 9", slot),
			"table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 9 => 0x0a0000000009 0xaabbccdd 17750 4 0"))
		tick := uint64(0x3000000000000000)
		body := specLB(3, 1, c.sel, 1, tick)
		if c.v2 {
			tick |= uint64(c.sel)
			body = specLB(2, 1, 0xffff, 1, tick) // v2: the tick's low 16 bits; rsvd ignored
		}
		name := fmt.Sprintf("bits %d xor %#x select %#x v2 %v: slot %d", c.bits, c.xor, c.sel, c.v2, slot)
		o := r.run(specLBv4(append(body, specPayload(8)...)).build(t))
		if o.sink != "TxQueue" || !bytes.Equal(o.data[:6], specMAC("0a:00:00:00:00:09")) {
			t.Errorf("%s: %v", name, o)
		}
	}
	// do_assign_epoch: 9 bits, xor 0.
	r = newSpecRig(t, version, specScript(t, version,
		"table_add epoch_assign_table do_assign_epoch 0 0x3000000000000000/4 => 77 0",
		"table_add load_balance_calendar_table do_assign_member 0 77 0x1cd => 9",
		"table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 9 => 0x0a0000000009 0xaabbccdd 17750 4 0"))
	r.sent(specLBv4(append(specLB(2, 1, 0, 1, 0x300000000000abcd), specPayload(8)...)).build(t), "TxQueue")

	// Port: udp_base + (select & ((1 << port_bits) - 1)) mod 2^16.
	for _, c := range []struct {
		bits      int
		base, sel uint16
	}{
		{0, 0x4c42, 0xffff}, {4, 0x4556, 0x1237}, {9, 0x1000, 0xffff}, {16, 0xfff0, 0x0020}, {20, 0x0001, 0xffff}, {31, 0x8000, 0x8000},
	} {
		r := newSpecRig(t, version, specScript(t, version,
			fmt.Sprintf("table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 4 => 0x0a0000000004 0xaabbccdd %#x %d 0", c.base, c.bits),
			"table_add load_balance_calendar_table do_assign_member 0 0 4 => 4"))
		want := c.base + c.sel&mask(c.bits)
		for _, v2 := range []bool{true, false} {
			body := specLB(3, 1, 99, c.sel, 5) // slot 4
			if v2 {
				body = specLB(2, 1, 0, c.sel, 11) // slot 4
			}
			out := r.sent(specLBv4(append(body, specPayload(8)...)).build(t), "TxQueue")
			if got := binary.BigEndian.Uint16(out[36:]); got != want {
				t.Errorf("port bits %d base %#x select %#x v2 %v: port %#x, want %#x", c.bits, c.base, c.sel, v2, got, want)
			}
			specCheckIP(t, out)
		}
	}
}

// specCsumCase is how a test frame's received checksums are spoiled:
// XORed with ip and udp, or set to them.
type specCsumCase struct {
	set     bool
	ip, udp uint16
}

// specCsumCases: right, wrong by an XOR, set to 0xffff, set to 0.
var specCsumCases = []specCsumCase{{}, {false, 0x0100, 0x0001}, {false, 0xffff, 0x8000}, {false, 0x1234, 0xfffe},
	{true, 0xffff, 0xffff}, {true, 0, 0}}

func (c specCsumCase) spoil(b []byte, v uint16) {
	if !c.set {
		v ^= binary.BigEndian.Uint16(b)
	}
	binary.BigEndian.PutUint16(b, v)
}

// specCsumFrame is an LB frame of the checksum tests, for LB 0 (header
// stripped) or LB 1 (kept).
type specCsumFrame struct {
	name string
	in   specUDP
	keep bool
}

// specCsumFrames: IPv4 and IPv6, v2 and v3, stripped and kept.
func specCsumFrames() []specCsumFrame {
	return []specCsumFrame{
		{"v4 strip", specLBv4(append(specLB(2, 1, 0, 1, 10), specPayload(33)...)), false},
		{"v4 keep", func() specUDP {
			f := specLBv4(append(specLB(3, 1, 10, 7, 10), specPayload(10)...))
			f.Src, f.Dst = specSrc1v4, specLB1v4
			return f
		}(), true},
		{"v6 strip", specLBv6(append(specLB(3, 1, 0xfffa, 0x8003, 10), specPayload(21)...)), false},
		{"v6 keep", func() specUDP {
			f := specLBv6(append(specLB(2, 1, 0, 7, 10), specPayload(10)...))
			f.Src, f.Dst = specSrc1v6, specLB1v6
			return f
		}(), true},
	}
}

// send builds the frame with its received checksums spoiled as errs says
// and returns it, what the LB sent, whether it is IPv4, and the UDP
// header's offset.
func (c specCsumFrame) send(t *testing.T, r *specRig, errs specCsumCase) (frame, out []byte, v4 bool, udpOff int) {
	frame = c.in.build(t)
	v4 = c.in.Src.To4() != nil
	udpOff = 14 + 40
	if v4 {
		udpOff = 14 + 20
		errs.spoil(frame[24:], errs.ip)
	}
	errs.spoil(frame[udpOff+6:], errs.udp)
	return frame, r.sent(frame, "TxQueue"), v4, udpOff
}

// TestLB2025ChecksumArithmetic: with wrong received checksums the error
// carries into the output (A.7: lb-2025 never verifies), exactly as the
// spec's deltas say: hdrChecksum = apply(h, d_ip), udp.checksum =
// apply(u, d_udp), computed here from the spec's operand lists.
func TestLB2025ChecksumArithmetic(t *testing.T) {
	r := specRig25(t)
	for _, c := range specCsumFrames() {
		for _, errs := range specCsumCases {
			frame, out, v4, udpOff := c.send(t, r, errs)

			own, mbr, port := specLB0v4, specMbr0v4, uint16(0x4556+(binary.BigEndian.Uint16(c.in.Body[6:])&0xf))
			if !v4 {
				own, mbr = specLB0v6, specMbrv6
			}
			if c.keep {
				own, mbr, port = specLB1v4, specMbr1v4, 0x4c42
				if !v4 {
					own, mbr = specLB1v6, specMbrv6
				}
			}
			var d specDelta
			d.swap(c.in.Src, own) // step 4
			d.swap(c.in.Dst, mbr) // step 10
			lenOff := 16          // totalLen, or payloadLen
			if !v4 {
				lenOff = 18
			}
			l := binary.BigEndian.Uint16(frame[lenOff:])
			if !c.keep {
				d.swap(specBE16(l), specBE16(l-16))
			}
			if v4 {
				if got, want := binary.BigEndian.Uint16(out[24:]), specApply(binary.BigEndian.Uint16(frame[24:]), d.fold()); got != want {
					t.Errorf("%s, received checksums %+v: hdrChecksum %#04x, want %#04x", c.name, errs, got, want)
				}
			}
			d.swap(frame[udpOff+2:udpOff+4], specBE16(port)) // step 11
			u := binary.BigEndian.Uint16(frame[udpOff+4:])
			if !c.keep { // step 12
				d.sub(frame[udpOff+8 : udpOff+24])
				d.swap(specBE16(u), specBE16(u-16))
			}
			if got, want := binary.BigEndian.Uint16(out[udpOff+6:]), specApply(binary.BigEndian.Uint16(frame[udpOff+6:]), d.fold()); got != want {
				t.Errorf("%s, received checksums %+v: UDP checksum %#04x, want %#04x", c.name, errs, got, want)
			}
			if errs == (specCsumCase{}) {
				specCheckIP(t, out)
			}
		}
	}
}

// TestLB2025ParserICMP: lb-2025 parses ICMPv4 echo requests only (A.2
// step 4).
func TestLB2025ParserICMP(t *testing.T) {
	r := specRig25(t)
	for _, tc := range [][2]uint8{{0, 0}, {3, 3}, {8, 1}, {11, 0}} {
		b := specEcho4(t, specOwnMAC, specLB0v4)
		b[34], b[35] = tc[0], tc[1]
		r.dropped(b, specFail25)
	}
}
