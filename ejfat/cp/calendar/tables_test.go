package calendar_test

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

var versions = []string{"lb-2025", "lb-2026"}

// model loads a version's model and a Writer for its tables.
func model(t testing.TB, version string) (func(string) (*packet.TableSpec, bool), *calendar.Writer) {
	t.Helper()
	m, err := ejfat.Model(version)
	if err != nil {
		t.Fatal(err)
	}
	w, err := calendar.NewWriter(m.Schema.TableSpec)
	if err != nil {
		t.Fatal(err)
	}
	return m.Schema.TableSpec, w
}

// testMembers are n members with MACs 0x0200000000xx, both address
// families, 16 ports from 0x4000 + 0x100·i, every third keeping the LB
// header.
func testMembers(n int) []calendar.Member {
	ms := make([]calendar.Member, n)
	for i := range ms {
		ms[i] = calendar.Member{
			ID:           uint16(10 + i),
			MAC:          [6]byte{2, 0, 0, 0, 0, byte(i)},
			IPv4:         netip.AddrFrom4([4]byte{10, 20, 0, byte(i)}),
			IPv6:         netip.AddrFrom16([16]byte{0xfd, 0, 15: byte(i)}),
			UDPBase:      0x4000 + 0x100*uint16(i),
			PortBits:     4,
			KeepLBHeader: i%3 == 0,
		}
	}
	return ms
}

// testEpochs advances through boundaries with calendars of random weights
// over the members (minimal change from one to the next), the second one
// explicit so that it leaves slots unassigned.
func testEpochs(t testing.TB, r *rand.Rand, ms []calendar.Member, boundaries ...uint64) []calendar.Epoch {
	t.Helper()
	var live []calendar.Epoch
	prev := calendar.Empty()
	for i, b := range boundaries {
		ss := make([]calendar.Session, len(ms))
		for j, m := range ms {
			ss[j] = calendar.Session{Member: m.ID, Weight: 1 + r.Float64()*10}
		}
		s := calendar.Static
		if i == 1 {
			s = calendar.Explicit
			ss[0].Demands = []calendar.SlotRange{{Index: 3, Length: 100}, {Index: -1, Length: 50}}
		}
		l, err := calendar.Build(s, ss, prev)
		if err != nil {
			t.Fatal(err)
		}
		if live, err = calendar.Advance(live, b, &l.Calendar); err != nil {
			t.Fatal(err)
		}
		prev = &l.Calendar
	}
	return live
}

// load puts entries into fresh tables of their specs (Replace, as a data
// plane loads a whole state), failing on any the tables refuse.
func load(t testing.TB, specs func(string) (*packet.TableSpec, bool), es []packet.TableEntry) map[string]*table.Table {
	t.Helper()
	byTable := map[string][]packet.Entry{}
	for _, te := range es {
		byTable[te.Table] = append(byTable[te.Table], te.Entry)
	}
	ts := map[string]*table.Table{}
	for _, name := range []string{calendar.EpochTable, calendar.CalendarTable, calendar.MemberTable} {
		spec, _ := specs(name)
		ts[name] = table.New(spec)
		if err := ts[name].Replace(byTable[name]); err != nil {
			t.Fatal(err)
		}
	}
	return ts
}

// route is where the loaded tables send a v2 tick of LB lb: the epoch
// table (the packet package's own lookup as the oracle), then slot tick
// mod 512 of the calendar table. ok false: no epoch or no slot entry.
func route(ts map[string]*table.Table, lb uint8, tick uint64) (epoch uint32, member uint16, ok bool) {
	e, hit := ts[calendar.EpochTable].Lookup([]packet.Value{packet.V(uint64(lb)), packet.V(tick)})
	if !hit {
		return 0, 0, false
	}
	epoch = uint32(e.Params[0].Lo)
	c, hit := ts[calendar.CalendarTable].Lookup([]packet.Value{packet.V(uint64(lb)), packet.V(uint64(epoch)), packet.V(tick & 511)})
	if !hit {
		return epoch, calendar.Unassigned, true
	}
	return epoch, uint16(c.Params[0].Lo), true
}

// probeTicks are the ticks around every boundary (±1), the ends of the
// tick space, and random ones between the boundaries.
func probeTicks(r *rand.Rand, live []calendar.Epoch) []uint64 {
	ticks := []uint64{0, 1, math.MaxUint64, math.MaxUint64 - 1}
	for i, e := range live {
		ticks = append(ticks, e.Boundary-1, e.Boundary, e.Boundary+1)
		if i+1 < len(live) {
			for range 50 {
				ticks = append(ticks, e.Boundary+r.Uint64N(live[i+1].Boundary-e.Boundary))
			}
		}
	}
	for range 50 {
		ticks = append(ticks, r.Uint64())
	}
	return ticks
}

// TestEpochPrefixesExact: loaded into each model's tables, the entries of
// four live epochs send every probed tick to the epoch whose range holds
// it (EpochOf) and to the member its calendar names for the tick's slot;
// another LB's ticks miss. Boundaries as E2SAR's µs clocks make them and
// small ones.
func TestEpochPrefixesExact(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	ms := testMembers(7)
	for _, version := range versions {
		specs, w := model(t, version)
		for _, bs := range [][]uint64{
			{1_764_000_000_000_000, 1_764_000_000_812_345, 1_764_000_001_799_999, 1_764_000_002_800_000},
			{16, 32, 1000, 1 << 40},
			{5},
		} {
			live := testEpochs(t, r, ms, bs...)
			es, err := w.Entries(3, live, ms)
			if err != nil {
				t.Fatal(err)
			}
			ts := load(t, specs, es)
			for _, tick := range probeTicks(r, live) {
				e := &live[calendar.EpochOf(live, tick)]
				epoch, member, ok := route(ts, 3, tick)
				if !ok || epoch != e.ID() || member != e.Calendar[tick&511] {
					t.Fatalf("%s %v: tick %d went to epoch %d member %d (%v), want epoch %d member %d", version, bs, tick, epoch, member, ok, e.ID(), e.Calendar[tick&511])
				}
				if _, _, ok := route(ts, 2, tick); ok {
					t.Fatalf("%s: LB 2's tick %d hit LB 3's epochs", version, tick)
				}
			}
		}
	}
}

// TestEntriesScript: the entries written as a table_add script and read
// back by the loaders' parser are the same entries; the models' size
// limits hold for eight LB instances of four epochs (the calendar table
// is sized for exactly that); bad input is refused.
func TestEntriesScript(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	ms := testMembers(30)
	for _, version := range versions {
		specs, w := model(t, version)
		var all []packet.TableEntry
		for lb := range uint8(8) {
			es, err := w.Entries(lb, testEpochs(t, r, ms, 10, 1e6, 2e6, 3e6), ms)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, es...)
		}
		load(t, specs, all)
		var script bytes.Buffer
		if err := packet.FormatEntries(&script, all, specs); err != nil {
			t.Fatal(err)
		}
		back, err := packet.ParseEntries("generated", &script, specs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range back {
			back[i].Entry.Line = 0
		}
		if !equalEntries(back, all) {
			t.Fatalf("%s: the script reads back differently", version)
		}
		if _, err := w.Entries(0, testEpochs(t, r, ms, 5), ms[1:]); err == nil {
			t.Errorf("%s: a calendar naming a member without entry accepted", version)
		}
		if _, err := w.Entries(0, nil, append(ms[:1:1], ms[0])); err == nil {
			t.Errorf("%s: a member twice accepted", version)
		}
	}
	_, w := model(t, "lb-2025")
	if _, err := w.Entries(8, nil, nil); err == nil {
		t.Error("lb-2025: LB 8 accepted in a 3-bit lb_id")
	}
	if _, err := calendar.NewWriter(func(string) (*packet.TableSpec, bool) { return nil, false }); err == nil {
		t.Error("a model without the tables accepted")
	}
}

func equalEntries(a, b []packet.TableEntry) bool {
	return slices.EqualFunc(a, b, func(x, y packet.TableEntry) bool {
		return x.Table == y.Table && x.Entry.Action == y.Entry.Action && x.Entry.Priority == y.Entry.Priority &&
			slices.Equal(x.Entry.Keys, y.Entry.Keys) && slices.Equal(x.Entry.Params, y.Entry.Params)
	})
}

// TestDiffEpochChange: over a run of epoch changes (weights walking, a
// member leaving and coming back), applying the diff
// phase by phase (added, modified, deleted) ends in exactly the new
// state, and at every phase the ticks of the epochs that stay live (below
// the new boundary, from the new oldest one on) still reach the member
// they reached before: an epoch change splits no event already sent.
func TestDiffEpochChange(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	ms := testMembers(9)
	for _, version := range versions {
		specs, w := model(t, version)
		live := testEpochs(t, r, ms, 1e6)
		old, err := w.Entries(1, live, ms)
		if err != nil {
			t.Fatal(err)
		}
		changes := 0
		weights := make([]float64, len(ms))
		for j := range weights {
			weights[j] = 1 + r.Float64()
		}
		for k := range 12 {
			ss := make([]calendar.Session, len(ms)-k%2) // a member leaves and comes back
			for j := range ss {
				weights[j] *= 0.9 + 0.2*r.Float64()
				ss[j] = calendar.Session{Member: ms[j].ID, Weight: weights[j]}
			}
			l, err := calendar.Build(calendar.Static, ss, &live[len(live)-1].Calendar)
			if err != nil {
				t.Fatal(err)
			}
			next, err := calendar.Advance(live, live[len(live)-1].Boundary+1e6+r.Uint64N(1e6), &l.Calendar)
			if err != nil {
				t.Fatal(err)
			}
			es, err := w.Entries(1, next, ms)
			if err != nil {
				t.Fatal(err)
			}
			d := calendar.Compare(old, es)
			changes += d.Len()
			state := map[string]packet.TableEntry{}
			for _, e := range old {
				state[key(e)] = e
			}
			sent := probeTicks(r, next[:len(next)-1])
			sent = slices.DeleteFunc(sent, func(x uint64) bool { return x < next[0].Boundary || x >= next[len(next)-1].Boundary })
			want := routes(t, specs, old, sent)
			for phase, list := range [][]packet.TableEntry{d.Added, d.Modified, d.Deleted} {
				for _, e := range list {
					if phase == 2 {
						delete(state, key(e))
					} else {
						state[key(e)] = e
					}
				}
				if got := routes(t, specs, slices.Collect(maps.Values(state)), sent); !slices.Equal(got, want) {
					t.Fatalf("%s epoch %d: after phase %d sent ticks go elsewhere", version, k, phase)
				}
			}
			if !sameState(state, es) {
				t.Fatalf("%s epoch %d: the diff does not lead to the new state", version, k)
			}
			if e := calendar.Compare(es, es); e.Len() != 0 {
				t.Fatalf("the diff of a state with itself: %d changes", e.Len())
			}
			old, live = es, next
		}
		t.Logf("%s: %.1f table changes per epoch change", version, float64(changes)/12)
	}
}

func key(e packet.TableEntry) string {
	return fmt.Sprint(e.Table, e.Entry.Keys, e.Entry.Priority)
}

// sameState: state holds exactly the entries es.
func sameState(state map[string]packet.TableEntry, es []packet.TableEntry) bool {
	if len(state) != len(es) {
		return false
	}
	for _, e := range es {
		if !equalEntries([]packet.TableEntry{state[key(e)]}, []packet.TableEntry{e}) {
			return false
		}
	}
	return true
}

// routes is the member each tick of LB 1 reaches with entries es.
func routes(t testing.TB, specs func(string) (*packet.TableSpec, bool), es []packet.TableEntry, ticks []uint64) []uint16 {
	ts := load(t, specs, es)
	out := make([]uint16, len(ticks))
	for i, tick := range ticks {
		_, out[i], _ = route(ts, 1, tick)
	}
	return out
}

// BenchmarkEpochChange: what the CP does at an epoch change of one LB,
// beyond building the calendar: the live epochs' entries (four epochs of
// 16 members) and their diff from the previous state.
func BenchmarkEpochChange(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 7))
	_, w := model(b, "lb-2026")
	ms := testMembers(16)
	live := testEpochs(b, r, ms, 1e15, 1e15+8e5, 1e15+17e5, 1e15+26e5)
	prev, err := w.Entries(0, live, ms)
	if err != nil {
		b.Fatal(err)
	}
	next, err := calendar.Advance(live, 1e15+35e5, &live[3].Calendar)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var d calendar.Diff
	for b.Loop() {
		es, err := w.Entries(0, next, ms)
		if err != nil {
			b.Fatal(err)
		}
		d = calendar.Compare(prev, es)
	}
	b.ReportMetric(float64(d.Len()), "changes/op")
}
