package recvcp

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
)

// A leaving receiver waits for an epoch that gives it no slots, then for
// that epoch to be in force, whatever the status replies in between say.
func TestLeavingWaitsForAnEpochWithoutIt(t *testing.T) {
	var said []string
	v := leaving{id: "7", start: time.Now(), log: func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }}
	status := func(current, inForce uint64, slots uint32) *pb.LoadBalancerStatusReply {
		return &pb.LoadBalancerStatusReply{CurrentEpoch: current, EpochInForce: inForce, CurrentPredictedEventNumber: 100 * current,
			Workers: []*pb.WorkerStatus{{SessionId: 6, SlotsAssigned: 512}, {SessionId: 7, SlotsAssigned: slots}}}
	}
	for i, c := range []struct {
		st   *pb.LoadBalancerStatusReply
		want bool
	}{
		{status(3, 3, 512), false}, // still in the newest calendar
		{status(4, 3, 0), false},   // epoch 4 leaves it out, epoch 3 still in force
		{status(5, 3, 0), false},   // a newer epoch does not move the one it waits for
		{status(5, 4, 0), true},
	} {
		if got := v.inForce(c.st); got != c.want {
			t.Fatalf("reply %d: in force %v, want %v", i, got, c.want)
		}
	}
	if v.without != 4 || len(said) != 2 || !strings.Contains(said[0], "epoch 4 gives this receiver no slots, from event 400") ||
		!strings.HasPrefix(said[1], "leaving: epoch 4 is in force") {
		t.Errorf("waited for epoch %d, said %q", v.without, said)
	}
	// A receiver no epoch sends to has nothing to wait for.
	for _, st := range []*pb.LoadBalancerStatusReply{status(0, 0, 0), {CurrentEpoch: 2}} {
		v := leaving{id: "7", log: func(string, ...any) {}}
		if !v.inForce(st) {
			t.Errorf("%v: not in force", st)
		}
	}
}

// The PID's output is the sum of its three terms over the fill's error
// from the set point: proportional, integral (rectangles of dt) and
// derivative.
func TestPID(t *testing.T) {
	p := PID{SetPoint: 0.5, Kp: 2, Ki: 0.5, Kd: 0.25}
	fills := []float64{0.5, 0.9, 0.7, 0.1}
	var integral, last float64
	for _, fill := range fills {
		e := 0.5 - fill
		integral += e * 0.1
		want := 2*e + 0.5*integral + 0.25*(e-last)/0.1
		last = e
		if got := p.Update(fill, 0.1); math.Abs(got-want) > 1e-12 {
			t.Errorf("fill %v: %v, want %v", fill, got, want)
		}
	}
}
