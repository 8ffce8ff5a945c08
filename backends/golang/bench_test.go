package golang_test

import (
	"testing"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
)

// BenchmarkUDP runs a valid datagram to an open socket through the UDP/IPv4
// LPG: generated fast path against the interpreter (ns/op is per packet).
func BenchmarkUDP(b *testing.B) {
	pl, m := udpPair(b)
	var frame []byte
	for _, f := range testutil.UDPCorpus(b) {
		if testutil.UDPOracle(f) == "AppDNS" {
			frame = f
			break
		}
	}
	if frame == nil {
		b.Fatal("no DNS datagram in the corpus")
	}
	b.Run("fast", func(b *testing.B) {
		buf := make([]byte, 2*packet.Headroom+len(frame))
		b.ReportAllocs()
		for b.Loop() {
			copy(buf[packet.Headroom:], frame)
			if r := pl.Process(buf, packet.Headroom, len(frame)); r.Sink < 0 {
				b.Fatal("dropped")
			}
		}
	})
	b.Run("interp", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Run(frame, func(_ *dataflow.Node, _ []byte) {})
		}
	})
}
