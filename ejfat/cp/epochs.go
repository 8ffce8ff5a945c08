package cp

import (
	"fmt"
	"log"
	"math"
	"slices"
	"time"
)

// EpochInput is what an Epocher decides a reservation's next epoch from.
type EpochInput struct {
	Now      time.Time
	Strategy string    // dynamic, static or explicit
	Sessions []Session // the ready ones, by ID, each with its latest State
	Current  *Epoch    // the newest epoch; nil before the first
	Sync     []SyncSample
}

// Epocher computes calendars and epoch boundaries (Calendars, over
// package ejfat/cp/calendar, by default). The CP calls it once per
// EpochInterval for each reservation.
type Epocher interface {
	// Next returns the next epoch's calendar (Slots session IDs, 0 = drop)
	// and the event number it starts at. A calendar equal to the current
	// one starts no new epoch.
	Next(in EpochInput) (calendar []int64, boundary uint64, err error)
}

// ready says whether session x counts for calendars at now.
func (c *CP) ready(x Session, now time.Time) bool {
	return x.State != nil && x.State.Ready && now.Sub(x.State.Time) <= c.cfg.ReadyTimeout
}

// silentSince is when session x last reported, or registered, but not
// before the CP started: the time the CP was down does not count, so a
// CP that restarts after an outage longer than DeleteTimeout keeps its
// sessions (each has DeleteTimeout from the start to report).
func (c *CP) silentSince(x Session) time.Time {
	if t := x.LastSeen(); t.After(c.started) {
		return t
	}
	return c.started
}

// wallClock is the sync sample a reservation without sync messages is
// predicted from, as udplbd2 seeds one at reservation: event number =
// the time in µs since the Unix epoch, at 1 MHz. That is E2SAR's
// convention (its senders number events by their clock's µs), so
// boundaries land where such senders' events are. Events of a sender
// numbering from 0 without sync messages fall below every boundary: they
// go by the newest epoch's calendar (calendar.EpochOf's catch-all), so a
// new calendar applies to them at once rather than at a boundary.
func wallClock(t time.Time) SyncSample {
	return SyncSample{Time: t, Event: uint64(t.UnixMicro()), Rate: 1_000_000, SenderTime: t.UnixNano()}
}

// staleSync is how long after its latest sync message a sender counts as
// stopped: three of the once-a-second messages nsc send and E2SAR send.
const staleSync = 3 * time.Second

// horizon is how far ahead an epoch's range counts as reachable: the
// event numbers the senders reach in an hour at their reported rates.
const horizon = time.Hour

// reach is how far the senders are by their latest sync messages: the
// least event number they reached (a sender's message says the latest
// event it sent) and the most they may reach within horizon at their
// reported rates. A sender silent for staleSync has stopped and does not
// count; with none left (ok false), the wall clock's µs at 1 MHz stand
// for the senders (E2SAR's numbering, and the CP's wallClock sample).
func reach(samples []SyncSample, now time.Time) (reached, ahead uint64, ok bool) {
	latest := map[uint32]SyncSample{}
	for _, s := range samples {
		if now.Sub(s.Time) <= staleSync && !s.Time.Before(latest[s.Source].Time) {
			latest[s.Source] = s
		}
	}
	reached, rate := uint64(max(0, now.UnixMicro())), uint64(1_000_000)
	if len(latest) > 0 {
		reached, rate = math.MaxUint64, 1
		for _, s := range latest {
			reached, rate = min(reached, s.Event), max(rate, uint64(s.Rate))
		}
	}
	return reached, reached + min(rate*uint64(horizon/time.Second), math.MaxUint64-reached), len(latest) > 0
}

// fromClock says whether e's boundary is in the wall clock's µs when e
// began: within the horizon after it, as the CP's wallClock sample
// predicts boundaries.
func fromClock(e Epoch) bool {
	at := uint64(max(0, e.Created.UnixMicro()))
	return e.Boundary >= at && e.Boundary-at <= uint64(horizon/time.Microsecond)
}

// inForce is the number of the newest of epochs (oldest first) that no
// older one can follow: every event the senders send from now on goes by
// it or a newer one. An older epoch's range is over when it ends at or
// below the event number the senders reached, and out of their reach
// when it begins beyond the horizon (their events below the oldest
// boundary go by the newest epoch, the data plane's catch-all). 0 when
// there is no epoch.
func inForce(epochs []Epoch, samples []SyncSample, now time.Time) uint64 {
	reached, ahead, _ := reach(samples, now)
	for i := len(epochs) - 1; i >= 0; i-- {
		over := true
		for j := range i { // epochs[j]'s range is [its boundary, the next one's)
			over = over && (epochs[j+1].Boundary <= reached || epochs[j].Boundary > ahead)
		}
		if over {
			return epochs[i].Number
		}
	}
	return 0
}

// pruneEvery is how often old samples are deleted.
const pruneEvery = time.Minute

// Tick does the CP's periodic work: frees expired reservations, deletes
// silent sessions, starts new epochs, programs the data plane, prunes old
// samples.
func (c *CP) Tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	for _, r := range c.store.Reservations() {
		if r.Expired(now) {
			c.logErr("free expired reservation", c.store.Free(r.ID, now))
			continue
		}
		var ready []Session
		for _, x := range c.store.Sessions(r.ID) {
			switch {
			case now.Sub(c.silentSince(x)) > c.cfg.DeleteTimeout:
				c.logErr("delete silent session", c.store.Deregister(x.ID))
			case c.ready(x, now):
				ready = append(ready, x)
			}
		}
		c.logErr("new epoch", c.nextEpoch(r, ready, now))
	}
	c.program()
	if now.Sub(c.pruned) >= pruneEvery {
		c.logErr("prune", c.store.Prune(now.Add(-c.cfg.Retention)))
		c.pruned = now
	}
}

func (c *CP) logErr(what string, err error) {
	if err != nil {
		log.Printf("nsc cp: %s: %v", what, err)
	}
}

// nextEpoch asks the Epocher for r's next epoch and stores it if its
// calendar differs from the current one.
func (c *CP) nextEpoch(r Reservation, ready []Session, now time.Time) error {
	in := EpochInput{Now: now, Strategy: r.Strategy, Sessions: ready, Sync: c.store.Sync(r.ID)}
	_, ahead, synced := reach(in.Sync, now)
	if len(in.Sync) == 0 {
		in.Sync = []SyncSample{wallClock(r.Created)}
	}
	rebase := false
	if es := c.store.Epochs(r.ID); len(es) > 0 {
		in.Current = &es[len(es)-1]
		// The live boundaries came from the wall clock's µs (before the
		// first sync message) and are beyond the reach of senders that
		// number from 0, so all their events go by the newest epoch and
		// a new calendar would apply at once, to events in flight too.
		// The newest epoch then begins at 0 instead, the older ones
		// retire, and the new one begins at a boundary predicted from
		// the senders' own messages. (Boundaries from sync messages stay
		// above the last, whatever a sender reports next.)
		if rebase = synced && es[0].Boundary > ahead && fromClock(es[0]); rebase {
			in.Current.Boundary = 0
		}
	}
	cal, boundary, err := c.cfg.Epocher.Next(in)
	if err != nil {
		return err
	}
	if len(cal) != Slots {
		return fmt.Errorf("LB %d: the epocher made a calendar of %d slots, not %d", r.ID, len(cal), Slots)
	}
	if in.Current != nil && slices.Equal(cal, in.Current.Calendar) {
		return nil
	}
	if in.Current != nil && boundary <= in.Current.Boundary {
		return fmt.Errorf("LB %d: the epocher's boundary %d is not above the current one, %d", r.ID, boundary, in.Current.Boundary)
	}
	if in.Current == nil && !slices.ContainsFunc(cal, func(s int64) bool { return s != 0 }) {
		// No epoch yet and no one to send to: the first epoch waits for a
		// ready session, so that its range begins at the first events
		// rather than leaving them to an epoch that drops them all.
		return nil
	}
	e := Epoch{Number: 1, Boundary: boundary, Created: now, Calendar: cal}
	if in.Current != nil {
		e.Number = in.Current.Number + 1
	}
	add := c.store.AddEpoch
	if rebase {
		add = c.store.RebaseEpoch
	}
	if err := add(r.ID, e); err != nil {
		return err
	}
	c.metrics.epochs.WithLabelValues(lbLabel(r.ID)).Inc()
	return nil
}
