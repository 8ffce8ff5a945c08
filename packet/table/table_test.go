package table

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/packet"
)

func TestMatchKindNames(t *testing.T) {
	for _, k := range []packet.MatchKind{packet.Exact, packet.LPM, packet.Ternary, packet.Range} {
		got, ok := packet.ParseMatchKind(k.String())
		if !ok || got != k {
			t.Errorf("ParseMatchKind(%q) = %v, %v", k.String(), got, ok)
		}
	}
	if _, ok := packet.ParseMatchKind("selector"); ok {
		t.Error(`ParseMatchKind("selector") ok`)
	}
	if s := packet.MatchKind(9).String(); s != "MatchKind(9)" {
		t.Errorf("MatchKind(9).String() = %q", s)
	}
}

func TestSpecValidate(t *testing.T) {
	base := func() *packet.TableSpec {
		return &packet.TableSpec{Name: "t", Keys: []packet.KeySpec{{Name: "k", Width: 16, Kind: packet.Exact}},
			Actions: []packet.ActionSpec{{Name: "a", Params: []packet.Param{{Name: "p", Width: 8}}}, {Name: "NoAction", Params: nil}}}
	}
	tests := []struct {
		name   string
		change func(*packet.TableSpec)
		want   string // substring of the error, "" for none
	}{
		{"ok", func(*packet.TableSpec) {}, ""},
		{"default ok", func(s *packet.TableSpec) { s.Default, s.DefaultParams = "a", []packet.Value{packet.V(255)} }, ""},
		{"zero width key", func(s *packet.TableSpec) { s.Keys[0].Width = 0 }, "width 0"},
		{"wide key", func(s *packet.TableSpec) { s.Keys[0].Width = 129 }, "width 129"},
		{"bad kind", func(s *packet.TableSpec) { s.Keys[0].Kind = 7 }, "unknown match kind"},
		{"repeated action", func(s *packet.TableSpec) { s.Actions[1].Name = "a" }, "repeated"},
		{"bad param", func(s *packet.TableSpec) { s.Actions[0].Params[0].Width = 0 }, "param p"},
		{"unknown default", func(s *packet.TableSpec) { s.Default = "b" }, `unknown default action "b"`},
		{"default params", func(s *packet.TableSpec) { s.Default = "a" }, "takes 1 params, got 0"},
		{"default too wide", func(s *packet.TableSpec) { s.Default, s.DefaultParams = "a", []packet.Value{packet.V(256)} }, "wider than 8"},
		{"params no default", func(s *packet.TableSpec) { s.DefaultParams = []packet.Value{packet.V(1)} }, "without a default"},
		{"negative size", func(s *packet.TableSpec) { s.Size = -1 }, "negative size"},
	}
	for _, tc := range tests {
		s := base()
		tc.change(s)
		err := s.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v; want %q", tc.name, err, tc.want)
		}
	}
}

func exactSpec() *packet.TableSpec {
	return &packet.TableSpec{
		Name:    "fwd",
		Keys:    []packet.KeySpec{{Name: "eth.type", Width: 16, Kind: packet.Exact}, {Name: "ipv6.dst", Width: 128, Kind: packet.Exact}},
		Actions: []packet.ActionSpec{{Name: "NoAction", Params: nil}, {Name: "out", Params: []packet.Param{{Name: "port", Width: 9}}}},
		Default: "NoAction",
		Size:    4,
	}
}

func exactKeys(vs ...packet.Value) []packet.KeyMatch {
	var ks []packet.KeyMatch
	for _, v := range vs {
		ks = append(ks, packet.KeyMatch{Value: v})
	}
	return ks
}

func TestInsertErrors(t *testing.T) {
	v6 := packet.Value{Hi: 0xfe80 << 48, Lo: 2}
	tests := []struct {
		name string
		e    packet.Entry
		want string
	}{
		{"key count", packet.Entry{Keys: exactKeys(packet.V(0x86dd)), Action: 0}, "1 keys, table has 2"},
		{"key width", packet.Entry{Keys: exactKeys(packet.V(0x1_0000), v6), Action: 0}, "key eth.type: value 0x10000 wider than 16 bits"},
		{"action", packet.Entry{Keys: exactKeys(packet.V(1), v6), Action: 2}, "action index 2"},
		{"param count", packet.Entry{Keys: exactKeys(packet.V(1), v6), Action: 1}, "takes 1 params, got 0"},
		{"param width", packet.Entry{Keys: exactKeys(packet.V(1), v6), Action: 1, Params: []packet.Value{packet.V(512)}}, "param port: 512 wider than 9 bits"},
		{"priority", packet.Entry{Keys: exactKeys(packet.V(1), v6), Action: 0, Priority: 3}, "priority 3 in a table without priorities"},
		{"duplicate", packet.Entry{Keys: exactKeys(packet.V(0x86dd), v6), Action: 1, Params: []packet.Value{packet.V(1)}, Line: 9}, "entry at line 9: duplicate entry of entry at line 8"},
	}
	for _, tc := range tests {
		tb := New(exactSpec())
		if err := tb.Insert(packet.Entry{Keys: exactKeys(packet.V(0x86dd), v6), Action: 0, Line: 8}); err != nil {
			t.Fatal(err)
		}
		err := tb.Insert(tc.e)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "table fwd: ") {
			t.Errorf("%s: Insert = %v; want %q", tc.name, err, tc.want)
		}
		if tb.Len() != 1 {
			t.Errorf("%s: failed Insert left %d entries", tc.name, tb.Len())
		}
	}
	tb := New(exactSpec())
	for i := range 4 {
		if err := tb.Insert(packet.Entry{Keys: exactKeys(packet.V(uint64(i)), v6), Action: 0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Insert(packet.Entry{Keys: exactKeys(packet.V(9), v6), Action: 0}); !errors.Is(err, packet.ErrTableFull) {
		t.Errorf("fifth Insert into size 4 = %v; want ErrTableFull", err)
	}
	five := make([]packet.Entry, 5)
	for i := range five {
		five[i] = packet.Entry{Keys: exactKeys(packet.V(uint64(i)), v6)}
	}
	if err := tb.Replace(five); !errors.Is(err, packet.ErrTableFull) || !strings.Contains(err.Error(), "entry 4: table full (size 4)") {
		t.Errorf("Replace with 5 = %v; want ErrTableFull at entry 4", err)
	}
	dup := []packet.Entry{{Keys: exactKeys(packet.V(1), v6)}, {Keys: exactKeys(packet.V(2), v6)}, {Keys: exactKeys(packet.V(1), v6)}}
	if err := tb.Replace(dup); !errors.Is(err, packet.ErrDuplicateEntry) || !strings.Contains(err.Error(), "entry 2: duplicate entry of entry 0") {
		t.Errorf("Replace with duplicate = %v", err)
	}
	if tb.Len() != 4 {
		t.Errorf("failed Replace changed the table to %d entries", tb.Len())
	}
}

func TestExactLookup(t *testing.T) {
	tb := New(exactSpec())
	v6 := packet.Value{Hi: 0xfe80 << 48, Lo: 2}
	es := []packet.Entry{
		{Keys: exactKeys(packet.V(0x86dd), v6), Action: 1, Params: []packet.Value{packet.V(3)}},
		{Keys: exactKeys(packet.V(0x0800), packet.V(0x0a010203)), Action: 1, Params: []packet.Value{packet.V(7)}},
	}
	if err := tb.Replace(es); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		keys []packet.Value
		hit  bool
		port uint64
	}{
		{"v6", []packet.Value{packet.V(0x86dd), v6}, true, 3},
		{"v4", []packet.Value{packet.V(0x0800), packet.V(0x0a010203)}, true, 7},
		{"bits above width ignored", []packet.Value{{Hi: 1, Lo: 0x1_0800}, packet.V(0x0a010203)}, true, 7},
		{"wrong type", []packet.Value{packet.V(0x0800), v6}, false, 0},
		{"short key", []packet.Value{packet.V(0x0800)}, false, 0},
		{"no key", nil, false, 0},
	}
	for _, tc := range tests {
		e, hit := tb.Lookup(tc.keys)
		if hit != tc.hit || e == nil {
			t.Errorf("%s: Lookup = %v, %v; want hit %v and an entry", tc.name, e, hit, tc.hit)
			continue
		}
		if hit && e.Params[0].Lo != tc.port {
			t.Errorf("%s: port %v; want %d", tc.name, e.Params[0], tc.port)
		}
		if !hit && (e.Action != 0 || len(e.Params) != 0) {
			t.Errorf("%s: miss gave %+v; want the NoAction default", tc.name, e)
		}
	}
	// Entries is a copy in insertion order: changing it changes nothing.
	got := tb.Entries()
	if diff := cmp.Diff(es, got); diff != "" {
		t.Errorf("Entries (-want +got):\n%s", diff)
	}
	got[0].Params[0] = packet.V(99)
	es[1].Keys[0] = packet.KeyMatch{Value: packet.V(1)}
	if e, _ := tb.Lookup([]packet.Value{packet.V(0x86dd), v6}); e.Params[0] != packet.V(3) {
		t.Error("Entries result aliases the table")
	}
	if _, hit := tb.Lookup([]packet.Value{packet.V(0x0800), packet.V(0x0a010203)}); !hit {
		t.Error("Replace argument aliases the table")
	}
	// Without a default, a miss gives nil.
	spec := exactSpec()
	spec.Default = ""
	if e, hit := New(spec).Lookup([]packet.Value{packet.V(1), packet.V(2)}); e != nil || hit {
		t.Errorf("miss without default = %v, %v", e, hit)
	}
}

// randEntry makes a random entry for spec with small values, so that random
// keys hit often.
func randEntry(r *rand.Rand, spec *packet.TableSpec, line int) packet.Entry {
	small := func(w int) packet.Value { return packet.Value{Lo: r.Uint64() & 0x3f}.And(packet.Mask(w)) }
	e := packet.Entry{Action: 1, Params: []packet.Value{packet.V(uint64(line))}, Line: line}
	for _, k := range spec.Keys {
		var m packet.KeyMatch
		switch k.Kind {
		case packet.Exact:
			m.Value = small(k.Width)
		case packet.LPM:
			// Put the prefix bits at the top of the key, where lpm looks.
			m.PrefixLen = r.IntN(k.Width + 1)
			m.Value = small(k.Width).Shl(uint(k.Width - 6)).And(packet.Mask(k.Width))
		case packet.Ternary:
			m.Value, m.Mask = small(k.Width), small(k.Width)
		case packet.Range:
			a, b := small(k.Width), small(k.Width)
			if a.Cmp(b) > 0 {
				a, b = b, a
			}
			m.Lo, m.Hi = a, b
		}
		e.Keys = append(e.Keys, m)
	}
	if spec.NeedsPriority() {
		e.Priority = r.IntN(8)
	}
	return e
}

func randKeys(r *rand.Rand, spec *packet.TableSpec) []packet.Value {
	var ks []packet.Value
	for _, k := range spec.Keys {
		v := packet.Value{Lo: r.Uint64() & 0x3f}
		if k.Kind == packet.LPM {
			v = v.Shl(uint(k.Width - 6)).Or(packet.Value{Lo: r.Uint64()})
		}
		ks = append(ks, v.And(packet.Mask(k.Width)))
	}
	return ks
}

// refMatches is the oracle's per-key test, written from the definitions.
func refMatches(spec *packet.TableSpec, e *packet.Entry, keys []packet.Value) bool {
	for i, k := range spec.Keys {
		v, m := keys[i], e.Keys[i]
		switch k.Kind {
		case packet.Exact:
			if v != m.Value {
				return false
			}
		case packet.LPM:
			for b := 0; b < m.PrefixLen; b++ {
				if v.Bit(k.Width-1-b) != m.Value.Bit(k.Width-1-b) {
					return false
				}
			}
		case packet.Ternary:
			for b := 0; b < k.Width; b++ {
				if m.Mask.Bit(b) && v.Bit(b) != m.Value.Bit(b) {
					return false
				}
			}
		case packet.Range:
			if v.Cmp(m.Lo) < 0 || v.Cmp(m.Hi) > 0 {
				return false
			}
		}
	}
	return true
}

// refLookup scans every entry: lowest priority, else longest prefix, else
// first inserted.
func refLookup(spec *packet.TableSpec, es []packet.Entry, keys []packet.Value) *packet.Entry {
	var best *packet.Entry
	bestLen := -1
	for i := range es {
		e := &es[i]
		if !refMatches(spec, e, keys) {
			continue
		}
		if spec.NeedsPriority() {
			if best == nil || e.Priority < best.Priority {
				best = e
			}
			continue
		}
		l := 0
		for j, k := range spec.Keys {
			if k.Kind == packet.LPM {
				l = e.Keys[j].PrefixLen
			}
		}
		if l > bestLen {
			best, bestLen = e, l
		}
	}
	return best
}

var refSpecs = []*packet.TableSpec{
	{Name: "exact", Keys: []packet.KeySpec{{Name: "a", Width: 6, Kind: packet.Exact}, {Name: "b", Width: 128, Kind: packet.Exact}}},
	{Name: "lpm", Keys: []packet.KeySpec{{Name: "dst", Width: 32, Kind: packet.LPM}}},
	{Name: "lpm128+exact", Keys: []packet.KeySpec{{Name: "vrf", Width: 4, Kind: packet.Exact}, {Name: "dst", Width: 128, Kind: packet.LPM}}},
	{Name: "lpm prio", Keys: []packet.KeySpec{{Name: "tick", Width: 64, Kind: packet.LPM}}, Priorities: true},
	{Name: "exact+lpm prio", Keys: []packet.KeySpec{{Name: "lb", Width: 3, Kind: packet.Exact}, {Name: "tick", Width: 64, Kind: packet.LPM}}, Priorities: true},
	{Name: "ternary", Keys: []packet.KeySpec{{Name: "a", Width: 8, Kind: packet.Ternary}, {Name: "b", Width: 70, Kind: packet.Ternary}}},
	{Name: "mixed", Keys: []packet.KeySpec{{Name: "a", Width: 16, Kind: packet.Exact}, {Name: "b", Width: 24, Kind: packet.LPM}, {Name: "c", Width: 9, Kind: packet.Range}, {Name: "d", Width: 6, Kind: packet.Ternary}}},
	{Name: "two lpm", Keys: []packet.KeySpec{{Name: "a", Width: 8, Kind: packet.LPM}, {Name: "b", Width: 8, Kind: packet.LPM}}},
	{Name: "exact prio", Keys: []packet.KeySpec{{Name: "a", Width: 3, Kind: packet.Exact}}, Priorities: true},
	{Name: "packed", Keys: []packet.KeySpec{{Name: "lb", Width: 3, Kind: packet.Exact}, {Name: "epoch", Width: 32, Kind: packet.Exact}, {Name: "slot", Width: 16, Kind: packet.Exact}}},
	{Name: "packed64", Keys: []packet.KeySpec{{Name: "tick", Width: 64, Kind: packet.Exact}}},
	{Name: "small ternary", Keys: []packet.KeySpec{{Name: "a", Width: 4, Kind: packet.Ternary}, {Name: "b", Width: 12, Kind: packet.Exact}}},
	{Name: "six words", Keys: []packet.KeySpec{{Name: "a", Width: 128, Kind: packet.Exact}, {Name: "b", Width: 70, Kind: packet.Exact}, {Name: "c", Width: 100, Kind: packet.LPM}}},
	{Name: "exact+range", Keys: []packet.KeySpec{{Name: "lb", Width: 3, Kind: packet.Exact}, {Name: "port", Width: 16, Kind: packet.Range}, {Name: "proto", Width: 8, Kind: packet.Exact}}},
}

func TestLookupMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, spec := range refSpecs {
		if hits := checkAgainstReference(t, r, spec, 300, 5000); hits == 0 {
			t.Errorf("%s: no lookup hit; the test tests nothing", spec.Name)
		}
	}
}

// FuzzLookup: tables of each reference spec, their entries and keys drawn
// from the fuzzer's seed, against the reference.
func FuzzLookup(f *testing.F) {
	f.Add(uint64(1), uint8(0), uint16(40))
	f.Add(uint64(2), uint8(4), uint16(300))
	f.Fuzz(func(t *testing.T, seed uint64, which uint8, n uint16) {
		spec := refSpecs[int(which)%len(refSpecs)]
		checkAgainstReference(t, rand.New(rand.NewPCG(seed, 3)), spec, int(n%512), 200)
	})
}

// checkAgainstReference fills a table of spec with up to n random entries
// and looks up random keys every way there is, against refLookup; it
// returns the hits.
func checkAgainstReference(t *testing.T, r *rand.Rand, spec *packet.TableSpec, n, lookups int) int {
	t.Helper()
	spec.Actions = []packet.ActionSpec{{Name: "NoAction", Params: nil}, {Name: "set", Params: []packet.Param{{Name: "id", Width: 32}}}}
	tb := New(spec)
	var es []packet.Entry
	for line := 1; len(es) < n && line < 10*n+10; line++ {
		e := randEntry(r, spec, line)
		err := tb.Insert(e)
		switch {
		case errors.Is(err, packet.ErrDuplicateEntry):
			continue
		case err != nil:
			t.Fatalf("%s: Insert: %v", spec.Name, err)
		}
		es = append(es, e)
	}
	return checkLookups(t, r, tb, es, lookups)
}

// checkLookups looks up random keys in tb, whose entries are es, every
// way there is, against refLookup; it returns the hits.
func checkLookups(t *testing.T, r *rand.Rand, tb *Table, es []packet.Entry, lookups int) int {
	t.Helper()
	spec := tb.Spec()
	hits := 0
	for range lookups {
		keys := randKeys(r, spec)
		got, hit := tb.Lookup(keys)
		want := refLookup(spec, es, keys)
		if hit != (want != nil) || hit && got.Line != want.Line {
			t.Fatalf("%s: Lookup(%v) = %+v, %v; want %+v", spec.Name, keys, got, hit, want)
		}
		if spec.KeyWord() {
			if got, hit := tb.LookupWord(spec.PackKeys(keys)); hit != (want != nil) || hit && got.Line != want.Line {
				t.Fatalf("%s: LookupWord(%v) = %+v, %v; want %+v", spec.Name, keys, got, hit, want)
			}
			if act, params, hit := tb.LookupWordAction(spec.PackKeys(keys)); hit != (want != nil) || hit && (act != want.Action || !slices.Equal(params, want.Params)) {
				t.Fatalf("%s: LookupWordAction(%v) = %d %v, %v; want %+v", spec.Name, keys, act, params, hit, want)
			}
		}
		if spec.KeyWords() <= packet.MaxKeyWords {
			var ws [packet.MaxKeyWords]uint64
			w := 0
			for j, k := range keys {
				k = k.And(packet.Mask(spec.Keys[j].Width))
				if spec.Keys[j].Width > 64 {
					ws[w] = k.Hi
					w++
				}
				ws[w] = k.Lo
				w++
			}
			if got, hit := tb.LookupWords(ws[0], ws[1], ws[2], ws[3]); hit != (want != nil) || hit && got.Line != want.Line {
				t.Fatalf("%s: LookupWords(%x) = %+v, %v; want %+v", spec.Name, ws, got, hit, want)
			}
			if act, params, hit := tb.LookupWordsAction(ws[0], ws[1], ws[2], ws[3]); hit != (want != nil) || hit && (act != want.Action || !slices.Equal(params, want.Params)) {
				t.Fatalf("%s: LookupWordsAction(%x) = %d %v, %v; want %+v", spec.Name, ws, act, params, hit, want)
			}
			// What generated code reads inline.
			if wl := &tb.Probes().Words; len(wl.Slots) > 0 {
				if a := probeWords(wl, ws); (a != nil) != (want != nil) || a != nil && (int(a.Action) != want.Action || !slices.Equal(a.Params, want.Params)) {
					t.Fatalf("%s: probe of Words(%x) = %+v; want %+v", spec.Name, ws, a, want)
				}
			}
			if iv := tb.Probes().Intervals; iv != nil {
				if a := probeIntervals(iv, ws); (a != nil) != (want != nil) || a != nil && (int(a.Action) != want.Action || !slices.Equal(a.Params, want.Params)) {
					t.Fatalf("%s: probe of Intervals(%x) = %+v; want %+v", spec.Name, ws, a, want)
				}
			}
			if sc := &tb.Probes().Scan; len(sc.Rows) > 0 {
				if a := scanWords(sc, ws[:len(keys)]); (a != nil) != (want != nil) || a != nil && (int(a.Action) != want.Action || !slices.Equal(a.Params, want.Params)) {
					t.Fatalf("%s: scan of Scan(%x) = %+v; want %+v", spec.Name, ws, a, want)
				}
			}
		}
		if hit {
			hits++
		}
	}
	return hits
}

// probeWords probes a WordLevel as its doc says generated code does.
func probeWords(wl *WordLevel, ws [packet.MaxKeyWords]uint64) *WordSlot {
	for i := range ws {
		ws[i] &= wl.Mask[i]
	}
	h := WordsHash(ws[0], ws[1], ws[2], ws[3])
	for m, j := uint64(len(wl.Slots)-1), h>>wl.Shift; ; j = (j + 1) & m {
		sl := &wl.Slots[j]
		if sl.Entry == 0 {
			return nil
		}
		if sl.Keys == ws {
			return sl
		}
	}
}

// probeIntervals probes an IntervalIndex as its doc says generated code
// does.
func probeIntervals(iv *IntervalIndex, ws [packet.MaxKeyWords]uint64) *SlotAction {
	v := ws[iv.At]
	ws[iv.At] = 0
	h := WordsHash(ws[0], ws[1], ws[2], ws[3])
	for m, j := uint64(len(iv.Groups)-1), h>>iv.Shift; ; j = (j + 1) & m {
		g := &iv.Groups[j]
		if g.Hi == 0 {
			return nil
		}
		if g.Keys != ws {
			continue
		}
		last := g.Lo
		for k := g.Lo; k < g.Hi && iv.Starts[k] <= v; k++ {
			last = k
		}
		if a := &iv.Acts[last]; a.Action >= 0 {
			return a
		}
		return nil
	}
}

// scanWords scans a WordScan as its doc says generated code does.
func scanWords(sc *WordScan, ks []uint64) *SlotAction {
next:
	for i := range sc.Rows {
		for j, k := range ks {
			if m := &sc.Rows[i].Match[j]; k&m.Mask != m.Val || k-m.Lo > m.Span {
				continue next
			}
		}
		return &sc.Rows[i].SlotAction
	}
	return nil
}

func TestPriorityTies(t *testing.T) {
	spec := &packet.TableSpec{Name: "acl", Keys: []packet.KeySpec{{Name: "port", Width: 16, Kind: packet.Range}},
		Actions: []packet.ActionSpec{{Name: "deny", Params: nil}, {Name: "allow", Params: nil}}}
	tb := New(spec)
	es := []packet.Entry{
		{Keys: []packet.KeyMatch{{Lo: packet.V(0), Hi: packet.V(1023)}}, Action: 0, Priority: 10, Line: 1},
		{Keys: []packet.KeyMatch{{Lo: packet.V(80), Hi: packet.V(80)}}, Action: 1, Priority: 10, Line: 2},
		{Keys: []packet.KeyMatch{{Lo: packet.V(443), Hi: packet.V(443)}}, Action: 1, Priority: 9, Line: 3},
	}
	if err := tb.Replace(es); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		port uint64
		line int
	}{{80, 1}, {443, 3}, {1000, 1}, {2000, 0}}
	for _, tc := range tests {
		got := 0
		if e, hit := tb.Lookup([]packet.Value{packet.V(tc.port)}); hit {
			got = e.Line
		}
		if got != tc.line {
			t.Errorf("port %d: entry at line %d; want %d", tc.port, got, tc.line)
		}
	}
	// The same match at another priority is allowed; at the same, refused.
	if err := tb.Insert(packet.Entry{Keys: []packet.KeyMatch{{Lo: packet.V(80), Hi: packet.V(80)}}, Priority: 1}); err != nil {
		t.Errorf("same range, new priority: %v", err)
	}
	if err := tb.Insert(packet.Entry{Keys: []packet.KeyMatch{{Lo: packet.V(80), Hi: packet.V(80)}}, Priority: 1}); !errors.Is(err, packet.ErrDuplicateEntry) {
		t.Errorf("same range and priority: %v", err)
	}
	if err := tb.Insert(packet.Entry{Keys: []packet.KeyMatch{{Lo: packet.V(9), Hi: packet.V(8)}}}); err == nil || !strings.Contains(err.Error(), "empty range") {
		t.Errorf("empty range: %v", err)
	}
	if err := tb.Insert(packet.Entry{Keys: []packet.KeyMatch{{Lo: packet.V(1), Hi: packet.V(8)}}, Priority: -1}); err == nil {
		t.Error("negative priority accepted")
	}
}

// TestConcurrentLookup swaps whole entry sets while readers look up; each
// set maps every key to its own generation, so a reader seeing a mix of two
// sets in one lookup would find a wrong key. Run with -race.
func TestConcurrentLookup(t *testing.T) {
	spec := &packet.TableSpec{Name: "gen", Keys: []packet.KeySpec{{Name: "k", Width: 32, Kind: packet.Exact}},
		Actions: []packet.ActionSpec{{Name: "set", Params: []packet.Param{{Name: "gen", Width: 32}}}}}
	tb := New(spec)
	gen := func(g uint64) []packet.Entry {
		es := make([]packet.Entry, 64)
		for i := range es {
			es[i] = packet.Entry{Keys: exactKeys(packet.V(uint64(i) + g%2)), Params: []packet.Value{packet.V(g)}}
		}
		return es
	}
	stop := readWhile(func(keys []packet.Value) bool {
		for k := range uint64(65) {
			keys[0] = packet.V(k)
			e, hit := tb.Lookup(keys)
			if hit && e.Keys[0].Value != keys[0] {
				t.Errorf("Lookup(%d) hit entry for %v", k, e.Keys[0].Value)
				return false
			}
			if hit && (k == 0 && e.Params[0].Lo%2 != 0 || k == 64 && e.Params[0].Lo%2 != 1) {
				t.Errorf("Lookup(%d) hit generation %v", k, e.Params[0])
				return false
			}
		}
		return true
	})
	defer stop()
	for g := range uint64(300) {
		if err := tb.Replace(gen(g)); err != nil {
			t.Fatal(err)
		}
	}
}

// readWhile runs sweep, in four goroutines, over and over until it
// returns false or until the returned stop is called, which waits for
// them; keys is each goroutine's own, one key long.
func readWhile(sweep func(keys []packet.Value) bool) (stop func()) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			keys := make([]packet.Value, 1)
			for {
				select {
				case <-done:
					return
				default:
				}
				if !sweep(keys) {
					return
				}
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

func TestLookupNoAlloc(t *testing.T) {
	for _, name := range []string{"exact", "lpm", "ternary"} {
		tb, keys := benchTable(name, 256)
		allocs := testing.AllocsPerRun(100, func() {
			for _, k := range keys {
				tb.Lookup(k)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: Lookup allocates %v per run", name, allocs)
		}
	}
}

// benchTable builds a table of n entries of the given kind and keys that
// hit it (and one that misses).
func benchTable(kind string, n int) (*Table, [][]packet.Value) {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	acts := []packet.ActionSpec{{Name: "NoAction", Params: nil}, {Name: "fwd", Params: []packet.Param{{Name: "port", Width: 16}}}}
	var spec *packet.TableSpec
	var es []packet.Entry
	var keys [][]packet.Value
	switch kind {
	case "exact": // like dst_filter_table: 48 + 16 + 128 bits
		spec = &packet.TableSpec{Name: kind, Actions: acts, Default: "NoAction",
			Keys: []packet.KeySpec{{Name: "eth.dst", Width: 48, Kind: packet.Exact}, {Name: "eth.type", Width: 16, Kind: packet.Exact}, {Name: "ip.dst", Width: 128, Kind: packet.Exact}}}
		for i := range n {
			k := []packet.Value{packet.V(r.Uint64() & (1<<48 - 1)), packet.V(0x86dd), {Hi: r.Uint64(), Lo: uint64(i)}}
			es = append(es, packet.Entry{Keys: exactKeys(k...), Action: 1, Params: []packet.Value{packet.V(uint64(i))}})
			keys = append(keys, k)
		}
	case "lpm": // IPv4 routes /8../32
		spec = &packet.TableSpec{Name: kind, Actions: acts, Default: "NoAction",
			Keys: []packet.KeySpec{{Name: "ip.dst", Width: 32, Kind: packet.LPM}}}
		seen := map[[2]uint64]bool{}
		for len(es) < n {
			l := 8 + r.IntN(25)
			v := packet.V(uint64(r.Uint32())).And(packet.PrefixMask(32, l))
			if seen[[2]uint64{v.Lo, uint64(l)}] {
				continue
			}
			seen[[2]uint64{v.Lo, uint64(l)}] = true
			es = append(es, packet.Entry{Keys: []packet.KeyMatch{{Value: v, PrefixLen: l}}, Action: 1, Params: []packet.Value{packet.V(uint64(len(es)))}})
			keys = append(keys, []packet.Value{v.Or(packet.V(uint64(r.Uint32())).And(packet.Mask(32 - l)))})
		}
	case "ternary": // ACL-like: 5-tuple-ish masks
		spec = &packet.TableSpec{Name: kind, Actions: acts, Default: "NoAction",
			Keys: []packet.KeySpec{{Name: "ip.src", Width: 32, Kind: packet.Ternary}, {Name: "ip.dst", Width: 32, Kind: packet.Ternary}, {Name: "dport", Width: 16, Kind: packet.Range}}}
		for i := range n {
			src, dst := packet.V(uint64(r.Uint32())), packet.V(uint64(r.Uint32()))
			lo := packet.V(uint64(r.IntN(60000)))
			es = append(es, packet.Entry{Keys: []packet.KeyMatch{{Value: src, Mask: packet.PrefixMask(32, 24)}, {Value: dst, Mask: packet.Mask(32)},
				{Lo: lo, Hi: lo.Add(packet.V(100))}}, Action: 1, Params: []packet.Value{packet.V(uint64(i))}, Priority: i})
			keys = append(keys, []packet.Value{src, dst, lo.Add(packet.V(50))})
		}
	}
	tb := New(spec)
	if err := tb.Replace(es); err != nil {
		panic(fmt.Sprintf("benchTable %s: %v", kind, err))
	}
	miss := make([]packet.Value, len(spec.Keys))
	return tb, append(keys, miss)
}

func BenchmarkLookup(b *testing.B) {
	for _, kind := range []string{"exact", "lpm", "ternary"} {
		for _, n := range []int{16, 1024} {
			b.Run(fmt.Sprintf("%s/%d", kind, n), func(b *testing.B) {
				tb, keys := benchTable(kind, n)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					tb.Lookup(keys[i])
					if i++; i == len(keys) {
						i = 0
					}
				}
			})
		}
	}
}

// TestUniformMaskLookup: a priority table whose entries share one mask per
// key (the EJFAT filters: a wildcard field_mask key and exact keys) is
// looked up through its hash index; results equal the definition's,
// priorities and shadowed duplicates included.
func TestUniformMaskLookup(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, mask := range []uint64{0, 0xf, 0x3} {
		spec := &packet.TableSpec{Name: "filter", Keys: []packet.KeySpec{{Name: "iface", Width: 4, Kind: packet.Ternary}, {Name: "dst", Width: 48, Kind: packet.Exact}, {Name: "ip", Width: 128, Kind: packet.Exact}},
			Actions: []packet.ActionSpec{{Name: "NoAction", Params: nil}, {Name: "set", Params: []packet.Param{{Name: "id", Width: 32}}}}}
		tb := New(spec)
		var es []packet.Entry
		for line := 1; len(es) < 200; line++ {
			e := packet.Entry{Action: 1, Params: []packet.Value{packet.V(uint64(line))}, Line: line, Priority: r.IntN(4), Keys: []packet.KeyMatch{
				{Value: packet.V(r.Uint64() & 0xf & mask), Mask: packet.V(mask)},
				{Value: packet.V(r.Uint64() & 7)},
				{Value: packet.Value{Hi: r.Uint64() & 1, Lo: r.Uint64() & 3}},
			}}
			if err := tb.Insert(e); errors.Is(err, packet.ErrDuplicateEntry) {
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			es = append(es, e)
		}
		if s := tb.snap.Load(); !s.indexed || len(s.index.levels) != 1 {
			t.Fatalf("mask %#x: no one-level index", mask)
		}
		// The same entries without the 128-bit key: one word, LookupWord.
		smallSpec := &packet.TableSpec{Name: "small", Keys: spec.Keys[:2], Actions: spec.Actions}
		small := New(smallSpec)
		var smallEs []packet.Entry
		for _, e := range es {
			e.Keys = e.Keys[:2]
			if err := small.Insert(e); err == nil {
				smallEs = append(smallEs, e)
			}
		}
		if s := small.snap.Load(); len(s.Packed.Slots) == 0 {
			t.Fatalf("mask %#x: no packed uniform index", mask)
		}
		smallWant := func(keys []packet.Value) *packet.Entry {
			want := refLookup(smallSpec, smallEs, keys[:2])
			if want != nil {
				for i := range smallEs {
					if refMatches(smallSpec, &smallEs[i], keys[:2]) && smallEs[i].Priority == want.Priority {
						return &smallEs[i]
					}
				}
			}
			return want
		}
		hits := 0
		for range 3000 {
			keys := []packet.Value{packet.V(r.Uint64() & 0xf), packet.V(r.Uint64() & 7), {Hi: r.Uint64() & 1, Lo: r.Uint64() & 3}}
			got, hit := tb.Lookup(keys)
			want := refLookup(spec, es, keys)
			// Among equal priorities the earlier entry wins.
			if want != nil {
				for i := range es {
					if refMatches(spec, &es[i], keys) && es[i].Priority == want.Priority {
						want = &es[i]
						break
					}
				}
			}
			if hit != (want != nil) || hit && got.Line != want.Line {
				t.Fatalf("mask %#x: Lookup(%v) = %+v, %v; want %+v", mask, keys, got, hit, want)
			}
			if got, hit := tb.LookupWords(keys[0].Lo, keys[1].Lo, keys[2].Hi, keys[2].Lo); hit != (want != nil) || hit && got.Line != want.Line {
				t.Fatalf("mask %#x: LookupWords(%v) = %+v, %v; want %+v", mask, keys, got, hit, want)
			}
			if got, hit := small.LookupWord(smallSpec.PackKeys(keys[:2])); hit != (smallWant(keys) != nil) || hit && got.Line != smallWant(keys).Line {
				t.Fatalf("mask %#x: LookupWord(%v) = %+v, %v; want %+v", mask, keys[:2], got, hit, smallWant(keys))
			}
			if hit {
				hits++
			}
		}
		if hits == 0 {
			t.Error("no hits")
		}
	}
}

// epochTable is an EJFAT epoch table as its control plane writes it: per
// LB instance, three epochs of ticks, [0, 1e6), [1e6, 2.5e6) and
// [2.5e6, 2^62), each range as the prefixes that cover it, at priority
// 64 - prefix length (longer wins).
func epochTable(t testing.TB, lbs int) (*Table, []packet.Entry) {
	spec := &packet.TableSpec{Name: "epoch_assign_table", Keys: []packet.KeySpec{{Name: "lb_id", Width: 3, Kind: packet.Exact}, {Name: "tick", Width: 64, Kind: packet.LPM}}, Priorities: true,
		Actions: []packet.ActionSpec{{Name: "do_assign_epoch", Params: []packet.Param{{Name: "epoch", Width: 32}}}, {Name: "miss", Params: nil}}}
	tb := New(spec)
	var es []packet.Entry
	bounds := []uint64{0, 1000000, 2500000, 1 << 62}
	for lb := range lbs {
		for e := range 3 {
			for lo, hi := bounds[e], bounds[e+1]-1; ; {
				n := 63 // the longest block from lo within [lo, hi]
				if lo != 0 {
					n = bits.TrailingZeros64(lo)
				}
				for lo+(1<<n)-1 > hi {
					n--
				}
				es = append(es, packet.Entry{Params: []packet.Value{packet.V(uint64(e))}, Priority: n, Line: len(es) + 1,
					Keys: []packet.KeyMatch{{Value: packet.V(uint64(lb))}, {Value: packet.V(lo), PrefixLen: 64 - n}}})
				if lo+(1<<n)-1 == hi {
					break
				}
				lo += 1 << n
			}
		}
	}
	if err := tb.Replace(es); err != nil {
		t.Fatal(err)
	}
	return tb, es
}

// TestEpochTableByIntervals: a realistic epoch table (tick ranges as
// dozens of prefixes per epoch) is indexed by intervals, and its lookups,
// at every epoch boundary and between, are the reference's.
func TestEpochTableByIntervals(t *testing.T) {
	tb, es := epochTable(t, 8)
	if tb.Probes().Intervals == nil {
		t.Fatalf("%d entries not indexed by intervals", len(es))
	}
	r := rand.New(rand.NewPCG(7, 8))
	ticks := []uint64{0, 1, 999999, 1000000, 1000001, 2499999, 2500000, 1<<62 - 1, 1 << 62, 1<<64 - 1}
	for range 2000 {
		ticks = append(ticks, r.Uint64N(3000000), r.Uint64())
	}
	for lb := range uint64(9) {
		for _, tick := range ticks {
			keys := []packet.Value{packet.V(lb), packet.V(tick)}
			want := refLookup(tb.Spec(), es, keys)
			got, hit := tb.LookupWords(lb, tick, 0, 0)
			if hit != (want != nil) || hit && got.Line != want.Line {
				t.Fatalf("lb %d tick %d: got %+v, %v; want %+v", lb, tick, got, hit, want)
			}
		}
	}
}

// BenchmarkEpochLookup: epoch tables of one and of eight LB instances
// (73 and 584 entries, a few dozen prefix lengths).
func BenchmarkEpochLookup(b *testing.B) {
	for _, lbs := range []int{1, 8} {
		tb, es := epochTable(b, lbs)
		b.Run(fmt.Sprintf("%d", len(es)), func(b *testing.B) {
			b.ReportAllocs()
			tick := uint64(0)
			for b.Loop() {
				tick += 7919
				tb.LookupWords(uint64(lbs-1), 1200000+tick%1000, 0, 0)
			}
		})
	}
}

func TestSpecShaped(t *testing.T) {
	base := func() *packet.TableSpec {
		return &packet.TableSpec{Name: "t", Keys: []packet.KeySpec{{Name: "k", Width: 16, Kind: packet.Exact}}, Size: 8,
			Actions: []packet.ActionSpec{{Name: "a", Params: []packet.Param{{Name: "p", Width: 8}}}, {Name: "NoAction", Params: nil}}}
	}
	for _, tc := range []struct {
		name   string
		change func(*packet.TableSpec)
		want   string // substring of the error, "" for none
	}{
		{"same", func(*packet.TableSpec) {}, ""},
		{"other names and size", func(s *packet.TableSpec) { s.Keys[0].Name, s.Actions[0].Params[0].Name, s.Size = "x", "y", 0 }, ""},
		{"name", func(s *packet.TableSpec) { s.Name = "u" }, "table is u, want t"},
		{"keys", func(s *packet.TableSpec) {
			s.Keys = append(s.Keys, packet.KeySpec{Name: "l", Width: 8, Kind: packet.Exact})
		}, "2 keys, want 1"},
		{"key width", func(s *packet.TableSpec) { s.Keys[0].Width = 32 }, "key 0 is 32 bits exact, want 16 bits exact"},
		{"key kind", func(s *packet.TableSpec) { s.Keys[0].Kind = packet.LPM }, "key 0 is 16 bits lpm"},
		{"actions", func(s *packet.TableSpec) { s.Actions = s.Actions[:1] }, "1 actions, want 2"},
		{"action name", func(s *packet.TableSpec) { s.Actions[1].Name = "drop" }, "action 1 is drop"},
		{"param width", func(s *packet.TableSpec) { s.Actions[0].Params[0].Width = 16 }, "action 0 is a[{p 16}], want a[{p 8}]"},
		{"params", func(s *packet.TableSpec) { s.Actions[0].Params = nil }, "action 0 is a[]"},
	} {
		o := base()
		tc.change(o)
		err := base().Shaped(o)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
