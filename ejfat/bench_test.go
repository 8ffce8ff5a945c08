package ejfat

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

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
// The XDP program and the Go fast path also forward the same packet with
// a payload making it a 1,518-byte frame (MTU 1500) and a 9,018-byte one
// (EJFAT's MTU 9000 and a VLAN tag's room: xdp-9018, generated-9018).
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

	b.Run("xdp", func(b *testing.B) { benchXDP(b, script, frame, want) })
	b.Run("generated", func(b *testing.B) { benchGenerated(b, script, frame, want) })
	for _, size := range []int{1518, 9018} {
		payload := append(gplA7Payload(), make([]byte, size-len(frame))...)
		for i := len(gplA7Payload()); i < len(payload); i++ {
			payload[i] = byte(i)
		}
		big := gplFrame(b, false, gplA7LB(), payload)
		if len(big) != size {
			b.Fatalf("a %d-byte frame, want %d", len(big), size)
		}
		bigWant, drop := newGopacketLB(b).Forward(big)
		if drop != "" {
			b.Fatal(drop)
		}
		bigWant = bytes.Clone(bigWant)
		b.Run(fmt.Sprintf("xdp-%d", size), func(b *testing.B) { benchXDP(b, script, big, bigWant) })
		b.Run(fmt.Sprintf("generated-%d", size), func(b *testing.B) { benchGenerated(b, script, big, bigWant) })
	}
	// The same with an epoch table as a control plane fills it: six more
	// instances' tick ranges as prefixes (446 entries, indexed by
	// intervals; the reference's four are scanned inline).
	epochs, err := os.ReadFile("testdata/lb-2025-epochs.tables")
	if err != nil {
		b.Fatal(err)
	}
	withEpochs := append(bytes.Clone(script), epochs...)
	b.Run("generated+epochs", func(b *testing.B) { benchGenerated(b, withEpochs, frame, want) })
	b.Run("xdp+epochs", func(b *testing.B) { benchXDP(b, withEpochs, frame, want) })
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

// benchGenerated runs the generated lb-2025 fast path on frame with the
// entries of script; every pass must forward it as want.
func benchGenerated(b *testing.B, script, frame, want []byte) {
	ts, err := lbfast.Tables("lb-2025", "lb-2025.tables", bytes.NewReader(script))
	if err != nil {
		b.Fatal(err)
	}
	pl, err := lbfast.New("lb-2025", ts)
	if err != nil {
		b.Fatal(err)
	}
	// A batch of buffers, as a receive path fills them (nsc lb's
	// recvmmsg batch), restored before each pass: processing a frame
	// right after copying it in would measure the copy's stores still
	// in flight (a 4-byte load across two of memmove's wide stores
	// stalls), which no receive path has. ns/op is per packet without
	// the restoring, measured alone, as for XDP. The LB writes only the
	// headers and moves the bytes in front of the ones it pops, within the
	// first 64 bytes: those are put back (as xdpRestoreC does), so that a
	// jumbo frame's restoring costs what a short one's does.
	bufs := make([][]byte, 64)
	restore := func() {
		for i := range bufs {
			copy(bufs[i][packet.Headroom:], frame[:min(len(frame), 64)])
		}
	}
	for i := range bufs {
		bufs[i] = make([]byte, 2*packet.Headroom+len(frame))
		copy(bufs[i][packet.Headroom:], frame)
	}
	for _, buf := range bufs {
		r := pl.Process(buf, packet.Headroom, len(frame))
		if r.Sink < 0 {
			b.Fatalf("dropped at %v", pl.DropSite(int(r.Drop)))
		}
		if !bytes.Equal(r.Data, want) {
			b.Fatalf("generated %x, gopacket %x", r.Data, want)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == 0 {
			restore()
		}
		if r := pl.Process(bufs[i], packet.Headroom, len(frame)); r.Sink < 0 {
			b.Fatalf("dropped at %v", pl.DropSite(int(r.Drop)))
		}
		if i++; i == len(bufs) {
			i = 0
		}
	}
	gross := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	restore()
	if r := pl.Process(bufs[0], packet.Headroom, len(frame)); !bytes.Equal(r.Data, want) {
		b.Fatalf("after the runs: generated %x, gopacket %x", r.Data, want)
	}
	const passes = 20000
	start := time.Now()
	for range passes {
		restore()
	}
	harness := float64(time.Since(start).Nanoseconds()) / (passes * float64(len(bufs)))
	b.ReportMetric(gross-harness, "ns/op")
	b.ReportMetric(harness, "harness-ns")
}
