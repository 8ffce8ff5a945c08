package sim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/sim"
)

// TestMaxFrame: held to a longest frame, the machine runs frames up to it
// and counts longer ones as oversize under the graph's name, running no
// node; without one it runs frames of any length.
func TestMaxFrame(t *testing.T) {
	m := machine(t, logicModel, "L")
	m.SetMaxFrame(60)
	for _, n := range []int{0, 2, 60, 61, 65537} {
		outcome(m, make([]byte, n))
	}
	c := m.Counters()
	want := map[sim.DropKey]uint64{{Node: "Q", Reason: "malformed"}: 1, {Node: "L", Reason: sim.ReasonOversize}: 2}
	if diff := cmp.Diff(want, c.Drops); diff != "" {
		t.Errorf("drops (-want +got):\n%s", diff)
	}
	if k, ok := m.LastDrop(); !ok || k.Reason != sim.ReasonOversize {
		t.Errorf("last drop %v %v, want oversize", k, ok)
	}
	if c.Nodes["Q"] != 3 {
		t.Errorf("Q ran on %d frames, want 3 (not the oversize ones)", c.Nodes["Q"])
	}
	m.SetMaxFrame(0)
	if out := outcome(m, make([]byte, 65537)); len(out["AndF"]) != 65537 {
		t.Errorf("without a longest frame a 65537-byte frame leaves as %v", out)
	}
}
