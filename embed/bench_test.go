package embed_test

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
)

// BenchmarkEmbedUDP embeds the UDP/IPv4 stack into the 82599: Rx pruning
// behind five sinks and the Tx offload proofs.
func BenchmarkEmbedUDP(b *testing.B) {
	m := testutil.Model(b, "inet/offload.nsc")
	l, _ := m.Graph("UDPIPv4")
	p, _ := m.Graph("I82599")
	for b.Loop() {
		if _, err := embed.Embed(l, p); err != nil {
			b.Fatal(err)
		}
	}
}

// generated is a model with a 10-sink PRG (the NIC steers on h.sel) and an
// LPG of about nodes nodes: a switch on h.sel into ten chains of tests on
// h.a, each test dropping what fails it.
func generated(nodes int) string {
	var s strings.Builder
	s.WriteString("header h { sel: 8  a: 16  b: 16 }\n")
	s.WriteString("prg P {\n  node Wire [hardware] { op input parse h  port out -> Sel }\n")
	s.WriteString("  node Sel [hardware] { op switch h.sel {")
	for k := range 9 {
		fmt.Fprintf(&s, " %d -> s%d,", k, k)
	}
	s.WriteString(" default -> s9 }")
	for k := range 10 {
		fmt.Fprintf(&s, "  port s%d -> Sink%d", k, k)
	}
	s.WriteString(" }\n")
	for k := range 10 {
		fmt.Fprintf(&s, "  node Sink%d [software] { op emit }\n", k)
	}
	s.WriteString("}\nlpg L {\n  node RxQueue { op input  port out -> Parse }\n")
	s.WriteString("  node Parse { op parse h  port true -> Sel  port false -> Bad }\n  node Bad { op drop }\n")
	s.WriteString("  node Sel { op switch h.sel {")
	for k := range 9 {
		fmt.Fprintf(&s, " %d -> c%d,", k, k)
	}
	s.WriteString(" default -> c9 }")
	for k := range 10 {
		fmt.Fprintf(&s, "  port c%d -> T%d_0", k, k)
	}
	s.WriteString(" }\n")
	per := nodes / 10 / 2
	for k := range 10 {
		for i := range per {
			next := fmt.Sprintf("T%d_%d", k, i+1)
			if i == per-1 {
				next = fmt.Sprintf("Sock%d", k)
			}
			fmt.Fprintf(&s, "  node T%d_%d { op test h.a > %d && h.b != %d  port true -> %s  port false -> D%d_%d }\n", k, i, i, k, next, k, i)
			fmt.Fprintf(&s, "  node D%d_%d { op drop }\n", k, i)
		}
		fmt.Fprintf(&s, "  node Sock%d { op steer queue %d }\n", k, k)
	}
	s.WriteString("}\n")
	return s.String()
}

func BenchmarkEmbedGenerated5000(b *testing.B) {
	src := generated(5000)
	m := testutil.ModelSource(b, src)
	l, _ := m.Graph("L")
	p, _ := m.Graph("P")
	b.ReportMetric(float64(len(l.Nodes)), "lpg-nodes")
	for b.Loop() {
		em, err := embed.Embed(l, p)
		if err != nil {
			b.Fatal(err)
		}
		// Behind each sink only its own chain survives.
		if n := len(em.Graph.Nodes); n > len(l.Nodes)+len(p.Nodes)+10 {
			b.Fatalf("embedded graph has %d nodes; pruning left too much", n)
		}
	}
}

func benchEmbed(b *testing.B, lpg, prg string, files ...string) {
	benchModel(b, testutil.Model(b, files...), lpg, prg)
}

func benchModel(b *testing.B, m *lang.Model, lpg, prg string) {
	l, _ := m.Graph(lpg)
	p, _ := m.Graph(prg)
	for b.Loop() {
		if _, err := embed.Embed(l, p); err != nil {
			b.Fatal(err)
		}
	}
}

// lb-2026 into the ConnectX-6 Dx (receive checks behind five sinks, the
// stage search on the transmit side), next to its baseline: the same LPG
// into a host with no offloads (one sink, no stage to try).
// The NIC's file takes UDP from lib/inet.nsc, the LB its own: the NIC
// here is the same text over lb-2026's headers.
func BenchmarkEmbedLB2026CX6Dx(b *testing.B) {
	src, err := fs.ReadFile(models.FS, "inet/cx6dx.nsc")
	if err != nil {
		b.Fatal(err)
	}
	nic := strings.Replace(string(src), `include "../lib/inet.nsc"`, "", 1)
	ld := lang.Loader{Library: models.FS, ReadFile: func(name string) ([]byte, error) {
		if name == "cx6dx.nsc" {
			return []byte(nic), nil
		}
		return os.ReadFile(name)
	}}
	m, err := ld.Load("../models/ejfat/lb-2026.nsc", "cx6dx.nsc")
	if err != nil {
		b.Fatal(err)
	}
	benchModel(b, m, "LB2026", "CX6Dx")
}

// lb-2025 into the NIC with its egress rules: the multi-node stages and
// their proofs.
func BenchmarkEmbedLB2025FlowNIC(b *testing.B) {
	benchEmbed(b, "LB2025", "CX6DxLB", "ejfat/cx6dx-lb.nsc")
}

// lb-2026 into every PRG its model holds: the host, the kernel's UDP
// sockets, the XDP hook and the P4 targets, whole and split with the host.
func BenchmarkEmbedLB2026(b *testing.B) {
	m := testutil.Model(b, "ejfat/lb-2026.nsc")
	for _, p := range []string{"HostRaw", "LinuxUDP", "XDP", "XDPSmall", "U280", "BMv2", "BMv2Small"} {
		b.Run(p, func(b *testing.B) { benchModel(b, m, "LB2026", p) })
	}
}
