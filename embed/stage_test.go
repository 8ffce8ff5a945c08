package embed_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/sim"
)

// stageModel: the LPG looks a member up (its action writes m.ip) and
// rewrites the destination with it; a miss drops. The PRG's egress rules
// do the same lookup and rewrite, for IPv4 only. BETWEEN is spliced in
// between the rewrite and the LPG's exit.
const stageModel = `
include "lib/inet.nsc"
metadata m { ip: 32  flag: 1 }
action to(ip: 32) { m.ip = ip }
action miss() { }
table members {
  key { ipv4.src: exact }
  actions { to, miss }
  default miss
  size 64
}
lpg L {
  node TxIn { op input parse ethernet  port out -> IsIPv4 }
  node IsIPv4 { op test valid(ipv4)  port true -> Member  port false -> TxQueue }
  node Member { op lookup members  port to -> Rewrite  port miss -> Miss }
  node Miss { op drop "member miss" }
  node Rewrite { op set { ipv4.dst = m.ip } update ipv4  port out -> BETWEEN }
  node TxQueue { op emit }
}
prg P {
  node TxQueue [software] { op input  port out -> Match }
  node Match [hardware] { op test valid(ipv4) && ipv4.ihl == 5  port true -> Member  port false -> Out }
  node Member [hardware, rule] { op lookup members  port to -> Rewrite  port miss -> Drop }
  node Drop [hardware] { op drop "member miss (NIC)" }
  node Rewrite [hardware, rule] { op set { ipv4.dst = m.ip } update ipv4  port out -> Out }
  node Out [hardware] { op emit }
}`

// stageEmbed embeds L into P with between (a node Between, its ports to
// TxQueue) after the rewrite, or none.
func stageEmbed(t *testing.T, between string) *embed.Embedding {
	t.Helper()
	src := strings.Replace(stageModel, "BETWEEN", "TxQueue", 1)
	if between != "" {
		src = strings.Replace(stageModel, "BETWEEN", "Between", 1)
		src = strings.Replace(src, "node TxQueue { op emit }", "node Between { "+between+" }\n  node TxQueue { op emit }", 1)
	}
	return embedString(t, src, "L", "P")
}

// A lookup and the rewrite its action feeds move together, with the test
// before them and the miss's drop, behind the guard the NIC's match
// leaves (not IPv4, or IPv4 options: software). The rules are installed.
func TestLookupAndRewriteMoveTogether(t *testing.T) {
	em := stageEmbed(t, "")
	for node, hw := range map[string]string{"IsIPv4": "Member, Rewrite", "Member": "Member", "Rewrite": "Rewrite", "Miss": "Member, Rewrite"} {
		p := place(t, em, node)
		if p.Kind != embed.Split || p.Hardware != hw || p.Guard != "not(valid(ipv4)) or (ipv4.ihl != 5 and valid(ipv4))" || !strings.Contains(p.Reason, "with stage IsIPv4..Rewrite (4 nodes)") {
			t.Errorf("%s: %+v", node, p)
		}
	}
	if p := place(t, em, "Member"); !strings.Contains(p.Counterexample, "ipv4.ihl=") {
		t.Errorf("counterexample: %q", p.Counterexample)
	}
	// The rules are installed: the embedded graph has them.
	for _, n := range []string{"Member", "Rewrite", "IsIPv4Guard"} {
		if em.Graph.Node(n) == nil {
			t.Errorf("no %s in the embedded graph", n)
		}
	}
	if _, err := sim.New(em.Graph, nil); err != nil {
		t.Fatal(err)
	}
}

// A node left between the stage and the NIC that reads what the stage
// writes, or writes what it reads, keeps the stage in software; the
// rules not installed leave the embedded graph, with the drop only they
// led to.
func TestStageDependencies(t *testing.T) {
	for between, want := range map[string]string{
		"op checksum verify ipv4  port true -> TxQueue  port false -> TxQueue": "Between reads ipv4.dst, which Rewrite writes, before the hardware (Rewrite) does",
		"op set { m.ip = 7 }  port out -> TxQueue":                             "Between writes m.ip after Rewrite reads it: the hardware (Rewrite) would read the new value",
	} {
		em := stageEmbed(t, between)
		p := place(t, em, "Rewrite")
		if p.Kind != embed.Software || !strings.Contains(p.Reason, want) {
			t.Errorf("%s: Rewrite %+v, want %q", between, p, want)
		}
		if em.Graph.Node("Rewrite@lpg") == nil || em.Graph.Node("Rewrite") != nil || em.Graph.Node("Drop") != nil {
			t.Errorf("%s: the LPG's rewrite must stay and the NIC's rule go", between)
		}
	}
}

// lb-2025 on the ConnectX-6 Dx with its egress rules: the member lookup
// stays (the port computation after it reads what its action writes); the
// LB header's pop with its UDP checksum and length patches, the Ethernet
// rewrite and the IPv4 rewrites move to the NIC's rules, IPv6 stays in
// software behind the guard.
func TestLB2025OnFlowNIC(t *testing.T) {
	em := testutil.Embedding(t, "LB2025", "CX6DxLB", "ejfat/cx6dx-lb.nsc")
	if p := place(t, em, "LbMember"); p.Kind != embed.Software || p.Reason != "stage LbMember..LbMemberMiss (2 nodes): LbPort reads meta.udp_base, which LbMember writes, before the hardware (TxMember) does" {
		t.Errorf("LbMember: %+v", p)
	}
	const popGuard = "ethernet.type != 2048 or (ethernet.type == 2048 and meta.keep_lb == 1)"
	for node, hw := range map[string]string{"LbPopV2Body": "TxPopV2", "LbPopV3Body": "TxPopV3", "LbPopCommon": "TxPopCommon", "LbUdpLen": "TxUdpLen"} {
		if p := place(t, em, node); p.Kind != embed.Split || p.Hardware != hw || p.Guard != popGuard || !strings.Contains(p.Reason, "with stage LbKeep..LbUdpLen (6 nodes)") {
			t.Errorf("%s: %+v", node, p)
		}
	}
	for node, hw := range map[string]string{"LbEth": "TxEth", "LbIPv4Keep": "TxV4Keep", "LbIPv4Strip": "TxV4Strip", "LbIPv6Strip": "TxV4Keep, TxV4Strip"} {
		p := place(t, em, node)
		if p.Kind != embed.Split || p.Hardware != hw || p.Guard != "ethernet.type != 2048" || !strings.Contains(p.Counterexample, "ethernet.type=34525") {
			t.Errorf("%s: %+v", node, p)
		}
	}
	if p := place(t, em, "LbPort"); p.Kind != embed.Software {
		t.Errorf("LbPort: %+v", p)
	}
	// The rules of moved stages are installed, the member table's not.
	for n, want := range map[string]bool{"TxPopV2": true, "TxUdpLen": true, "TxEth": true, "TxV4Strip": true, "TxMember": false, "TxMiss": false, "LbKeepGuard": true, "LbIsIPv4Guard": true} {
		if (em.Graph.Node(n) != nil) != want {
			t.Errorf("%s in the embedded graph: %v, want %v", n, !want, want)
		}
	}
}

// The reassembler on the same NIC's receive side: the CQE's L3 and L4
// checks take the IPv4 and UDP checksum verifications away behind the
// sinks that report them.
func TestReassemblerOnCX6Dx(t *testing.T) {
	em := testutil.Embedding(t, "Reassembler", "CX6Dx", "ejfat/reassembler.nsc", "inet/cx6dx.nsc")
	for node, want := range map[string]string{
		"UDPCsum": "runs behind RxOut; unreachable behind RxL3Bad, RxL3Good; always true behind RxL4Good; always false behind RxL4Bad",
		"V4Csum":  "runs behind RxOut; always false behind RxL3Bad; unreachable behind RxL3Good; always true behind RxL4Good, RxL4Bad",
	} {
		if p := place(t, em, node); p.Kind != embed.Software || p.Reason != want {
			t.Errorf("%s: %+v", node, p)
		}
	}
	if diff := serving(em, "RxL4Bad"); !slices.Equal(diff, []string{"Family", "V4Src", "V6Src", "BadUDPCsum"}) {
		t.Errorf("behind RxL4Bad: %v", diff)
	}
}
