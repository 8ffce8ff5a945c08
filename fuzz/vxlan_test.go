package fuzz

import (
	"net"
	"os"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
	"github.com/dragonet-go/nsc/verify"
)

// vxlanFrames are three VXLAN frames and five that are not, each with the
// outcome the model calls for, stated here from the VXLAN RFC (7348) and
// the model's text, not from nsc.
func vxlanFrames(t *testing.T) (frames [][]byte, want []string) {
	inner := serialize(t, &layers.Ethernet{SrcMAC: mac(0xa), DstMAC: mac(0xb), EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, IHL: 5, TTL: 9, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{192, 168, 0, 1}, DstIP: net.IP{192, 168, 0, 2}},
		gopacket.Payload("inner payload"))
	outer := func(dport layers.UDPPort, vx *layers.VXLAN, payload []byte) []byte {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
		udp := &layers.UDP{SrcPort: 49152, DstPort: dport}
		_ = udp.SetNetworkLayerForChecksum(ip)
		ls := []gopacket.SerializableLayer{&layers.Ethernet{SrcMAC: mac(1), DstMAC: mac(2), EthernetType: layers.EthernetTypeIPv4}, ip, udp}
		if vx != nil {
			ls = append(ls, vx)
		}
		return serialize(t, append(ls, gopacket.Payload(payload))...)
	}
	for vni := uint32(1); vni <= 3; vni++ {
		frames = append(frames, outer(4789, &layers.VXLAN{ValidIDFlag: true, VNI: vni}, inner))
		want = append(want, "sink TxQueue")
	}
	badCsum := outer(4789, &layers.VXLAN{ValidIDFlag: true, VNI: 4}, inner)
	badCsum[24] ^= 0xff // the outer IPv4 checksum
	icmp := serialize(t, &layers.Ethernet{SrcMAC: mac(1), DstMAC: mac(2), EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}},
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0)})
	full := outer(4789, &layers.VXLAN{ValidIDFlag: true, VNI: 5}, nil)
	frames = append(frames,
		outer(4790, &layers.VXLAN{ValidIDFlag: true, VNI: 1}, inner),  // another UDP port
		outer(4789, &layers.VXLAN{ValidIDFlag: false, VNI: 1}, inner), // I flag clear
		icmp,
		badCsum,
		full[:14+20+8+4], // the VXLAN header cut short: the parse fails
	)
	want = append(want, "drop NotVXLAN: not VXLAN", "drop NotVXLAN: not VXLAN", "drop NotVXLAN: not VXLAN",
		"drop BadCsum: bad IPv4 checksum", "drop RxQueue: malformed")
	return frames, want
}

func mac(b byte) net.HardwareAddr { return net.HardwareAddr{2, 0, 0, 0, 0, b} }

func serialize(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func vxlanModel(t *testing.T) (lpg *dataflow.Graph, em *embed.Embedding) {
	src, err := os.ReadFile("testdata/vxlan.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(Model{Name: "vxlan", Source: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	lpg, _ = m.Graph("VXLANDecap")
	prg, _ := m.Graph("XDP")
	if em, err = embed.Embed(lpg, prg); err != nil {
		t.Fatal(err)
	}
	return lpg, em
}

// TestVXLANEveryTarget: the interpreter on the LPG alone does what the
// frames call for, the generated Go does the same byte for byte, and so
// does the XDP program in the kernel (as root with clang).
func TestVXLANEveryTarget(t *testing.T) {
	lpg, em := vxlanModel(t)
	frames, want := vxlanFrames(t)
	m, err := sim.New(lpg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if got := Interp(m, f).Where; got != want[i] {
			t.Errorf("frame %d: the interpreter says %s, want %s", i, got, want[i])
		}
	}
	diffs, refused, err := RunGo(t.TempDir(), []GoCase{{Name: "vxlan", Graph: lpg, Frames: frames}})
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) > 0 {
		t.Fatalf("go refused: %v", refused)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	if why := xdpUnavailable(); why != "" {
		t.Skipf("xdp: %s", why)
	}
	diffs, refused, err = RunXDP(t.TempDir(), []XDPCase{{Name: "vxlan", Graph: em.Graph, Limits: em.PRG.Limits, Frames: frames}})
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) > 0 {
		t.Fatalf("xdp refused: %v", refused)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	// The XDP side is held to the interpreter on the embedded graph; that
	// graph must do what the LPG alone does.
	me, err := sim.New(em.Graph, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		lp, eg := Interp(m, f), Interp(me, f)
		if lp.Data != eg.Data || (lp.Where == "sink TxQueue") != (eg.Where == "sink TxWire") {
			t.Errorf("frame %d: LPG alone %s, embedded in XDP %s", i, lp, eg)
		}
	}
}

// TestVerifyCatchesLostJoin: with the entry's parse dropped at the join
// (as nsc did before), verify's own packets, entering where the wire
// enters, show the difference; with the parse kept, none.
func TestVerifyCatchesLostJoin(t *testing.T) {
	_, em := vxlanModel(t)
	run := func() int {
		res, err := verify.Run(em, verify.Generate(em, 2000, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Mismatches)
	}
	if n := run(); n != 0 {
		t.Fatalf("%d mismatches with the join keeping the parse", n)
	}
	var kept *dataflow.Node
	for _, n := range em.Graph.Nodes {
		if em.Origin[n.Name].LPG == "RxQueue" {
			kept = n
		}
	}
	if kept == nil || kept.Op.Kind != packet.OpInput || kept.Op.Header < 0 {
		t.Fatalf("the entry's parse is not kept behind RxFrames: %+v", kept)
	}
	kept.Op = &packet.Op{Kind: packet.OpNop, Header: -1, After: -1, Table: -1} // the old join
	if n := run(); n == 0 {
		t.Errorf("verify found no difference with the join's parse dropped")
	} else {
		t.Logf("%d of 2000 packets differ with the join's parse dropped", n)
	}
}

func embedOf(l, p *dataflow.Graph) (*embed.Embedding, error) { return embed.Embed(l, p) }
