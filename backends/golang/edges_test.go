package golang_test

import (
	"os"
	"testing"

	"github.com/dragonet-go/nsc/backends/golang/internal/csumfast"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// TestEdgesAgainstInterpreter holds the generated fast paths of OpsRx and
// CsumRx to the interpreter on frames at the edges of length
// (difftest.Edges: 0 to 65537 bytes, every crafted frame cut at every
// byte). The fast path has no longest frame of its own: every length runs.
func TestEdgesAgainstInterpreter(t *testing.T) {
	t.Run("OpsRx", func(t *testing.T) {
		pl, mach := opsPair(t)
		where := difftest.Compare(t, pl, mach, difftest.Edges(testutil.OpsCorpus(t), difftest.EdgeSizes))
		t.Logf("%v", where)
	})
	t.Run("CsumRx", func(t *testing.T) {
		src, err := os.ReadFile("../flow/testdata/ops.nsc")
		if err != nil {
			t.Fatal(err)
		}
		m := testutil.ModelSource(t, string(src))
		g, _ := m.Graph("CsumRx")
		mach, _ := testutil.Interpreter(t, m, g, "")
		pl, err := csumfast.New(csumfast.NewTables())
		if err != nil {
			t.Fatal(err)
		}
		where := difftest.Compare(t, pl, mach, difftest.Edges(testutil.CsumCorpus(t), difftest.EdgeSizes))
		t.Logf("%v", where)
	})
}
