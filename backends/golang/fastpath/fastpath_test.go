package fastpath_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

func lbSchema(t *testing.T) *packet.Schema {
	g, ok := testutil.Model(t, "ejfat/lb-2025.nsc").Graph("LB2025")
	if !ok {
		t.Fatal("no LB2025")
	}
	return g.Schema
}

func TestCheckTables(t *testing.T) {
	s := lbSchema(t)
	ts, err := fastpath.CheckTables(s, nil)
	if err != nil || len(ts) != len(s.Tables) {
		t.Fatalf("nil tables: %d tables, %v; want %d empty ones", len(ts), err, len(s.Tables))
	}
	for i, tb := range ts {
		if tb.Spec().Name != s.Tables[i].Spec.Name {
			t.Errorf("table %d is %s, want %s", i, tb.Spec().Name, s.Tables[i].Spec.Name)
		}
	}
	if _, err := fastpath.CheckTables(s, ts[1:]); err == nil || !strings.Contains(err.Error(), "tables given") {
		t.Errorf("one table short: %v", err)
	}
	swapped := append([]*table.Table(nil), ts...)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	if _, err := fastpath.CheckTables(s, swapped); err == nil || !strings.HasPrefix(err.Error(), "table 0: ") {
		t.Errorf("tables out of order: %v", err)
	}
	if got, err := fastpath.CheckTables(s, ts); err != nil || &got[0] != &ts[0] {
		t.Errorf("the schema's own tables: %v (same slice: %v)", err, err == nil && &got[0] == &ts[0])
	}
}

func TestNamesEach(t *testing.T) {
	nm := fastpath.Names{
		Nodes:   []string{"a", "b", "c"},
		Sinks:   []string{"out"},
		Drops:   []fastpath.DropSite{{Node: "b", Reason: "bad"}, {Node: "c", Reason: "worse"}},
		Counts:  []string{"x", "y"},
		CountOf: []int{0, 2, 2},
	}
	runs := []uint64{5, 3, 4}
	counted := make([]uint64, 2)
	nm.Counted(runs, counted)
	if diff := cmp.Diff([]uint64{0, 7}, counted); diff != "" {
		t.Errorf("Counted (-want +got):\n%s", diff)
	}
	var got []string
	nm.Each(runs, []uint64{0}, []uint64{0, 2}, func(kind, name, reason string, n uint64) {
		got = append(got, strings.Join([]string{kind, name, reason, string(rune('0' + n))}, "/"))
	})
	want := []string{"node/a//5", "node/b//3", "node/c//4", "drop/c/worse/2", "count/y//7"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Each (-want +got):\n%s", diff)
	}
}

// TestKeep: an event Keep took survives the Places after it, and Reuse
// gives its buffer to a later event.
func TestKeep(t *testing.T) {
	s := fastpath.NewState(&packet.StateDef{Name: "events", Max: 1 << 20, Timeout: time.Second, Events: 4, Bytes: 1 << 20})
	place := func(n uint64, b byte) []byte {
		key := fastpath.StateKey{n}
		port, ev := s.Place(&key, 100, 0, bytes.Repeat([]byte{b}, 100))
		if port != packet.PlaceComplete {
			t.Fatalf("event %d: port %d", n, port)
		}
		return ev
	}
	if s.Keep() != nil {
		t.Error("Keep before any event")
	}
	place(1, 1)
	kept := s.Keep()
	if s.Keep() != nil {
		t.Error("Keep twice")
	}
	second := place(2, 2)
	place(3, 3) // the second's buffer goes back to the state, not the kept one
	if !bytes.Equal(kept, bytes.Repeat([]byte{1}, 100)) {
		t.Errorf("the kept event changed: % x…", kept[:4])
	}
	if &second[0] == &kept[0] {
		t.Error("a later event got the kept buffer")
	}
	s.Reuse(kept)
	// Events in progress take pooled buffers; the state holds three.
	for n := uint64(4); n < 7; n++ {
		key := fastpath.StateKey{n}
		if port, _ := s.Place(&key, 100, 0, kept[:50]); port != packet.PlacePlaced {
			t.Fatalf("event %d: port %d", n, port)
		}
	}
	reused := false
	for n := uint64(4); n < 7; n++ {
		key := fastpath.StateKey{n}
		port, ev := s.Place(&key, 100, 50, bytes.Repeat([]byte{byte(n)}, 50))
		if port != packet.PlaceComplete || ev[0] != 1 || ev[99] != byte(n) {
			t.Fatalf("event %d: port %d", n, port)
		}
		reused = reused || &ev[0] == &kept[0]
	}
	if !reused {
		t.Error("Reuse: no event took the buffer back")
	}
}

// TestExpiry: expiry runs only when something may be due, and whatever
// began or finished since is: an event begun in an empty state times out
// a timeout later, at the first segment after, to the nanosecond, and its
// key is forgotten a timeout after that; segments in between expire
// nothing. Twice: the second time from a state whose last expiry left
// nothing due.
func TestExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	s := fastpath.NewState(&packet.StateDef{Name: "events", Max: 1 << 20, Timeout: time.Second, Events: 4, Bytes: 1 << 20})
	s.Clock = func() time.Time { return now }
	place := func(n uint64, off uint64) int {
		key := fastpath.StateKey{n}
		port, _ := s.Place(&key, 100, off, make([]byte, 10))
		return port
	}
	for round := range uint64(2) {
		base := 100 * round
		if s.InProgress() != 0 {
			t.Fatalf("round %d: %d events in progress", round, s.InProgress())
		}
		start, before := now, s.TimedOut
		if p := place(base+1, 0); p != packet.PlacePlaced {
			t.Fatalf("round %d: first segment: port %d", round, p)
		}
		now = start.Add(time.Second - time.Nanosecond)
		if p := place(base+2, 0); p != packet.PlacePlaced || s.TimedOut != before {
			t.Fatalf("round %d: 1 ns before the timeout: port %d, %d timed out", round, p, s.TimedOut-before)
		}
		now = start.Add(time.Second)
		if p := place(base+3, 0); p != packet.PlacePlaced || s.TimedOut != before+1 {
			t.Fatalf("round %d: at the timeout: port %d, %d timed out", round, p, s.TimedOut-before)
		}
		if p := place(base+1, 10); p != packet.PlaceLate {
			t.Fatalf("round %d: the timed-out event's segment: port %d, want late", round, p)
		}
		now = now.Add(2 * time.Second) // all time out, event 1's key forgotten
		if p := place(base+1, 10); p != packet.PlacePlaced || s.TimedOut != before+3 {
			t.Fatalf("round %d: a forgotten key's segment: port %d, want placed; %d timed out", round, p, s.TimedOut-before)
		}
		now = now.Add(2 * time.Second) // it times out too: nothing left
		place(base+50, 0)
		now = now.Add(2 * time.Second)
		place(base+51, 0)
		now = now.Add(4 * time.Second)
		place(base+52, 10)
		now = now.Add(4 * time.Second)
		key := fastpath.StateKey{base + 52}
		s.Place(&key, 0, 0, nil)       // a zero length: expires the rest, places nothing
		now = now.Add(2 * time.Second) // the next round's first segment forgets every key
	}
}
