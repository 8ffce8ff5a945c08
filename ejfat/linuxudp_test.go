package ejfat

import (
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/packet"
)

// TestLinuxUDPEmbedding embeds every LB version on the linux-udp PRG: what
// the kernel does (Ethernet, IP and UDP parsing and checks, the UDP port,
// everything that is not UDP: ARP, ICMP, ND) is pruned; the LB header
// check, the table lookups and the rewrite that chooses the destination
// stay in software.
func TestLinuxUDPEmbedding(t *testing.T) {
	kernel := map[string]bool{"ethernet": true, "ipv4": true, "ipv6": true, "udp": true}
	lbHeader := func(h string) bool { return strings.HasPrefix(h, "lb") }
	for _, v := range Versions {
		t.Run(v, func(t *testing.T) {
			m, lpg, err := LPG(v)
			if err != nil {
				t.Fatal(err)
			}
			prg, _ := m.Graph("LinuxUDP")
			em, err := embed.Embed(lpg, prg)
			if err != nil {
				t.Fatal(err)
			}
			place := func(n *dataflow.Node) embed.Placement {
				p, ok := em.Placement(n.Name)
				if !ok {
					t.Fatalf("no placement for %s", n.Name)
				}
				return p
			}
			var pruned, kept, lookups int
			for _, n := range lpg.Nodes {
				if n.Kind != dataflow.FNode {
					continue
				}
				switch op := n.Op; {
				case op.Kind == packet.OpExtract && kernel[m.Schema.Headers[op.Header].Name]:
					if p := place(n); p.Kind != embed.Pruned {
						t.Errorf("%s (extract %s) is %v: %s; the kernel parsed it", n.Name, m.Schema.Headers[op.Header].Name, p.Kind, p.Reason)
					}
					pruned++
				case op.Kind == packet.OpExtract && !lbHeader(m.Schema.Headers[op.Header].Name) && m.Schema.Headers[op.Header].Name != "ipv4_base":
					if p := place(n); p.Kind != embed.Pruned {
						t.Errorf("%s (extract %s) is %v: the kernel delivers only UDP", n.Name, m.Schema.Headers[op.Header].Name, p.Kind)
					}
					pruned++
				case op.Kind == packet.OpExtract:
					if p := place(n); p.Kind != embed.Software && m.Schema.Headers[op.Header].Name != "ipv4_base" {
						t.Errorf("%s (extract %s) is %v; the LB header is the LB's to check", n.Name, m.Schema.Headers[op.Header].Name, p.Kind)
					}
					kept++
				case op.Kind == packet.OpLookup:
					if p := place(n); p.Kind != embed.Software {
						t.Errorf("%s (lookup %s) is %v", n.Name, m.Schema.Tables[op.Table].Spec.Name, p.Kind)
					}
					lookups++
				}
			}
			if pruned < 4 || kept == 0 || lookups < 4 {
				t.Errorf("pruned %d extracts, kept %d LB extracts, %d lookups", pruned, kept, lookups)
			}
		})
	}
}
