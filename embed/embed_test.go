package embed_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
)

func place(t *testing.T, em *embed.Embedding, node string) embed.Placement {
	t.Helper()
	p, ok := em.Placement(node)
	if !ok {
		t.Fatalf("no placement for %s", node)
	}
	return p
}

// serving lists the LPG nodes that run behind a sink.
func serving(em *embed.Embedding, sink string) []string {
	var out []string
	for _, p := range em.Placements {
		if slices.Contains(p.Serves, sink) {
			out = append(out, p.Node)
		}
	}
	return out
}

// Seed 003, Tx: the NIC computes the P checksum for P packets, and every
// packet the stack sends is a P packet, so the LPG's TxPCsum goes; without
// the checksum engine it stays.
func TestSeed003Tx(t *testing.T) {
	em := testutil.Embedding(t, "IPStack", "IPNicTx", "dragonet/offload.nsc")
	if p := place(t, em, "TxPCsum"); p.Kind != embed.Hardware || p.Hardware != "TxPCsum" {
		t.Errorf("TxPCsum: %+v", p)
	}
	if em.Graph.Node("TxPCsum@lpg") != nil {
		t.Errorf("the LPG's checksum node is still in the embedded graph")
	}
	plain := testutil.Embedding(t, "IPStack", "IPNicTxPlain", "dragonet/offload.nsc")
	if p := place(t, plain, "TxPCsum"); p.Kind != embed.Software {
		t.Errorf("without the engine, TxPCsum: %+v", p)
	}
	if plain.Graph.Node("TxPCsum") == nil {
		t.Errorf("without the engine the checksum node must stay")
	}
}

// Seed 003, Rx: behind the invalid-checksum sink only the checksum-failed
// node remains; behind the valid one only the demultiplexing to sockets;
// behind the not-P sink the protocol demultiplexer has no P port.
func TestSeed003Rx(t *testing.T) {
	em := testutil.Embedding(t, "IPStack", "IPNicRx", "dragonet/offload.nsc")
	g := em.Graph
	if diff := cmp.Diff([]string{"RxPCsumFailed"}, serving(em, "RxCsumInvalid")); diff != "" {
		t.Errorf("behind RxCsumInvalid (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"RxPCsumFailed"}, targets(g.Node("RxCsumInvalid"))); diff != "" {
		t.Errorf("RxCsumInvalid leads to (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"RxPPort", "RxNoSocket", "AppSockIn1", "AppSockIn2"}, serving(em, "RxCsumValid")); diff != "" {
		t.Errorf("behind RxCsumValid (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"RxPPort"}, targets(g.Node("RxCsumValid"))); diff != "" {
		t.Errorf("RxCsumValid leads to (-want +got):\n%s", diff)
	}
	for _, gone := range []string{"RxPCsum", "RxValid", "RxParse"} {
		if p := place(t, em, gone); p.Kind != embed.Pruned {
			t.Errorf("%s: %+v", gone, p)
		}
	}
	prot := g.Node("RxProt")
	if prot == nil || len(prot.Port("P").Out) != 0 || len(prot.Port("I").Out) == 0 {
		t.Fatalf("RxProt behind RxOut_ must keep I and lose P: %+v", prot)
	}
	if diff := cmp.Diff([]string{"RxOut_"}, place(t, em, "RxProt").Serves); diff != "" {
		t.Errorf("RxProt serves (-want +got):\n%s", diff)
	}
}

func targets(n *dataflow.Node) []string {
	var out []string
	for _, p := range n.Ports {
		for _, e := range p.Out {
			out = append(out, e.To.Name)
		}
	}
	return out
}

// UDP/IPv4 on the 82599: the Rx checksum checks go behind the sinks that
// report them; Tx IPv4 and UDP checksums move to the NIC, the UDP one as a
// split because the NIC does not handle IPv4 options.
func TestUDPOn82599(t *testing.T) {
	em := testutil.Embedding(t, "UDPIPv4", "I82599", "inet/offload.nsc")
	for _, n := range []string{"RxIPv4Csum", "RxUDPCsum", "RxIsIPv4", "RxIsUDP"} {
		if p := place(t, em, n); p.Kind != embed.Pruned {
			t.Errorf("%s: %+v", n, p)
		}
	}
	if diff := cmp.Diff([]string{"RxL4Good"}, place(t, em, "RxDemux").Serves); diff != "" {
		t.Errorf("RxDemux serves (-want +got):\n%s", diff)
	}
	if p := place(t, em, "TxIPv4Csum"); p.Kind != embed.Hardware || p.Hardware != "TxIPCsum" {
		t.Errorf("TxIPv4Csum: %+v", p)
	}
	p := place(t, em, "TxUDPCsum")
	if p.Kind != embed.Split || p.Guard != "ipv4.ihl > 5" || p.Hardware != "TxUDPCsum" || !strings.Contains(p.Counterexample, "ipv4.ihl=6") {
		t.Errorf("TxUDPCsum: %+v", p)
	}
	var report bytes.Buffer
	em.WriteReport(&report)
	if !strings.Contains(report.String(), "TxUDPCsum      split: software when ipv4.ihl > 5, else hardware TxUDPCsum") {
		t.Errorf("report:\n%s", report.String())
	}
}

// TestProgramSinks: behind a P4 pipeline's program sink the LB's nodes are
// placed in the program, not in software; behind a host's sink, in
// software.
func TestProgramSinks(t *testing.T) {
	for prg, want := range map[string]embed.Kind{"U280": embed.Program, "BMv2": embed.Program, "HostRaw": embed.Software} {
		em := testutil.Embedding(t, "LB2025", prg, "ejfat/lb-2025.nsc")
		for _, n := range []string{"RxCount", "L2MacDst", "LbMember", "LbPopCommon"} {
			if p := place(t, em, n); p.Kind != want {
				t.Errorf("%s on %s: %+v, want %s", n, prg, p, want)
			}
		}
	}
	var report bytes.Buffer
	testutil.Embedding(t, "LB2025", "U280", "ejfat/lb-2025.nsc").WriteReport(&report)
	if !strings.Contains(report.String(), "LbMember        program   in the program behind RxPipeline") {
		t.Errorf("report:\n%s", report.String())
	}
}

func TestDifferentModels(t *testing.T) {
	l := testutil.Graph(t, "IPStack", "dragonet/stack.nsc")
	p := testutil.Graph(t, "IPNicRx", "dragonet/nic.nsc")
	if _, err := embed.Embed(l, p); err != embed.ErrDifferentModels {
		t.Errorf("got %v", err)
	}
}

// An AND whose second operand only runs when the first is true does not
// need the first: the embedder drops that operand's edge, and the
// embedded graph still behaves as the LPG (checked on packets in verify).
func TestTrimImpliedOperand(t *testing.T) {
	src := testutil.ImpliedOperand
	em := embedString(t, src, "L", "P")
	var ops []string
	for _, e := range em.Graph.Node("Both").In {
		ops = append(ops, e.From.Node.Name+"."+e.From.Name)
	}
	slices.Sort(ops)
	if diff := cmp.Diff([]string{"B.false", "B.true"}, ops); diff != "" {
		t.Errorf("operands of Both (-want +got):\n%s", diff)
	}
	if p := place(t, em, "Both"); !strings.Contains(p.Reason, "operand A implied") {
		t.Errorf("Both: %+v", p)
	}
}

// The join keeps what the LPG's entry does that the PRG did not: a parse
// stays behind a sink whose PRG path did not parse from the same header
// (XDP hands over raw frames; the 82599 where its own parse failed), and
// goes where it did (the 82599's other sinks);
// a PRG sink that would do something to the frame itself is refused at
// its line.
func TestJoinKeepsTheEntrysParse(t *testing.T) {
	const lpgSrc = `include "lib/inet.nsc"
include "ejfat/xdp.nsc"
include "inet/i82599.nsc"
lpg L {
  node RxQueue { op input parse ethernet  port out -> IsUDP }
  node IsUDP { op test valid(udp)  port true -> Q  port false -> D }
  node Q { op steer queue 1 }
  node D { op drop "not UDP" }
}
prg Dropper {
  node Wire [hardware] { op input  port out -> Sink }
  node Sink [hardware, sink] { op drop "gone" }
}`
	m := testutil.ModelSource(t, lpgSrc)
	l, _ := m.Graph("L")
	for prg, want := range map[string]string{
		"XDP":    "in the program behind RxFrames",
		"I82599": "runs behind RxOut",
	} {
		p, _ := m.Graph(prg)
		em, err := embed.Embed(l, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := place(t, em, "RxQueue"); !strings.Contains(got.Reason, want) {
			t.Errorf("%s: RxQueue %s: %s, want %q", prg, got.Kind, got.Reason, want)
		}
	}
	p, _ := m.Graph("Dropper")
	_, err := embed.Embed(l, p)
	if err == nil || !strings.HasPrefix(err.Error(), "m.nsc:12:") || !strings.Contains(err.Error(), "Rx sink Sink must hand frames over") {
		t.Errorf("a dropping Rx sink: %v", err)
	}
}

// TestUnjoinedLPGRefused: an LPG with neither an RxQueue source nor a
// TxQueue emit (a segmenter fed by an application) meets no PRG: Embed
// refuses at its source's line in the user's file, saying what to name.
// A NIC whose Tx computes the IPv4 checksum of every frame (a plain
// [hardware] node, no rule) would change what a forwarding LPG sends as
// it came: refused, at the NIC's node (found by nsc fuzz, seed 99, model
// 2, with the 82599 among the embeddings).
func TestTxWriteOfEveryFrameRefused(t *testing.T) {
	// A NIC whose Tx checksums every IPv4 and UDP frame (plain hardware,
	// not a rule the embedder installs).
	m := testutil.ModelSource(t, `include "lib/inet.nsc"
prg Always {
  cluster Tx {
    node Queue [software] { op input  port out -> HwIPv4 }
    node HwIPv4 [hardware] { op test valid(ipv4)  port true -> IPCsum  port false -> Out }
    node IPCsum [hardware] { op checksum compute ipv4  port out -> HwUDP }
    node HwUDP [hardware] { op test valid(udp)  port true -> UDPCsum  port false -> Out }
    node UDPCsum [hardware] { op checksum compute udp  port out -> Out }
    node Out [hardware] { op emit }
  }
}
lpg F {
  node RxQueue { op input parse ethernet  port out -> TxQueue }
  node TxQueue { op emit }
}
lpg C {
  node RxQueue { op input parse ethernet  port out -> V4 }
  node V4 { op test valid(ipv4) && valid(udp)  port true -> UDPCsum  port false -> Drop }
  node UDPCsum { op checksum compute udp  port out -> Csum }
  node Csum { op checksum compute ipv4  port out -> TxQueue }
  node Drop { op drop "not UDP over IPv4" }
  node TxQueue { op emit }
}
lpg V {
  node RxQueue { op input parse ethernet  port out -> V4 }
  node V4 { op test valid(ipv4) && valid(udp)  port true -> IPCsum  port false -> Drop }
  node IPCsum { op checksum verify ipv4  port true -> UDPCsum  port false -> Drop }
  node UDPCsum { op checksum verify udp  port true -> TxQueue  port false -> Drop }
  node Drop { op drop "not UDP over IPv4, or a bad checksum" }
  node TxQueue { op emit }
}`)
	p, _ := m.Graph("Always")
	f, _ := m.Graph("F")
	_, err := embed.Embed(f, p)
	if err == nil || !strings.Contains(err.Error(), "m.nsc:") || !strings.Contains(err.Error(), "Tx node TxIPCsum computes the ipv4 checksum of every frame it sees") {
		t.Errorf("a forwarder into a NIC that recomputes every checksum: %v", err)
	}
	// One that computes both on every frame it sends embeds.
	c, _ := m.Graph("C")
	if _, err := embed.Embed(c, p); err != nil {
		t.Errorf("an LPG computing the checksum it sends: %v", err)
	}
	// One that verifies both sends UDP checksums of zero, good as they
	// are (absent), which the hardware would fill in.
	v, _ := m.Graph("V")
	if _, err := embed.Embed(v, p); err == nil || !strings.Contains(err.Error(), "Tx node TxUDPCsum computes the udp checksum of every frame it sees") {
		t.Errorf("an LPG forwarding absent UDP checksums: %v", err)
	}
}

func TestUnjoinedLPGRefused(t *testing.T) {
	m := testutil.ModelSource(t, `include "lib/inet.nsc"
include "ejfat/xdp.nsc"
lpg L {
  node Payload { op input  port out -> Out }
  node Out { op emit }
}`)
	l, _ := m.Graph("L")
	p, _ := m.Graph("XDP")
	_, err := embed.Embed(l, p)
	if err == nil || !strings.HasPrefix(err.Error(), "m.nsc:4:3: lpg L: nothing of it meets prg XDP") ||
		!strings.Contains(err.Error(), "its source Payload") || !strings.Contains(err.Error(), "TxQueue") {
		t.Errorf("an LPG that meets no PRG: %v", err)
	}
}
