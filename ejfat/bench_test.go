package ejfat

import (
	"bytes"
	"os"
	"testing"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/packet"
)

// BenchmarkLB forwards the IPv4 LB v2 packet of ejfat-lb-pipeline-2025.md
// A.7 (LB 0 of the reference configuration, tick 10) four ways: the XDP
// program nsc generates from the lb-2025 model, in the kernel (needs root
// and clang; see benchXDP); the Go fast path nsc generates from it on
// HostRaw; the reference interpreter on the same graph and tables; and a
// hand-written gopacket load balancer (DecodingLayerParser +
// SerializeLayers). All must produce the same frame; ns/op is per packet.
func BenchmarkLB(b *testing.B) {
	frame := gplFrame(b, false, gplA7LB(), gplA7Payload())
	want, drop := newGopacketLB(b).Forward(frame)
	if drop != "" {
		b.Fatal(drop)
	}
	want = bytes.Clone(want)
	script, err := os.ReadFile("testdata/lb-2025.tables")
	if err != nil {
		b.Fatal(err)
	}

	b.Run("xdp", func(b *testing.B) { benchXDP(b, frame, want) })
	b.Run("generated", func(b *testing.B) {
		ts, err := lbfast.Tables("lb-2025", "lb-2025.tables", bytes.NewReader(script))
		if err != nil {
			b.Fatal(err)
		}
		pl, err := lbfast.New("lb-2025", ts)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 2*packet.Headroom+len(frame))
		check := func() []byte {
			copy(buf[packet.Headroom:], frame)
			r := pl.Process(buf, packet.Headroom, len(frame))
			if r.Sink < 0 {
				b.Fatalf("dropped at %v", pl.DropSite(r.Drop))
			}
			return r.Data
		}
		if got := check(); !bytes.Equal(got, want) {
			b.Fatalf("generated %x, gopacket %x", got, want)
		}
		b.ReportAllocs()
		for b.Loop() {
			check()
		}
	})
	b.Run("interpreter", func(b *testing.B) {
		mach, err := Interpreter("lb-2025", HostPRG, "lb-2025.tables", bytes.NewReader(script))
		if err != nil {
			b.Fatal(err)
		}
		var got []byte
		mach.Run(frame, func(_ *dataflow.Node, data []byte) { got = bytes.Clone(data) })
		if !bytes.Equal(got, want) {
			b.Fatalf("interpreter %x, gopacket %x", got, want)
		}
		b.ReportAllocs()
		for b.Loop() {
			mach.Run(frame, func(*dataflow.Node, []byte) {})
		}
	})
	b.Run("gopacket", func(b *testing.B) {
		l := newGopacketLB(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, drop := l.Forward(frame); drop != "" {
				b.Fatal(drop)
			}
		}
	})
}
