package flow_test

import (
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lang"
)

// deadModel pops UDP and Ethernet in front of a place; PLACED and
// COMPLETE say where placed and completing segments go, EXTRA adds nodes.
const deadModel = `
include "lib/inet.nsc"
header seg { id: 16  total: 16  offset: 16 }
state events {
    key    { seg.id }
    buffer seg.total
    max    64 KiB
}
lpg Dead {
    node Wire {
        op input parse ethernet
        port out -> Seg
    }
    node Seg {
        op extract seg
        port true -> PopUDP
        port false -> Other
    }
    node PopUDP {
        op pop udp
        port out -> PopEthernet
    }
    node PopEthernet {
        op pop ethernet
        port out -> Place
    }
    node Place {
        op place events at seg.offset size 10
        port placed -> PLACED
        port complete -> COMPLETE
        port duplicate -> Other
        port overlap -> Other
        port late -> Other
        port length_mismatch -> Other
        port out_of_bounds -> Other
        port zero_length -> Other
        port too_large -> Other
    }
    node Other { op drop "not placed" }
    node Out { op emit }
    EXTRA
}
`

// TestDeadPops: pops in front of a place whose ports but complete all
// drop move nothing (the reassembler's UDP, IP and Ethernet pops, not its
// LB pop, which a test follows); a place that passes a placed frame on,
// or a graph with a push, keeps them.
func TestDeadPops(t *testing.T) {
	dead := func(src, lpg string, files ...string) []string {
		var m *lang.Model
		if len(files) > 0 {
			m = testutil.Model(t, files...)
		} else {
			m = testutil.ModelSource(t, src)
		}
		g, _ := m.Graph(lpg)
		var names []string
		for _, n := range g.Nodes {
			if flow.FindPopChains(g, g.Schema).Dead[n] {
				names = append(names, n.Name)
			}
		}
		return names
	}
	stored := `node Stored { op drop "stored" }`
	model := func(placed, complete, extra string) string {
		return strings.NewReplacer("PLACED", placed, "COMPLETE", complete, "EXTRA", extra).Replace(deadModel)
	}
	for _, c := range []struct {
		name, src, lpg string
		files          []string
		want           string
	}{
		{"reassembler", "", "Reassembler", []string{"ejfat/reassembler.nsc"}, "PopUDP PopIPv4 PopUDP6 PopIPv6 PopEthernet"},
		{"stored", model("Stored", "Out", stored), "Dead", nil, "PopUDP PopEthernet"},
		{"placed frame goes on", model("Out", "Out", ""), "Dead", nil, ""},
		{"a push", model("Stored", "Push", stored+"\nnode Push { op push seg  port out -> Out }"), "Dead", nil, ""},
	} {
		if got := strings.Join(dead(c.src, c.lpg, c.files...), " "); got != c.want {
			t.Errorf("%s: dead pops %q, want %q", c.name, got, c.want)
		}
	}
}
