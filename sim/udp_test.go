package sim_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
)

func udpGraph(t testing.TB) *dataflow.Graph { return testutil.Graph(t, "UDPIPv4", "inet/udp.nsc") }

func TestUDPIPv4AgainstGopacket(t *testing.T) {
	g := udpGraph(t)
	m, err := sim.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	frames := testutil.UDPCorpus(t)
	got := map[int]string{}
	want := map[int]string{}
	for i, f := range frames {
		want[i] = testutil.UDPOracle(f)
		var ends []string
		before := m.Counters()
		m.Run(f, func(sink *dataflow.Node, data []byte) { ends = append(ends, sink.Name) })
		after := m.Counters()
		for k, v := range after.Drops {
			if v != before.Drops[k] {
				ends = append(ends, k.Node)
			}
		}
		if len(ends) != 1 {
			t.Errorf("frame %d: ended at %v, want exactly one place", i, ends)
			continue
		}
		got[i] = ends[0]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("interpreter vs gopacket (-gopacket +sim):\n%s", diff)
	}
	// The corpus must exercise every outcome, or the comparison proves little.
	seen := map[string]bool{}
	for _, v := range want {
		seen[v] = true
	}
	for _, w := range []string{"AppEcho", "AppDNS", "RxPortClosed", "RxBadUDPCsum", "RxBadIPv4Csum", "RxNotUDP", "RxNotIPv4", "RxMalformed"} {
		if !seen[w] {
			t.Errorf("no frame in the corpus goes to %s", w)
		}
	}
	t.Log(fmt.Sprintf("%d frames", len(frames)))
}

// The Tx side builds Ethernet/IPv4/UDP around an application's payload;
// gopacket must decode the result with valid lengths and checksums.
func TestUDPIPv4TxAgainstGopacket(t *testing.T) {
	g := udpGraph(t)
	m, err := sim.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 2, 17, 18, 1000} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i*7 + n)
		}
		var out [][]byte
		m.RunAt(g.Node("AppOut"), payload, func(sink *dataflow.Node, data []byte) {
			if sink.Name != "TxQueue" {
				t.Errorf("sent to %s", sink.Name)
			}
			out = append(out, append([]byte(nil), data...))
		})
		if len(out) != 1 {
			t.Fatalf("payload %d: %d frames out", n, len(out))
		}
		p := gopacket.NewPacket(out[0], layers.LayerTypeEthernet, gopacket.Default)
		ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if ip == nil || u == nil {
			t.Fatalf("payload %d: gopacket sees %v", n, p)
		}
		u.SetNetworkLayerForChecksum(ip)
		_, ipRes := ip.VerifyChecksum()
		_, uRes := u.VerifyChecksum()
		got := struct {
			IPLen, UDPLen     int
			IPValid, UDPValid bool
			UDPZero           bool
			Payload           []byte
			Src, Dst          string
			SPort, DPort, TTL int
		}{int(ip.Length), int(u.Length), ipRes.Valid, uRes.Valid, u.Checksum == 0, u.Payload,
			ip.SrcIP.String(), ip.DstIP.String(), int(u.SrcPort), int(u.DstPort), int(ip.TTL)}
		want := got
		want.IPLen, want.UDPLen, want.IPValid, want.UDPValid, want.UDPZero, want.Payload = 28+n, 8+n, true, true, false, payload
		want.Src, want.Dst, want.SPort, want.DPort, want.TTL = "192.0.2.1", "192.0.2.2", 5353, 53, 64
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("payload %d (-want +got):\n%s", n, diff)
		}
	}
}

// With the socket asking for options, the IPv4 header is 24 bytes (IHL 6,
// end-of-list padding) and both checksums still verify.
func TestUDPIPv4TxWithOptions(t *testing.T) {
	g := udpGraph(t)
	m, err := sim.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	sock, _ := g.Schema.Header("sock")
	meta := make([]packet.Value, g.Schema.MetaFields)
	meta[sock.MetaBase] = packet.V(1)
	var out []byte
	m.RunMeta(g.Node("AppOut"), []byte("hello"), meta, func(_ *dataflow.Node, data []byte) { out = append([]byte(nil), data...) })
	p := gopacket.NewPacket(out, layers.LayerTypeEthernet, gopacket.Default)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if ip == nil || u == nil {
		t.Fatalf("gopacket sees %v", p)
	}
	u.SetNetworkLayerForChecksum(ip)
	_, ipRes := ip.VerifyChecksum()
	_, uRes := u.VerifyChecksum()
	if ip.IHL != 6 || ip.Length != 24+8+5 || !ipRes.Valid || !uRes.Valid || string(u.Payload) != "hello" {
		t.Errorf("IHL %d, length %d, checksums %v %v, payload %q", ip.IHL, ip.Length, ipRes.Valid, uRes.Valid, u.Payload)
	}
}
