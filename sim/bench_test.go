package sim_test

import (
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/sim"
)

// BenchmarkInterpreterUDP runs a valid UDP/IPv4 datagram (64 bytes of
// payload) through the UDP/IPv4 LPG: parse, two checksum verifications, a
// demultiplex, delivery to a socket.
func BenchmarkInterpreterUDP(b *testing.B) {
	ip := testutil.IPv4(layers.IPProtocolUDP)
	u := &layers.UDP{SrcPort: 4000, DstPort: 7}
	u.SetNetworkLayerForChecksum(ip)
	frame := testutil.Serialize(b, testutil.Eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload(make([]byte, 64)))
	m, err := sim.New(udpGraph(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	delivered := 0
	emit := func(*dataflow.Node, []byte) { delivered++ }
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		m.Run(frame, emit)
	}
	if delivered == 0 {
		b.Fatal("nothing delivered")
	}
}
