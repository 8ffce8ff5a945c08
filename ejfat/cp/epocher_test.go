package cp_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/cptest"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
)

// counts is how many slots each session holds in cal.
func counts(cal []int64) map[int64]int {
	n := map[int64]int{}
	for _, id := range cal {
		n[id]++
	}
	return n
}

// TestCalendarsThroughServer runs the default Epocher behind the gRPC
// server: weights 1:3 share the slots 128:384, a control signal moves
// only the slots the new shares need, and the boundary is ahead of the
// events the sync messages report.
func TestCalendarsThroughServer(t *testing.T) {
	clk, c, lc := clockedCP(t)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "t", SenderAddresses: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := as(res.Token)
	var ids []int64
	for _, id := range cptest.Register(t, lc, ctx, res.LbId, []int{20000, 20001}, 1, 3) {
		var n int64
		fmt.Sscan(id, &n)
		ids = append(ids, n)
	}
	state := func(control float32) {
		t.Helper()
		for _, id := range ids {
			sig := float32(0)
			if id == ids[0] {
				sig = control
			}
			if _, err := lc.SendState(ctx, &pb.SendStateRequest{LbId: res.LbId, SessionId: fmt.Sprint(id),
				IsReady: true, ControlSignal: sig}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var lb int64
	fmt.Sscan(res.LbId, &lb)
	// One sender at 1000 events/s, synced twice a second for 2 s.
	const rate = 1000
	for i := range 5 {
		sendUDP(t, fmt.Sprintf("127.0.0.1:%d", res.SyncUdpPort), cptest.SyncMessage(1, uint64(i*rate/2), rate, clk.Now()))
		for deadline := time.Now().Add(5 * time.Second); len(c.store.Sync(lb)) <= i && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if i < 4 {
			clk.Add(500 * time.Millisecond)
		}
	}
	newest := uint64(4 * rate / 2)
	state(0)
	c.Tick()
	es := c.store.Epochs(lb)
	if len(es) != 1 {
		t.Fatalf("%d epochs, want 1", len(es))
	}
	first := es[0]
	n := counts(first.Calendar)
	if d := n[ids[0]] - 128; d < -1 || d > 1 || n[ids[0]]+n[ids[1]] != cp.Slots {
		t.Errorf("weights 1:3: %d:%d slots, want 128:384 within one", n[ids[0]], n[ids[1]])
	}
	// Lead 0.5 s + guard 1.5 s at 1000 events/s: 2000 events ahead.
	if lo := newest + rate*2; first.Boundary < lo || first.Boundary > lo+rate/10 {
		t.Errorf("boundary %d, want about %d (newest sync event %d + 2 s of events)", first.Boundary, lo, newest)
	}

	state(500) // session 0: 500 + 500 against 1500 + 0, 2:3
	c.Tick()
	es = c.store.Epochs(lb)
	if len(es) != 2 {
		t.Fatalf("%d epochs after a weight change, want 2", len(es))
	}
	second := es[1]
	m := counts(second.Calendar)
	if d := m[ids[0]] - 205; d < -1 || d > 1 || m[ids[0]]+m[ids[1]] != cp.Slots {
		t.Errorf("weights 2:3: %d:%d slots, want 204.8:307.2 within one", m[ids[0]], m[ids[1]])
	}
	moved := 0
	for j := range second.Calendar {
		if second.Calendar[j] != first.Calendar[j] {
			moved++
		}
	}
	if want := max(0, n[ids[1]]-m[ids[1]]); moved != want {
		t.Errorf("%d slots moved, want %d (only the shrinking session's surplus)", moved, want)
	}
	if second.Boundary <= first.Boundary {
		t.Errorf("second boundary %d not above the first's %d", second.Boundary, first.Boundary)
	}
}

// TestNewcomerInTheScale: a session that becomes ready after another has
// run epochs alone (its dynamic weight rescaled to udplbd2's mean of
// 1000) starts from its registered weight in that scale: equal registered
// weights share the slots equally, not 1:1000.
func TestNewcomerInTheScale(t *testing.T) {
	clk, c, lc := clockedCP(t)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := as(res.Token)
	ids := cptest.Register(t, lc, ctx, res.LbId, []int{20000, 20001}, 1, 1)
	ready := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			if _, err := lc.SendState(ctx, &pb.SendStateRequest{LbId: res.LbId, SessionId: id, IsReady: true}); err != nil {
				t.Fatal(err)
			}
		}
		c.Tick()
		clk.Add(time.Second)
	}
	ready(ids[0])
	ready(ids[0])
	var lb, newcomer int64
	fmt.Sscan(res.LbId, &lb)
	fmt.Sscan(ids[1], &newcomer)
	ready(ids...)
	es := c.store.Epochs(lb)
	if n := counts(es[len(es)-1].Calendar)[newcomer]; n < 255 || n > 257 {
		t.Errorf("the newcomer holds %d slots, want 256 of 512 (equal registered weights)", n)
	}
}

// TestEpochInForce: a session that stops being ready leaves the calendar
// at the next epoch, whose boundary is past every event the senders
// reported; the status reply's epochInForce reaches that epoch only once
// every sender's latest sync message reports an event at or past its
// boundary, counting a sender silent for 3 s as stopped, and with no
// sender left, once the wall clock's µs pass it.
func TestEpochInForce(t *testing.T) {
	clk, c, lc := clockedCP(t)
	lb, sync, ids, newest := syncedLB(t, clk, c, lc)
	send := func(source uint32, event uint64) {
		t.Helper()
		sendUDPFrom(t, "127.0.0.2", sync, cptest.SyncMessage(source, event, 1000, clk.Now()))
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if slices.ContainsFunc(c.store.Sync(lb), func(s cp.SyncSample) bool { return s.Source == source && s.Event == event }) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("sync message (source %d, event %d) not stored", source, event)
			}
		}
	}
	status := func() *pb.LoadBalancerStatusReply {
		t.Helper()
		st, err := lc.LoadBalancerStatus(as(c.admin), &pb.LoadBalancerStatusRequest{LbId: fmt.Sprint(lb)})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	inForce := func(want uint64, why string) {
		t.Helper()
		if got := status().EpochInForce; got != want {
			t.Errorf("%s: epoch in force %d, want %d", why, got, want)
		}
	}
	inForce(0, "no epoch")
	send(2, newest) // a second sender, as far as the first
	ready(t, lc, c, lb, ids, ids...)
	c.Tick()
	inForce(1, "the only epoch")
	ready(t, lc, c, lb, ids, ids[1]) // ids[0] leaves
	c.Tick()
	es := c.store.Epochs(lb)
	if len(es) != 2 {
		t.Fatalf("%d epochs, want 2", len(es))
	}
	first, second := es[0], es[1]
	var leaving int64
	fmt.Sscan(ids[0], &leaving)
	if counts(first.Calendar)[leaving] == 0 || counts(second.Calendar)[leaving] != 0 {
		t.Errorf("the leaving session holds %d then %d slots, want some then none",
			counts(first.Calendar)[leaving], counts(second.Calendar)[leaving])
	}
	if second.Boundary <= newest {
		t.Errorf("the boundary %d of the epoch without it is not past the events reported (%d)", second.Boundary, newest)
	}
	st := status()
	for _, w := range st.Workers {
		if w.SessionId == leaving && w.SlotsAssigned != 0 {
			t.Errorf("the leaving session shows %d slots in the newest epoch", w.SlotsAssigned)
		}
	}
	if st.CurrentEpoch != second.Number || st.CurrentPredictedEventNumber != second.Boundary || st.EpochInForce != first.Number {
		t.Errorf("status: epoch %d from %d, %d in force; want %d from %d, %d in force (the senders below both boundaries)",
			st.CurrentEpoch, st.CurrentPredictedEventNumber, st.EpochInForce, second.Number, second.Boundary, first.Number)
	}
	clk.Add(time.Second)
	send(1, second.Boundary)
	send(2, first.Boundary)
	inForce(first.Number, "one sender past the second boundary, one past the first")
	send(2, second.Boundary-1)
	inForce(first.Number, "one sender just below the second boundary")
	send(2, second.Boundary)
	inForce(second.Number, "both senders at the second boundary")

	// Sender 2 stops; the last session leaves: an epoch of no one.
	clk.Add(time.Second)
	ready(t, lc, c, lb, ids)
	c.Tick()
	es = c.store.Epochs(lb)
	third := es[len(es)-1]
	if third.Number != second.Number+1 {
		t.Fatalf("no epoch after the last session left: %d epochs", len(es))
	}
	clk.Add(2100 * time.Millisecond) // sender 2's last message 3.1 s old
	send(1, third.Boundary)
	inForce(third.Number, "sender 1 at the third boundary, sender 2 stopped")
	clk.Add(3100 * time.Millisecond)
	inForce(third.Number, "no sender left: the wall clock's µs, far past event numbers from 0")
}

// TestEpochInForceBeyondReach: epochs whose boundaries the wall clock
// gave (no sync messages yet, µs since 1970) are out of reach of senders
// that number from 0: their events all go by the newest epoch (the data
// plane's catch-all below the oldest boundary), which is in force. The
// next epoch rebases: the newest begins at 0, the older ones retire, and
// the new one begins where the sender's messages predict, so that it
// applies at a boundary and the epoch before stays in force until then.
func TestEpochInForceBeyondReach(t *testing.T) {
	clk, c, lc := clockedCP(t)
	lb, res, ids := twoSessions(t, c, lc)
	ready(t, lc, c, lb, ids, ids...)
	c.Tick()
	clk.Add(time.Second)
	ready(t, lc, c, lb, ids, ids[1])
	c.Tick()
	es := c.store.Epochs(lb)
	if len(es) != 2 || es[0].Boundary < uint64(clk.Now().UnixMicro()) {
		t.Fatalf("epochs %v, want two with boundaries from the wall clock's µs", es)
	}
	sendUDPFrom(t, "127.0.0.2", fmt.Sprintf("127.0.0.1:%d", res.SyncUdpPort), cptest.SyncMessage(1, 100, 200, clk.Now()))
	for deadline := time.Now().Add(5 * time.Second); len(c.store.Sync(lb)) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("sync message not stored")
		}
	}
	st, err := lc.LoadBalancerStatus(as(c.admin), &pb.LoadBalancerStatusRequest{LbId: res.LbId})
	if err != nil {
		t.Fatal(err)
	}
	if st.EpochInForce != es[1].Number {
		t.Errorf("epoch in force %d, want the newest, %d (the sender at event 100, 200/s, boundaries at %d and %d)",
			st.EpochInForce, es[1].Number, es[0].Boundary, es[1].Boundary)
	}
	ready(t, lc, c, lb, ids, ids...)
	c.Tick()
	rebased := c.store.Epochs(lb)
	// Lead 0.5 s + guard 1.5 s at 200/s from event 100 (its one sample's
	// rate): about 500.
	if len(rebased) != 2 || rebased[0].Number != es[1].Number || rebased[0].Boundary != 0 ||
		rebased[1].Number != es[1].Number+1 || rebased[1].Boundary < 400 || rebased[1].Boundary > 600 {
		t.Fatalf("after the rebase, epochs %v; want %d from 0 and %d from about 500", rebased, es[1].Number, es[1].Number+1)
	}
	st, err = lc.LoadBalancerStatus(as(c.admin), &pb.LoadBalancerStatusRequest{LbId: res.LbId})
	if err != nil {
		t.Fatal(err)
	}
	if st.EpochInForce != es[1].Number {
		t.Errorf("after the rebase, epoch in force %d, want %d until the sender reaches %d", st.EpochInForce, es[1].Number, rebased[1].Boundary)
	}
}
