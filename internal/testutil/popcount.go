package testutil

import (
	"bytes"
	"os"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/sim"
)

// PopCountCorpus is the seed frames of backends/flow/testdata/popcount.nsc:
// UDP over IPv4 and IPv6 whose addresses are words of no ones, all ones,
// ones up to each bit boundary that matters (7, 8, 31, 32, 63, 64, 127),
// and alternating bits; payload lengths give UDP lengths with trailing
// ones.
func PopCountCorpus(t testing.TB) [][]byte {
	ones := func(n int) []byte { // n trailing ones in 16 bytes
		b := make([]byte, 16)
		for i := range n {
			b[15-i/8] |= 1 << (i % 8)
		}
		return b
	}
	var words [][]byte
	for _, n := range []int{0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 127, 128} {
		words = append(words, ones(n))
	}
	words = append(words, bytes.Repeat([]byte{0xaa}, 16), bytes.Repeat([]byte{0x55}, 16))
	var frames [][]byte
	for i, w := range words {
		v4 := IPv4(layers.IPProtocolUDP)
		v4.SrcIP, v4.DstIP = w[8:12], w[12:16]
		u := &layers.UDP{SrcPort: 1, DstPort: 2}
		u.SetNetworkLayerForChecksum(v4)
		frames = append(frames, Serialize(t, Eth(layers.EthernetTypeIPv4), v4, u, gopacket.Payload(make([]byte, i*5))))
		v6 := IPv6(layers.IPProtocolUDP)
		v6.SrcIP, v6.DstIP = w, words[(i+3)%len(words)]
		u6 := &layers.UDP{SrcPort: 1, DstPort: 2}
		u6.SetNetworkLayerForChecksum(v6)
		frames = append(frames, Serialize(t, Eth(layers.EthernetTypeIPv6), v6, u6, gopacket.Payload(make([]byte, 7+i*8))))
	}
	return append(frames, Serialize(t, Eth(layers.EthernetTypeIPv4), IPv4(layers.IPProtocolTCP), gopacket.Payload(make([]byte, 20))))
}

// PopCount loads PopCountRx (backends/flow/testdata/popcount.nsc, read
// from a backend's test directory) and its frames: PopCountCorpus and
// 5,000 derived from it.
func PopCount(t testing.TB) (*lang.Model, *dataflow.Graph, [][]byte) {
	t.Helper()
	src, err := os.ReadFile("../flow/testdata/popcount.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := ModelSource(t, string(src))
	g, _ := m.Graph("PopCountRx")
	seeds := PopCountCorpus(t)
	return m, g, append(seeds, difftest.Mutate(seeds, 5000, 7)...)
}

// PopCountRan fails t unless frames took each of PopCountRx's paths: the
// 64-bit word, the 128-bit one, out, and the drop of few ones.
func PopCountRan(t testing.TB, c sim.Counters) {
	t.Helper()
	for _, n := range []string{"Word", "Wide", "Out", "Few"} {
		if c.Nodes[n] == 0 {
			t.Errorf("no frame ran through %s", n)
		}
	}
}
