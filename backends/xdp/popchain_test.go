package xdp_test

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// TestPopChainsAgainstInterpreter: chains of pops (adjacent in either
// order, apart, and a pop of the header whose checksum a pop just patched)
// in the kernel against the interpreter.
func TestPopChainsAgainstInterpreter(t *testing.T) {
	src, err := os.ReadFile("testdata/popchain.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.ModelSource(t, string(src))
	g, _ := m.Graph("PopChain")
	r, mach := pair(t, m, g, "")
	rnd := rand.New(rand.NewPCG(8, 9))
	var seeds [][]byte
	for dport := range layers.UDPPort(8) {
		for _, vlan := range []bool{false, true} {
			for _, csum := range []bool{true, false} {
				ip := testutil.IPv4(layers.IPProtocolUDP)
				u := &layers.UDP{SrcPort: 4000, DstPort: 1000 + dport}
				u.SetNetworkLayerForChecksum(ip)
				payload := make(gopacket.Payload, 8+rnd.IntN(40))
				for i := range payload {
					payload[i] = byte(rnd.UintN(256))
				}
				ls := []gopacket.SerializableLayer{testutil.Eth(layers.EthernetTypeIPv4), ip, u, payload}
				if vlan {
					ls = []gopacket.SerializableLayer{testutil.Eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 7, Type: layers.EthernetTypeIPv4}, ip, u, payload}
				}
				f := testutil.Serialize(t, ls...)
				if !csum { // a zero UDP checksum
					f[len(f)-len(payload)-2], f[len(f)-len(payload)-1] = 0, 0
				}
				seeds = append(seeds, f)
			}
		}
	}
	where := xdptest.Compare(t, r, mach, append(seeds, difftest.Mutate(seeds, 20000, 3)...))
	for _, node := range []string{"Pop2", "PopVLAN", "GonePopUDP", "RevPop1"} {
		if mach.Counters().Nodes[node] == 0 {
			t.Errorf("no frame ran %s: %v", node, where)
		}
	}
}
