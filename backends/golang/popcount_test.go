package golang_test

import (
	"os"
	"testing"

	"github.com/dragonet-go/nsc/backends/golang/internal/popcountfast"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// TestPopCountAgainstInterpreter: popcount on 16-, 64-, 65- and 128-bit
// operands (PopCountRx, backends/flow/testdata/popcount.nsc) in the
// generated Go against the interpreter, on crafted words and 5,000
// frames derived from them.
func TestPopCountAgainstInterpreter(t *testing.T) {
	src, err := os.ReadFile("../flow/testdata/popcount.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.ModelSource(t, string(src))
	g, _ := m.Graph("PopCountRx")
	mach, _ := testutil.Interpreter(t, m, g, "")
	pl, err := popcountfast.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	seeds := testutil.PopCountCorpus(t)
	where := difftest.Compare(t, pl, mach, append(seeds, difftest.Mutate(seeds, 5000, 7)...))
	t.Logf("%d crafted + 5000 derived frames: %v", len(seeds), where)
	for _, n := range []string{"Word", "Wide", "Out", "Few"} {
		if mach.Counters().Nodes[n] == 0 {
			t.Errorf("no frame ran through %s", n)
		}
	}
}
