package xdp_test

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
)

// loadOps loads testdata/ops.nsc.
func loadOps(t testing.TB) *lang.Model {
	t.Helper()
	src, err := os.ReadFile("testdata/ops.nsc")
	if err != nil {
		t.Fatal(err)
	}
	return testutil.ModelSource(t, string(src))
}

// pair builds graph g's XDP program, loads it with the entries of a table
// script (none if ""), and makes the interpreter on g with the same.
func pair(t *testing.T, m *lang.Model, g *dataflow.Graph, script string) (*xdp.Runner, *sim.Machine) {
	t.Helper()
	xdptest.Require(t)
	obj, _ := xdptest.Build(t, g, nil, t.TempDir(), g.Name)
	r, err := xdp.Load(obj)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	var raw []byte
	if script != "" {
		if raw, err = os.ReadFile(script); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := r.Tables(script, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTables(ts); err != nil {
		t.Fatal(err)
	}
	its, err := packet.LoadTables(m.Schema, script, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	mach, err := sim.New(g, its)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: the verifier processed %d instructions", g.Name, r.VerifiedInsns)
	return r, mach
}

// opsFrames are frames that take OpsRx's paths: UDP over IPv4 (with and
// without options, to the table entries' addresses and ports), over VLAN,
// over IPv6, ICMPv6 echo requests, ICMP, TCP, ARP.
func opsFrames(t testing.TB) [][]byte {
	frames := testutil.UDPCorpus(t)
	rnd := rand.New(rand.NewPCG(5, 6))
	payload := func(n int) gopacket.Payload {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.UintN(256))
		}
		return b
	}
	for _, dst := range [][]byte{{10, 1, 2, 3}, {10, 9, 9, 9}, {192, 0, 2, 7}, {192, 168, 0, 1}} {
		for _, sport := range []layers.UDPPort{53, 4000, 1500} {
			for _, dport := range []layers.UDPPort{7, 53, 4000} {
				ip := testutil.IPv4(layers.IPProtocolUDP)
				ip.DstIP, ip.SrcIP = dst, []byte{192, 168, 0, 1}
				if sport == 1500 {
					ip.SrcIP = []byte{10, 0, 0, 5}
					ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
				}
				u := &layers.UDP{SrcPort: sport, DstPort: dport}
				u.SetNetworkLayerForChecksum(ip)
				frames = append(frames, testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), ip, u, payload(int(dport%50))))
			}
		}
	}
	for _, src := range []string{"fe80::1", "2001:db8::5"} {
		for _, dst := range []string{"2001:db8::1", "fe80::2", "ff02::1"} {
			ip := testutil.IPv6(layers.IPProtocolUDP)
			ip.SrcIP, ip.DstIP = mustIP(src), mustIP(dst)
			u := &layers.UDP{SrcPort: 4000, DstPort: 53}
			u.SetNetworkLayerForChecksum(ip)
			frames = append(frames, testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv6), ip, u, payload(20)))
			ip6 := testutil.IPv6(layers.IPProtocolICMPv6)
			ip6.SrcIP, ip6.DstIP = mustIP(src), mustIP(dst)
			ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)}
			ic.SetNetworkLayerForChecksum(ip6)
			frames = append(frames, testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv6), ip6, ic, &layers.ICMPv6Echo{Identifier: 7, SeqNumber: 9}, payload(12)))
		}
	}
	for _, p := range []layers.IPProtocol{layers.IPProtocolICMPv4, layers.IPProtocolTCP, 99} {
		frames = append(frames, testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), testutil.IPv4(p), payload(30)))
	}
	frames = append(frames, testutil.Serialize(t, testutil.Eth(layers.EthernetTypeARP), &layers.ARP{AddrType: 1, Protocol: 0x800, HwAddressSize: 6, ProtAddressSize: 4, Operation: 1,
		SourceHwAddress: make([]byte, 6), SourceProtAddress: make([]byte, 4), DstHwAddress: make([]byte, 6), DstProtAddress: make([]byte, 4)}))
	return frames
}

func mustIP(s string) net.IP { return net.ParseIP(s) }

// TestOpsRxAgainstInterpreter: OpsRx (every operation and expression form
// the backend compiles) in the kernel against the interpreter, on crafted
// frames and 20,000 derived ones.
func TestOpsRxAgainstInterpreter(t *testing.T) {
	m := loadOps(t)
	g, _ := m.Graph("OpsRx")
	r, mach := pair(t, m, g, "testdata/ops.tables")
	seeds := opsFrames(t)
	where := xdptest.Compare(t, r, mach, append(seeds, difftest.Mutate(seeds, 20000, 1)...))
	t.Logf("%d crafted + 20000 derived frames: %v", len(seeds), where)
	c := mach.Counters()
	for _, n := range []string{"Wire", "PopV4", "Vlan", "Rewrite", "Fiddle", "Recompute", "Echo6Pop", "Echo6Set", "PopVlan", "V6UdpSum", "NotA", "Never"} {
		if c.Nodes[n] == 0 {
			t.Errorf("no frame ran through %s", n)
		}
	}
	for _, site := range []sim.DropKey{{Node: "Wire", Reason: "undecided"}, {Node: "Out.lost", Reason: "unconnected"}, {Node: "Wire", Reason: "malformed"}} {
		if c.Drops[site] == 0 {
			t.Errorf("no frame ended at %v", site)
		}
	}
}

// TestOpsTxAgainstInterpreter: OpsTx pushes three headers in front of a
// payload and computes their checksums.
func TestOpsTxAgainstInterpreter(t *testing.T) {
	m := loadOps(t)
	g, _ := m.Graph("OpsTx")
	r, mach := pair(t, m, g, "")
	rnd := rand.New(rand.NewPCG(9, 9))
	var payloads [][]byte
	for n := 14; n < 600; n += 1 + rnd.IntN(7) {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rnd.UintN(256))
		}
		payloads = append(payloads, p)
	}
	where := xdptest.Compare(t, r, mach, payloads)
	if where["sink TxQueue"] != len(payloads) {
		t.Errorf("not every payload was sent: %v", where)
	}
}

// TestUDPIPv4 compiles the shipped UDP/IPv4 stack's receive path (its
// first source; steers are XDP_PASS) and holds it to the interpreter.
func TestUDPIPv4(t *testing.T) {
	m := testutil.Model(t, "inet/udp.nsc")
	g, _ := m.Graph("UDPIPv4")
	r, mach := pair(t, m, g, "")
	seeds := testutil.UDPCorpus(t)
	where := xdptest.Compare(t, r, mach, append(seeds, difftest.Mutate(seeds, 10000, 2)...))
	t.Logf("%v", where)
}
