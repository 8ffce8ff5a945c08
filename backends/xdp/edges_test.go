package xdp_test

import (
	"testing"

	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/lang"
)

// TestEdgesAgainstInterpreter holds the ops models' graphs (OpsTx pushes
// headers in front of the whole frame and sums it for their checksums)
// and the shipped UDP stack to the interpreter on frames at the edges of
// length (xdptest.CompareEdges: 0 to 65537 bytes and either side of
// MaxFrame, every seed cut at every byte): frames up to MaxFrame run
// whole, longer ones are passed untouched and counted as oversize.
func TestEdgesAgainstInterpreter(t *testing.T) {
	ops := loadOps(t)
	for _, c := range []struct {
		m             *lang.Model
		graph, script string
		seeds         [][]byte
	}{
		{ops, "OpsRx", "../flow/testdata/ops.tables", testutil.OpsCorpus(t)},
		{ops, "OpsTx", "", [][]byte{make([]byte, 14)}},
		{ops, "CsumRx", "", testutil.CsumCorpus(t)},
		{testutil.Model(t, "inet/udp.nsc"), "UDPIPv4", "", testutil.UDPCorpus(t)},
	} {
		t.Run(c.graph, func(t *testing.T) {
			g, _ := c.m.Graph(c.graph)
			r, mach := pair(t, c.m, g, c.script)
			xdptest.CompareEdges(t, r, mach, c.seeds)
		})
	}
}
