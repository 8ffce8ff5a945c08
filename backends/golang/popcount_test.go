package golang_test

import (
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
	m, g, frames := testutil.PopCount(t)
	mach, _ := testutil.Interpreter(t, m, g, "")
	pl, err := popcountfast.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d frames: %v", len(frames), difftest.Compare(t, pl, mach, frames))
	testutil.PopCountRan(t, mach.Counters())
}
