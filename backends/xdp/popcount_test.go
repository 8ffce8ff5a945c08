package xdp_test

import (
	"testing"

	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// TestPopCountAgainstInterpreter: popcount on 16-, 64-, 65- and 128-bit
// operands (PopCountRx, backends/flow/testdata/popcount.nsc) in the
// kernel against the interpreter, on crafted words and 5,000 frames
// derived from them.
func TestPopCountAgainstInterpreter(t *testing.T) {
	m, g, frames := testutil.PopCount(t)
	r, mach := pair(t, m, g, "")
	t.Logf("%d frames: %v", len(frames), xdptest.Compare(t, r, mach, frames))
	testutil.PopCountRan(t, mach.Counters())
}
