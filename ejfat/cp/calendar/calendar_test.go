package calendar

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// randSessions are n sessions with random weights (some 0), minimum
// factors 0..1 and maximum factors 0 (none) or 1..3.
func randSessions(r *rand.Rand, n int) []Session {
	ss := make([]Session, n)
	for i := range ss {
		ss[i] = Session{Member: uint16(10 + 3*i), Weight: r.Float64() * 100, MinFactor: r.Float64()}
		if r.IntN(5) == 0 {
			ss[i].Weight = 0
		}
		if r.IntN(2) == 0 {
			ss[i].MaxFactor = 1 + 2*r.Float64()
		}
	}
	return ss
}

// checkShares checks shares against the conditions that define them,
// independently of how Shares finds them: they sum to Slots, lie within
// their bounds, and one λ explains them all — a share strictly inside its
// bounds is λ·w, one at its lower bound has λ·w ≤ lo, one at its upper
// bound λ·w ≥ hi.
func checkShares(t *testing.T, weights, shares []float64, b [][2]float64) {
	t.Helper()
	sum := 0.0
	for _, s := range shares {
		sum += s
	}
	if math.Abs(sum-Slots) > 1e-6 {
		t.Fatalf("shares %v sum to %v", shares, sum)
	}
	lambda := math.NaN()
	for i, s := range shares {
		if s < b[i][0]-1e-9 || s > b[i][1]+1e-9 {
			t.Fatalf("share %d = %v outside %v", i, s, b[i])
		}
		if s > b[i][0]+1e-9 && s < b[i][1]-1e-9 && weights[i] > 0 {
			lambda = s / weights[i]
		}
	}
	if math.IsNaN(lambda) {
		return // every share at a bound
	}
	for i, s := range shares {
		lw := lambda * weights[i]
		switch {
		case weights[i] == 0:
			if s > b[i][0]+1e-9 && !allAtMost(weights, shares, b) {
				t.Fatalf("share %d of weight 0 is %v above its lower bound", i, s)
			}
		case math.Abs(s-b[i][0]) < 1e-9 && math.Abs(s-b[i][1]) >= 1e-9 && lw > s*(1+1e-6)+1e-9:
			t.Fatalf("share %d at its lower bound %v but λ·w = %v", i, s, lw)
		case math.Abs(s-b[i][1]) < 1e-9 && math.Abs(s-b[i][0]) >= 1e-9 && lw < s*(1-1e-6)-1e-9:
			t.Fatalf("share %d at its upper bound %v but λ·w = %v", i, s, lw)
		case math.Abs(s-b[i][0]) >= 1e-9 && math.Abs(s-b[i][1]) >= 1e-9 && math.Abs(lw-s) > 1e-6*s+1e-9:
			t.Fatalf("share %d = %v, λ·w = %v", i, s, lw)
		}
	}
}

// TestSharesWithinOneSlot: over random sessions, the shares are the
// clamped proportional ones and every session's slots are within one of
// its share, with and without a previous calendar.
func TestSharesWithinOneSlot(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ss := randSessions(r, 1+r.IntN(40))
		var prev *Calendar
		if r.IntN(2) == 0 {
			prev = Empty()
			for j := range prev {
				prev[j] = ss[r.IntN(len(ss))].Member
			}
		}
		l, err := Build(Static, ss, prev)
		if err != nil {
			t.Fatal(err)
		}
		weights := make([]float64, len(ss))
		for i, s := range ss {
			weights[i] = s.Weight
		}
		if allZero(weights) {
			for i := range weights {
				weights[i] = 1
			}
		}
		b := bounds(ss, make([]int, len(ss)))
		if feasible(b) {
			checkShares(t, weights, l.Shares, b)
		}
		counts := l.Calendar.Counts()
		total := 0
		for i, s := range ss {
			total += counts[s.Member]
			if d := math.Abs(float64(counts[s.Member]) - l.Shares[i]); d >= 1 {
				t.Fatalf("member %d: %d slots for a share of %v", s.Member, counts[s.Member], l.Shares[i])
			}
		}
		if total != Slots {
			t.Fatalf("%d slots assigned", total)
		}
	}
}

// allAtMost: every share of weight above 0 is at its upper bound.
func allAtMost(weights, shares []float64, b [][2]float64) bool {
	for i, w := range weights {
		if w > 0 && shares[i] < b[i][1]-1e-9 {
			return false
		}
	}
	return true
}

func allZero(w []float64) bool {
	for _, x := range w {
		if x != 0 {
			return false
		}
	}
	return true
}

// feasible: the bounds can hold exactly Slots.
func feasible(b [][2]float64) bool {
	lo, hi := 0.0, 0.0
	for _, x := range b {
		lo += x[0]
		hi += x[1]
	}
	return lo <= Slots && hi >= Slots
}

// TestSharesInfeasibleBounds: minimums above Slots are scaled down to fit;
// maximums below Slots leave a leftover handed out by weight.
func TestSharesInfeasibleBounds(t *testing.T) {
	got := Shares([]float64{1, 3}, [][2]float64{{400, 512}, {400, 512}})
	if got[0] != 256 || got[1] != 256 {
		t.Errorf("scaled minimums: %v", got)
	}
	got = Shares([]float64{1, 3}, [][2]float64{{0, 100}, {0, 100}})
	if got[0] != 100+312/4 || got[1] != 100+3*312/4 {
		t.Errorf("leftover above maximums: %v", got)
	}
}

// TestReweight: udplbd2's rule, weight plus control signal rescaled to a
// mean of 1000.
func TestReweight(t *testing.T) {
	got := Reweight([]float64{1000, 1000, 500}, []float64{500, -500, -600})
	want := []float64{1500 * 3000 / 2000.0, 500 * 3000 / 2000.0, 0}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("Reweight = %v, want %v", got, want)
		}
	}
	if got := Reweight([]float64{1, 2}, []float64{-5, -5}); got[0] != 1000 || got[1] != 1000 {
		t.Errorf("all below 0: %v", got)
	}
}

// TestStrategies: dynamic follows the control signals, static ignores
// them, explicit assigns only demanded slots.
func TestStrategies(t *testing.T) {
	ss := []Session{
		{Member: 1, Weight: 1000, ControlSignal: 1000},
		{Member: 2, Weight: 1000, ControlSignal: 0, Demands: []SlotRange{{Index: 100, Length: 10}, {Index: -1, Length: 5}}},
	}
	for _, c := range []struct {
		s              Strategy
		one, two, none int
	}{
		{Dynamic, 341, 171, 0}, // weights 2:1 after the signals
		{Static, 256, 256, 0},
		{Explicit, 0, 15, Slots - 15},
	} {
		l, err := Build(c.s, ss, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := l.Calendar.Counts()
		none := Slots - n[1] - n[2]
		if n[1] != c.one || n[2] != c.two || none != c.none {
			t.Errorf("%v: member 1 %d, member 2 %d, unassigned %d slots; want %d, %d, %d", c.s, n[1], n[2], none, c.one, c.two, c.none)
		}
		for j := range 10 {
			if l.Calendar[100+j] != 2 || j < 5 && l.Calendar[j] != 2 && c.s == Explicit {
				t.Errorf("%v: demanded slots not member 2's: %v", c.s, l.Calendar[:16])
			}
		}
	}
	for name, want := range map[string]Strategy{"": Dynamic, "dynamic": Dynamic, "static": Static, "explicit": Explicit} {
		if got, err := ParseStrategy(name); err != nil || got != want {
			t.Errorf("ParseStrategy(%q) = %v, %v", name, got, err)
		}
	}
	if _, err := ParseStrategy("random"); err == nil {
		t.Error("ParseStrategy accepted random")
	}
}

// TestDemands: fixed ranges land where asked, −1 ranges in the first free
// runs after them, a demand beyond a session's weighted share is still
// honoured, and overlapping or out-of-range demands are refused.
func TestDemands(t *testing.T) {
	ss := []Session{
		{Member: 1, Weight: 1, Demands: []SlotRange{{Index: -1, Length: 4}, {Index: 2, Length: 3}}},
		{Member: 2, Weight: 1, Demands: []SlotRange{{Index: 0, Length: 2}, {Index: 8, Length: 300}}},
		{Member: 3, Weight: 1, Demands: []SlotRange{{Index: -1, Length: 2}}},
	}
	l, err := Build(Static, ss, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]uint16{0: 2, 1: 2, 2: 1, 3: 1, 4: 1, 5: 3, 6: 3, 8: 2, 307: 2, 308: 1, 311: 1}
	for slot, m := range want {
		if l.Calendar[slot] != m {
			t.Errorf("slot %d: member %d, want %d", slot, l.Calendar[slot], m)
		}
	}
	if got := l.Calendar.Ranges(3); len(got) == 0 || got[0].Index != 5 || got[0].Length < 2 {
		t.Errorf("member 3's ranges %v, want its demand 5+2 in the first", got)
	}
	for _, m := range []uint16{1, 2, 3} {
		n := 0
		for _, r := range l.Calendar.Ranges(m) {
			for j := r.Index; j < r.Index+int32(r.Length); j++ {
				if l.Calendar[j] != m {
					t.Fatalf("member %d's range %v holds slot %d of %d", m, r, j, l.Calendar[j])
				}
			}
			n += int(r.Length)
		}
		if n != l.Calendar.Counts()[m] {
			t.Errorf("member %d: ranges of %d slots, holds %d", m, n, l.Calendar.Counts()[m])
		}
	}
	if n := l.Calendar.Counts(); n[2] != 302 || n[1]+n[2]+n[3] != Slots {
		t.Errorf("counts %v: member 2 must keep its 302 demanded slots", n)
	}
	for _, bad := range [][]SlotRange{
		{{Index: 0, Length: 3}, {Index: 2, Length: 1}},
		{{Index: 510, Length: 3}},
		{{Index: -2, Length: 1}},
		{{Index: 0, Length: 256}, {Index: 257, Length: 255}, {Index: -1, Length: 2}},
	} {
		if _, err := Build(Static, []Session{{Member: 1, Weight: 1, Demands: bad}}, nil); err == nil {
			t.Errorf("demands %v accepted", bad)
		}
	}
	for _, bad := range []Session{{Member: Unassigned}, {Member: 1, Weight: math.NaN()}, {Member: 1, Weight: -1}, {Member: 1, MinFactor: -1}} {
		if _, err := Build(Static, []Session{bad}, nil); err == nil {
			t.Errorf("session %+v accepted", bad)
		}
	}
	if _, err := Build(Static, []Session{{Member: 1}, {Member: 1}}, nil); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a member twice: %v", err)
	}
}

// minMoves is the fewest slots any layout with l's counts can change from
// prev: every slot a session holds beyond its new count, every slot of a
// session gone, every slot unassigned before and assigned now.
func minMoves(prev, next *Calendar) int {
	before, after := prev.Counts(), next.Counts()
	n := 0
	for m, c := range before {
		n += max(c-after[m], 0)
	}
	return n + max(Slots-len0(before)-(Slots-len0(after)), 0)
}

// len0 is the number of assigned slots.
func len0(counts map[uint16]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// walk runs epochs of a random weight walk (sessions come and go now and
// then) and returns the slots moved by Build, by a fresh layout each epoch
// (the naive re-layout), and by udplbd2's shuffled one.
func walk(t testing.TB, seed uint64, epochs int) (ours, naive, shuffled int) {
	r := rand.New(rand.NewPCG(seed, 7))
	ss := randSessions(r, 2+r.IntN(20))
	prev, prevNaive, prevShuffled := Empty(), Empty(), Empty()
	for e := range epochs {
		for i := range ss {
			ss[i].Weight = max(ss[i].Weight*(1+0.2*(r.Float64()-0.5)), 0)
		}
		if e%25 == 24 && len(ss) > 2 {
			ss = append(ss[:0:0], ss[1:]...)
		}
		l, err := Build(Static, ss, prev)
		if err != nil {
			t.Fatal(err)
		}
		if m, low := Moves(prev, &l.Calendar), minMoves(prev, &l.Calendar); m != low {
			t.Fatalf("seed %d epoch %d: %d slots moved, the targets need %d", seed, e, m, low)
		}
		fresh, _ := Build(Static, ss, nil)
		sh := fresh.Calendar
		r.Shuffle(Slots, func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
		ours += Moves(prev, &l.Calendar)
		naive += Moves(prevNaive, &fresh.Calendar)
		shuffled += Moves(prevShuffled, &sh)
		prev, prevNaive, prevShuffled = &l.Calendar, &fresh.Calendar, &sh
	}
	return ours, naive, shuffled
}

// TestMinimalChange: over random weight walks Build moves exactly the
// slots its new targets force, fewer than a fresh layout or udplbd2's
// shuffle; unchanged sessions move none.
func TestMinimalChange(t *testing.T) {
	var ours, naive, shuffled int
	const seeds, epochs = 40, 100
	for seed := range uint64(seeds) {
		o, n, s := walk(t, seed, epochs)
		ours, naive, shuffled = ours+o, naive+n, shuffled+s
	}
	per := func(n int) float64 { return float64(n) / seeds / epochs }
	t.Logf("slots moved per epoch: minimal change %.1f, fresh layout %.1f, shuffled (udplbd2) %.1f", per(ours), per(naive), per(shuffled))
	if ours*3 > naive || naive >= shuffled {
		t.Errorf("moves per epoch: ours %.1f, naive %.1f, shuffled %.1f", per(ours), per(naive), per(shuffled))
	}
	r := rand.New(rand.NewPCG(9, 9))
	ss := randSessions(r, 13)
	ss[3].Demands = []SlotRange{{Index: -1, Length: 7}, {Index: 40, Length: 2}}
	for _, s := range []Strategy{Dynamic, Static, Explicit} {
		first, err := Build(s, ss, nil)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Build(s, ss, &first.Calendar)
		if err != nil {
			t.Fatal(err)
		}
		if s == Dynamic { // the weights settle after Reweight: feed them back
			for i := range ss {
				ss[i].Weight = again.Weights[i]
			}
			first, _ = Build(s, ss, &again.Calendar)
			again, _ = Build(s, ss, &first.Calendar)
		}
		if m := Moves(&first.Calendar, &again.Calendar); m != 0 {
			t.Errorf("%v: %d slots moved with nothing changed", s, m)
		}
	}
}

// BenchmarkBuild: a calendar for 16 sessions from scratch, and the next
// one after a weight step with minimal change; moves/op next to a fresh
// layout's.
func BenchmarkBuild(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	ss := randSessions(r, 16)
	first, _ := Build(Static, ss, nil)
	ss2 := append([]Session(nil), ss...)
	for i := range ss2 {
		ss2[i].Weight *= 1 + 0.2*(r.Float64()-0.5)
	}
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		var l *Layout
		for b.Loop() {
			l, _ = Build(Static, ss2, nil)
		}
		b.ReportMetric(float64(Moves(&first.Calendar, &l.Calendar)), "moves/op")
	})
	b.Run("minimal", func(b *testing.B) {
		b.ReportAllocs()
		var l *Layout
		for b.Loop() {
			l, _ = Build(Static, ss2, &first.Calendar)
		}
		b.ReportMetric(float64(Moves(&first.Calendar, &l.Calendar)), "moves/op")
	})
}

// TestRoundingHoldsOn: equal shares with a fraction (512/3) whose order
// of fractions flips with tiny weight noise keep their slots: the slot
// left over stays with the sessions that had it.
func TestRoundingHoldsOn(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	ss := []Session{{Member: 1}, {Member: 2}, {Member: 3}}
	var prev *Calendar
	for e := range 50 {
		for i := range ss {
			ss[i].Weight = 1 + 1e-9*r.Float64()
		}
		l, err := Build(Static, ss, prev)
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil {
			if m := Moves(prev, &l.Calendar); m != 0 {
				t.Fatalf("epoch %d: %d slots moved by noise", e, m)
			}
		}
		prev = &l.Calendar
	}
}
