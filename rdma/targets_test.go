package rdma_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// TestTargetsRefuse: XDP refuses registers, cut and the ICRC's compute
// (it verifies the ICRC: rdma/split_test.go), P4 all four and the ICRC's
// verify, naming the nodes, rather than generating something else.
func TestTargetsRefuse(t *testing.T) {
	m := testutil.ModelSource(t, `
include "lib/roce.nsc"
metadata qp { epsn: 24 }
register qps { key { bth.dqpn } value qp }
lpg Ops {
    node In { op input  port out -> Eth }
    node Eth { op extract ethernet  port true -> IP  port false -> Short }
    node IP { op extract ipv4  port true -> UDP  port false -> Short }
    node UDP { op extract udp  port true -> BTH  port false -> Short }
    node BTH { op extract bth  port true -> ICRC  port false -> Short }
    node ICRC { op checksum verify icrc(bth)  port true -> Load  port false -> Out }
    node Load { op load qps  port hit -> Store  port miss -> Store }
    node Store { op store qps  port out -> Cut  port full -> Out }
    node Cut { op cut  port out -> Fix }
    node Fix { op checksum compute icrc(bth)  port out -> Out }
    node Out { op emit }
    node Short { op drop "short" }
}`)
	g, _ := m.Graph("Ops")
	_, xerr := xdp.Generate(g, xdp.Options{Limits: testutil.XDPLimits(t, nil)})
	_, perr := p4.Generate(g, p4.Options{Arch: p4.V1Model})
	for name, c := range map[string]struct {
		err   error
		nodes []string
	}{"xdp": {xerr, []string{"Load", "Store", "Cut", "Fix"}}, "p4": {perr, []string{"ICRC", "Load", "Store", "Cut", "Fix"}}} {
		if !errors.Is(c.err, backends.ErrUnsupported) {
			t.Errorf("%s: %v, want a refusal", name, c.err)
			continue
		}
		if name == "xdp" && strings.Contains(c.err.Error(), "node ICRC:") {
			t.Errorf("xdp refuses the ICRC's verify: %v", c.err)
		}
		for _, n := range c.nodes {
			if !strings.Contains(c.err.Error(), "node "+n+":") {
				t.Errorf("%s: refusal does not name node %s:\n%v", name, n, c.err)
			}
		}
	}
}
