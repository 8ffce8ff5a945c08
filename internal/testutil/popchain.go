package testutil

import (
	"math/rand/v2"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// PopChainCorpus is the seed frames of backends/flow/testdata/popchain.nsc:
// UDP/IPv4 to each of the eight ports that pick its pop chains, with and
// without a VLAN tag, with a UDP checksum and with zero.
func PopChainCorpus(t testing.TB) [][]byte {
	rnd := rand.New(rand.NewPCG(8, 9))
	var seeds [][]byte
	for dport := range layers.UDPPort(8) {
		for _, vlan := range []bool{false, true} {
			for _, csum := range []bool{true, false} {
				ip := IPv4(layers.IPProtocolUDP)
				u := &layers.UDP{SrcPort: 4000, DstPort: 1000 + dport}
				u.SetNetworkLayerForChecksum(ip)
				payload := make(gopacket.Payload, 8+rnd.IntN(40))
				for i := range payload {
					payload[i] = byte(rnd.UintN(256))
				}
				ls := []gopacket.SerializableLayer{Eth(layers.EthernetTypeIPv4), ip, u, payload}
				if vlan {
					ls = []gopacket.SerializableLayer{Eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 7, Type: layers.EthernetTypeIPv4}, ip, u, payload}
				}
				f := Serialize(t, ls...)
				if !csum { // a zero UDP checksum
					f[len(f)-len(payload)-2], f[len(f)-len(payload)-1] = 0, 0
				}
				seeds = append(seeds, f)
			}
		}
	}
	return seeds
}

// PopChainNodes are the nodes of popchain.nsc the corpus must reach.
var PopChainNodes = []string{"Pop2", "PopVLAN", "GonePopUDP", "RevPop1", "PopIPv4"}
