package lbfast_test

import (
	"testing"

	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2026host"
)

// Host finds a host part by the device's graph, and names the ones it has
// when it has none.
func TestHostByGraph(t *testing.T) {
	p, err := lbfast.Host("lb-2026", "LB2026@XDPSmall")
	if err != nil || p.Schema != lb2026host.Schema {
		t.Fatalf("lb-2026 on XDPSmall: %v", err)
	}
	if _, err := p.New(nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ v, graph, want string }{
		{"lb-2026", "LB2026@XDP", `no host part of lb-2026 for a device running graph LB2026@XDP (have ["LB2026@BMv2Small" "LB2026@XDPSmall"])`},
		{"lb-2025", "LB2025@XDP", `no host part of lb-2025 for a device running graph LB2025@XDP (have [])`},
		{"lb-1999", "X", `no fast path for LB model "lb-1999" (have lb-2021, lb-2025, lb-2026)`},
	} {
		if _, err := lbfast.Host(c.v, c.graph); err == nil || err.Error() != c.want {
			t.Errorf("Host(%s, %s): %v, want %s", c.v, c.graph, err, c.want)
		}
	}
}
