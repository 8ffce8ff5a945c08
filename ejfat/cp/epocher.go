package cp

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
)

// Default epoch timing: the boundary is predicted for DefaultLead after
// now plus DefaultGuard's worth of events (the values
// TestPredictionNeverBehind in ejfat/cp/calendar holds to).
const (
	DefaultLead  = 500 * time.Millisecond
	DefaultGuard = 1500 * time.Millisecond
)

// Calendars is the Epocher of ejfat/cp/calendar: calendars by
// calendar.Build (clamped weighted shares, the reservation's strategy,
// slot demands, minimal change from the current calendar) and boundaries
// by a calendar.Predictor over the reservation's sync samples. For the
// dynamic strategy it keeps each session's reweighted weight for the next
// epoch, as udplbd2 stores it back. Safe for concurrent use.
type Calendars struct {
	Lead, Guard time.Duration // see calendar.Predictor
	Slack       uint64        // ticks added to a boundary (calendar.Predictor.Slack)

	mu      sync.Mutex
	weights map[int64]kept // dynamic weights by session ID
}

// kept is a session's dynamic weight and when it was last used.
type kept struct {
	weight float64
	used   time.Time
}

// forgetAfter is how long a dynamic weight outlives its session's last
// ready epoch: longer than a session stays unready without being deleted.
const forgetAfter = 10 * time.Minute

// NewCalendars returns a Calendars with the default lead and guard.
func NewCalendars() *Calendars { return &Calendars{Lead: DefaultLead, Guard: DefaultGuard} }

// Next implements Epocher.
func (c *Calendars) Next(in EpochInput) ([]int64, uint64, error) {
	strategy, err := calendar.ParseStrategy(in.Strategy)
	if err != nil {
		return nil, 0, err
	}
	sessions := c.sessions(in.Sessions, strategy)
	var prev *calendar.Calendar
	if in.Current != nil {
		prev = toMembers(in.Current.Calendar, in.Sessions)
	}
	l, err := calendar.Build(strategy, sessions, prev)
	if err != nil {
		return nil, 0, err
	}
	if strategy == calendar.Dynamic {
		c.keep(in.Sessions, l.Weights, in.Now)
	}
	cal := make([]int64, Slots)
	for j, m := range l.Calendar {
		if m != calendar.Unassigned {
			cal[j] = in.Sessions[m].ID
		}
	}
	return cal, c.boundary(in), nil
}

// sessions are the ready sessions as calendar.Build takes them, member i
// being in.Sessions[i]: weights as registered, or for dynamic the ones
// kept from the last epoch.
func (c *Calendars) sessions(ready []Session, s calendar.Strategy) []calendar.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A session new to the dynamic weights starts from its registered
	// weight in their scale: the kept weights over the registered ones of
	// the sessions that have them (udplbd2 rescales to a mean of 1000, so
	// a newcomer's registered 1 would otherwise weigh next to nothing).
	scale, kept, registered := 1.0, 0.0, 0.0
	for _, x := range ready {
		if k, ok := c.weights[x.ID]; ok {
			kept, registered = kept+k.weight, registered+float64(x.Weight)
		}
	}
	if kept > 0 && registered > 0 {
		scale = kept / registered
	}
	out := make([]calendar.Session, len(ready))
	for i, x := range ready {
		w := float64(x.Weight)
		if k, ok := c.weights[x.ID]; ok && s == calendar.Dynamic {
			w = k.weight
		} else if s == calendar.Dynamic {
			w *= scale
		}
		out[i] = calendar.Session{Member: uint16(i), Weight: w,
			MinFactor: float64(x.MinFactor), MaxFactor: float64(x.MaxFactor)}
		if x.State != nil {
			out[i].ControlSignal = float64(x.State.Control)
		}
		for _, d := range x.Demands {
			out[i].Demands = append(out[i].Demands, calendar.SlotRange{Index: d.Index, Length: d.Length})
		}
	}
	return out
}

// keep stores the dynamic weights Build returned for the sessions at now,
// and forgets those unused for forgetAfter (sessions gone).
func (c *Calendars) keep(ready []Session, weights []float64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.weights == nil {
		c.weights = map[int64]kept{}
	}
	for i, x := range ready {
		c.weights[x.ID] = kept{weights[i], now}
	}
	for id, k := range c.weights {
		if now.Sub(k.used) > forgetAfter {
			delete(c.weights, id)
		}
	}
}

// toMembers is a stored calendar (session IDs) in the member ids of
// sessions (their indexes); slots of other sessions are unassigned.
func toMembers(cal []int64, sessions []Session) *calendar.Calendar {
	member := make(map[int64]uint16, len(sessions))
	for i, x := range sessions {
		member[x.ID] = uint16(i)
	}
	out := calendar.Empty()
	for j, id := range cal {
		if m, ok := member[id]; ok && j < calendar.Slots {
			out[j] = m
		}
	}
	return out
}

// MaxBoundary is the largest boundary predicted from sync samples: a
// sender's samples (a bug, an event number near 2^64−1, a huge rate) can
// push the boundaries no further, so that epochs can always go on, each
// boundary above the last, with 2^63 numbers to spare.
const MaxBoundary = 1 << 63

// boundary predicts the next epoch's first event number from the sync
// samples (senders told apart by source id), at most MaxBoundary, and
// above the current epoch's boundary so that epochs stay ordered;
// without samples, just above it.
func (c *Calendars) boundary(in EpochInput) uint64 {
	p := calendar.Predictor{Lead: c.Lead, Guard: c.Guard, Slack: c.Slack}
	for _, s := range in.Sync {
		p.Add(strconv.FormatUint(uint64(s.Source), 10), calendar.Sample{EventNumber: s.Event, RateHz: s.Rate,
			SenderClock: s.SenderTime, Received: s.Time.UnixNano()})
	}
	b, err := p.Boundary(in.Now.UnixNano())
	if err != nil {
		b = 0
	}
	b = min(b, MaxBoundary)
	if in.Current != nil && in.Current.Boundary < math.MaxUint64 {
		b = max(b, in.Current.Boundary+1)
	}
	return b
}
