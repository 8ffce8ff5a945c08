// Package calendar holds the EJFAT control plane's algorithms, free of
// networking and storage: the 512-slot calendars that share an LB
// instance's events among its receivers, the prediction of epoch
// boundaries from the senders' sync messages, and the lb-2025/lb-2026
// table entries (epoch prefixes, calendar slots, members) that put up to
// four live epochs into a data plane, with the diff that moves a data
// plane from one table state to the next (ejfat-control-plane.md §3).
package calendar

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Slots is the number of calendar slots of an LB instance (slotResolution):
// an epoch entry's do_assign_epoch selects 9 bits of the tick.
const Slots = 512

// Unassigned marks a calendar slot no session holds; it gets no calendar
// entry, so the data plane drops its events (a calendar miss). udplbd2
// writes the same 0xFFFF.
const Unassigned = 0xFFFF

// Calendar maps each slot to the member id of the session that receives
// the events whose slot select falls in it.
type Calendar [Slots]uint16

// Empty is a calendar with no slot assigned.
func Empty() *Calendar {
	var c Calendar
	for i := range c {
		c[i] = Unassigned
	}
	return &c
}

// Counts returns how many slots each member holds.
func (c *Calendar) Counts() map[uint16]int {
	n := map[uint16]int{}
	for _, m := range c {
		if m != Unassigned {
			n[m]++
		}
	}
	return n
}

// Ranges are member m's slots as runs of consecutive slots (WorkerStatus
// slots).
func (c *Calendar) Ranges(m uint16) []SlotRange {
	var out []SlotRange
	for j, x := range c {
		switch {
		case x != m:
		case j > 0 && c[j-1] == m:
			out[len(out)-1].Length++
		default:
			out = append(out, SlotRange{Index: int32(j), Length: 1})
		}
	}
	return out
}

// Moves counts the slots whose member differs between a and b: the events
// that go elsewhere from one epoch to the next.
func Moves(a, b *Calendar) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// Strategy is how a reservation shares its slots (the strategy field of
// ReserveLoadBalancerRequest).
type Strategy uint8

const (
	// Dynamic: weights move with the receivers' control signals (Reweight).
	Dynamic Strategy = iota
	// Static: the registered weights and slot demands only.
	Static
	// Explicit: only demanded slots are assigned; the others drop.
	Explicit
)

var strategyNames = []string{"dynamic", "static", "explicit"}

func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("strategy(%d)", s)
}

// ParseStrategy reads a reservation's strategy; "" is dynamic.
func ParseStrategy(name string) (Strategy, error) {
	if name == "" {
		return Dynamic, nil
	}
	if i := slices.Index(strategyNames, name); i >= 0 {
		return Strategy(i), nil
	}
	return 0, fmt.Errorf("unknown strategy %q (want dynamic, static or explicit)", name)
}

// SlotRange is a slot demand: Length slots from Index, or, with Index −1,
// the first Length consecutive slots left free.
type SlotRange struct {
	Index  int32
	Length uint32
}

// Session is a ready receiver as a calendar sees it.
type Session struct {
	Member uint16 // its member id in the calendar and member tables
	// Weight is its current weight: the registered one for static, the
	// one Reweight returned last epoch for dynamic.
	Weight float64
	// ControlSignal is the latest one it sent (dynamic only).
	ControlSignal float64
	// MinFactor and MaxFactor bound its share to [even × MinFactor,
	// even × MaxFactor] with even = Slots / sessions; MaxFactor 0 is no
	// maximum.
	MinFactor, MaxFactor float64
	Demands              []SlotRange
}

// Reweight combines each weight with its control signal as udplbd2 does
// once an epoch: w + signal, rescaled so that the weights' mean is
// MeanWeight.
// A sum below 0 counts as 0; when none is above 0 all get 1000. The
// result is the weights to keep for the next epoch.
// MeanWeight is the mean of the weights Reweight returns.
const MeanWeight = 1000

func Reweight(weights, signals []float64) []float64 {
	out := make([]float64, len(weights))
	for i, w := range weights {
		out[i] = max(w/2+signals[i]/2, 0) // halves: no overflow to +Inf
	}
	top := slices.Max(append(out, 0))
	sum := 0.0
	for i := range out {
		if top > 0 {
			out[i] /= top
		}
		sum += out[i]
	}
	for i := range out {
		if sum > 0 {
			out[i] *= MeanWeight * float64(len(out)) / sum
		} else {
			out[i] = MeanWeight
		}
	}
	return out
}

// Layout is a built calendar with what went into it.
type Layout struct {
	Calendar Calendar
	// Shares are the sessions' exact clamped shares of slots, Targets the
	// whole numbers of slots they got (in Build's session order).
	Shares  []float64
	Targets []int
	// Weights are the weights used: for dynamic, Reweight's, to keep.
	Weights []float64
}

// Build lays out the next epoch's calendar for the ready sessions. Demanded
// slots go to their session first (a demand is also a lower bound of its
// share); the rest is shared by weight (Shares), rounded to whole slots
// (Targets), and laid out changing as few slots of prev (nil: none) as the
// targets allow: every session keeps its old slots up to its target, and
// only the surplus of shrinking or departed sessions changes hands.
// Demands that overlap, leave the calendar or find no free run are errors.
func Build(s Strategy, sessions []Session, prev *Calendar) (*Layout, error) {
	if err := checkSessions(sessions); err != nil {
		return nil, err
	}
	cal := Empty()
	pinned, demanded, err := placeDemands(cal, sessions)
	if err != nil {
		return nil, err
	}
	own, held := owners(prev, sessions)
	l := &Layout{Weights: make([]float64, len(sessions))}
	for i, ss := range sessions {
		l.Weights[i] = ss.Weight
	}
	if s == Dynamic {
		signals := make([]float64, len(sessions))
		for i, ss := range sessions {
			signals[i] = ss.ControlSignal
		}
		l.Weights = Reweight(l.Weights, signals)
	}
	if s == Explicit {
		l.Shares = make([]float64, len(sessions))
		l.Targets = demanded
		for i, d := range demanded {
			l.Shares[i] = float64(d)
		}
	} else {
		l.Shares = Shares(l.Weights, bounds(sessions, demanded))
		l.Targets = round(l.Shares, demanded, held)
	}
	fill(cal, pinned, sessions, l.Targets, demanded, own)
	l.Calendar = *cal
	return l, nil
}

func checkSessions(sessions []Session) error {
	seen := map[uint16]bool{}
	for _, s := range sessions {
		switch {
		case s.Member == Unassigned:
			return fmt.Errorf("member id %#x is reserved for unassigned slots", s.Member)
		case seen[s.Member]:
			return fmt.Errorf("member %d twice", s.Member)
		case !(s.Weight >= 0) || math.IsInf(s.Weight, 0) || math.IsNaN(s.ControlSignal) || math.IsInf(s.ControlSignal, 0):
			return fmt.Errorf("member %d: weight %v, control signal %v", s.Member, s.Weight, s.ControlSignal)
		case !(s.MinFactor >= 0 && s.MinFactor <= Slots) || !(s.MaxFactor >= 0 && s.MaxFactor <= Slots):
			return fmt.Errorf("member %d: factors %v, %v not in 0..%d", s.Member, s.MinFactor, s.MaxFactor, Slots)
		}
		seen[s.Member] = true
	}
	return nil
}

// placeDemands writes the sessions' demanded slots into cal: fixed ranges
// first, then the −1 ones into the first free runs, both in session
// order. It returns which slots are pinned and each session's count.
func placeDemands(cal *Calendar, sessions []Session) (pinned *[Slots]bool, counts []int, err error) {
	pinned = new([Slots]bool)
	counts = make([]int, len(sessions))
	for _, floating := range []bool{false, true} {
		for i, s := range sessions {
			for _, d := range s.Demands {
				if (d.Index == -1) != floating {
					continue
				}
				from, err := demandStart(pinned, d)
				if err != nil {
					return nil, nil, fmt.Errorf("member %d: %w", s.Member, err)
				}
				for j := from; j < from+int(d.Length); j++ {
					if pinned[j] {
						return nil, nil, fmt.Errorf("member %d: slot %d demanded by member %d too", s.Member, j, cal[j])
					}
					pinned[j], cal[j] = true, s.Member
					counts[i]++
				}
			}
		}
	}
	return pinned, counts, nil
}

// demandStart is where demand d starts: its index, or the first run of
// d.Length unpinned slots.
func demandStart(pinned *[Slots]bool, d SlotRange) (int, error) {
	switch {
	case d.Index < -1 || d.Length > Slots || int(d.Index)+int(d.Length) > Slots:
		return 0, fmt.Errorf("slot range %d+%d outside 0..%d", d.Index, d.Length, Slots)
	case d.Index >= 0 || d.Length == 0:
		return max(int(d.Index), 0), nil
	}
	run := 0
	for j := range Slots {
		if pinned[j] {
			run = 0
			continue
		}
		if run++; run == int(d.Length) {
			return j + 1 - run, nil
		}
	}
	return 0, fmt.Errorf("no %d free consecutive slots", d.Length)
}

// bounds are the sessions' [lo, hi] shares: even × the factors, lo at
// least the demanded slots.
func bounds(sessions []Session, demanded []int) [][2]float64 {
	b := make([][2]float64, len(sessions))
	even := float64(Slots) / float64(len(sessions))
	for i, s := range sessions {
		lo := max(even*s.MinFactor, float64(demanded[i]))
		hi := float64(Slots)
		if s.MaxFactor > 0 {
			hi = even * s.MaxFactor
		}
		b[i] = [2]float64{lo, max(lo, hi)}
	}
	return b
}

// Shares divides the Slots slots in proportion to weights, each share
// clamped to its bounds [lo, hi]: the shares are clamp(λ·w, lo, hi) with
// the λ that makes them sum to Slots, so what a clamped session gives up
// or takes goes to the others in proportion to their weights. When the
// lower bounds alone exceed Slots they are scaled down to fit; when the
// upper bounds cannot hold all slots, the leftover is handed out by weight
// above them; when the sessions of weight above 0 cannot take all slots
// even at their upper bounds, those of weight 0 share the rest evenly.
// Weights all 0 count as equal.
func Shares(weights []float64, b [][2]float64) []float64 {
	return share(weights, b, Slots)
}

func share(w []float64, b [][2]float64, total float64) []float64 {
	n := len(w)
	out := make([]float64, n)
	if n == 0 {
		return out
	}
	if top := slices.Max(w); top > 0 {
		w = slices.Clone(w) // scaled to at most 1: sums cannot overflow
		for i := range w {
			w[i] /= top
		}
	} else {
		w = slices.Repeat([]float64{1}, n)
	}
	sumLo, sumHi, sumW, reach := 0.0, 0.0, 0.0, 0.0
	for i := range n {
		sumLo += b[i][0]
		sumHi += b[i][1]
		sumW += w[i]
		if w[i] > 0 {
			reach += b[i][1]
		} else {
			reach += b[i][0]
		}
	}
	switch {
	case sumLo >= total:
		for i := range n {
			out[i] = b[i][0] * total / sumLo
		}
	case sumHi <= total:
		for i := range n {
			out[i] = b[i][1] + (total-sumHi)*w[i]/sumW
		}
	case reach < total:
		var zero []int
		var zb [][2]float64
		for i := range n {
			if w[i] > 0 {
				out[i] = b[i][1]
				total -= b[i][1]
			} else {
				zero = append(zero, i)
				zb = append(zb, b[i])
			}
		}
		for k, x := range share(make([]float64, len(zero)), zb, total) {
			out[zero[k]] = x
		}
	default:
		lambda := solve(w, b, total)
		for i := range n {
			out[i] = min(max(lambda*w[i], b[i][0]), b[i][1])
		}
	}
	return out
}

// solve finds the λ at which Σ clamp(λ·w, lo, hi) = total, given that
// Σ lo < total ≤ the sum at λ large. The sum is piecewise linear between
// the λs where a share meets a bound: a binary search finds the piece
// where it reaches total, where it is solved exactly.
func solve(w []float64, b [][2]float64, total float64) float64 {
	sum := func(lambda float64) float64 {
		s := 0.0
		for i := range w {
			s += min(max(lambda*w[i], b[i][0]), b[i][1])
		}
		return s
	}
	breaks := []float64{0}
	for i := range w {
		if w[i] > 0 {
			breaks = append(breaks, b[i][0]/w[i], b[i][1]/w[i])
		}
	}
	slices.Sort(breaks)
	k := max(sort.Search(len(breaks), func(k int) bool { return sum(breaks[k]) >= total }), 1)
	lo, hi := breaks[k-1], breaks[min(k, len(breaks)-1)]
	slope := 0.0 // the weights of the shares strictly between their bounds on (lo, hi)
	for i := range w {
		if m := (lo + hi) / 2 * w[i]; m > b[i][0] && m < b[i][1] {
			slope += w[i]
		}
	}
	if slope == 0 {
		return hi
	}
	return lo + (total-sum(lo))/slope
}

// round turns shares summing to Slots into whole slots summing to Slots,
// each within one slot of its share and at least its demanded slots:
// floors, then the remaining slots one each to the sessions that held more
// than their floor last epoch (so a share wobbling around a whole number
// does not move a slot every epoch), then by largest fraction, then in
// session order.
func round(shares []float64, demanded, prevCount []int) []int {
	t := make([]int, len(shares))
	left := Slots
	for i, x := range shares {
		t[i] = max(int(math.Floor(x+1e-9)), demanded[i])
		left -= t[i]
	}
	order := make([]int, len(shares))
	for i := range order {
		order[i] = i
	}
	frac := func(i int) float64 { return shares[i] - float64(t[i]) }
	slices.SortStableFunc(order, func(a, b int) int {
		ka, kb := prevCount[a] > t[a], prevCount[b] > t[b]
		if ka != kb {
			if ka {
				return -1
			}
			return 1
		}
		return cmp.Compare(frac(b), frac(a))
	})
	for k := 0; left > 0 && len(order) > 0; k++ {
		t[order[k%len(order)]]++
		left--
	}
	for left < 0 { // floors rounded up past Slots: take back the largest excess
		i := -1
		for j := range t {
			if t[j] > demanded[j] && (i < 0 || frac(j) < frac(i)) {
				i = j
			}
		}
		t[i]--
		left++
	}
	return t
}

// owners maps each slot of prev to the index of the session that held it,
// -1 for none or a session gone, and counts each session's slots.
func owners(prev *Calendar, sessions []Session) (*[Slots]int, []int) {
	own := new([Slots]int)
	counts := make([]int, len(sessions))
	byID := make([]int, len(sessions))
	for i := range byID {
		byID[i] = i
	}
	slices.SortFunc(byID, func(a, b int) int { return cmp.Compare(sessions[a].Member, sessions[b].Member) })
	for j := range own {
		own[j] = -1
		if prev == nil {
			continue
		}
		k, ok := slices.BinarySearchFunc(byID, prev[j], func(i int, m uint16) int { return cmp.Compare(sessions[i].Member, m) })
		if ok {
			own[j] = byID[k]
			counts[byID[k]]++
		}
	}
	return own, counts
}

// fill completes cal, whose pinned slots hold the demands (demanded
// counts them per session): each session first keeps its slots of the
// previous calendar (own) while under its target, then the free slots go,
// in slot order, each to the session furthest below its target (earliest
// in session order on ties), which interleaves the sessions.
func fill(cal *Calendar, pinned *[Slots]bool, sessions []Session, targets, demanded []int, own *[Slots]int) {
	count := slices.Clone(demanded)
	for j, i := range own {
		if i >= 0 && !pinned[j] && count[i] < targets[i] {
			cal[j] = sessions[i].Member
			pinned[j] = true
			count[i]++
		}
	}
	for j := range Slots {
		if pinned[j] {
			continue
		}
		best, deficit := -1, 0
		for i := range sessions {
			if d := targets[i] - count[i]; d > deficit {
				best, deficit = i, d
			}
		}
		if best < 0 {
			return // explicit: the rest stays unassigned
		}
		cal[j] = sessions[best].Member
		count[best]++
	}
}
