package golang_test

import (
	"testing"

	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// TestEdgesAgainstInterpreter holds the generated fast paths of OpsRx and
// CsumRx to the interpreter on frames at the edges of length
// (difftest.Edges: 0 to 65537 bytes, every crafted frame cut at every
// byte). The fast path has no longest frame of its own: every length runs.
func TestEdgesAgainstInterpreter(t *testing.T) {
	pl, mach := opsPair(t)
	t.Logf("OpsRx: %v", difftest.Compare(t, pl, mach, difftest.Edges(testutil.OpsCorpus(t), difftest.EdgeSizes)))
	cpl, cmach := csumPair(t)
	t.Logf("CsumRx: %v", difftest.Compare(t, cpl, cmach, difftest.Edges(testutil.CsumCorpus(t), difftest.EdgeSizes)))
}
