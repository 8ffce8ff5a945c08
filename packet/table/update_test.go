package table

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dragonet-go/nsc/packet"
)

// refSameMatch is the oracle of an entry's identity, from the definitions:
// two entries are one when they match the same keys at the same priority.
func refSameMatch(spec *packet.TableSpec, a, b *packet.Entry) bool {
	if a.Priority != b.Priority {
		return false
	}
	for i, k := range spec.Keys {
		x, y := a.Keys[i], b.Keys[i]
		switch k.Kind {
		case packet.Exact:
			if x.Value != y.Value {
				return false
			}
		case packet.LPM:
			if x.PrefixLen != y.PrefixLen {
				return false
			}
			for b := 0; b < x.PrefixLen; b++ {
				if x.Value.Bit(k.Width-1-b) != y.Value.Bit(k.Width-1-b) {
					return false
				}
			}
		case packet.Ternary:
			for b := 0; b < k.Width; b++ {
				if x.Mask.Bit(b) != y.Mask.Bit(b) || x.Mask.Bit(b) && x.Value.Bit(b) != y.Value.Bit(b) {
					return false
				}
			}
		case packet.Range:
			if x.Lo != y.Lo || x.Hi != y.Hi {
				return false
			}
		}
	}
	return true
}

// refFind is the index in es of the entry with e's match, -1 if none.
func refFind(spec *packet.TableSpec, es []packet.Entry, e *packet.Entry) int {
	return slices.IndexFunc(es, func(x packet.Entry) bool { return refSameMatch(spec, &x, e) })
}

// refApply is Apply by the oracle: es changed by us, or false where Apply
// must refuse the batch.
func refApply(spec *packet.TableSpec, es []packet.Entry, us []Update) ([]packet.Entry, bool) {
	es = slices.Clone(es)
	for _, u := range us {
		i := refFind(spec, es, &u.Entry)
		switch {
		case u.Kind == InsertEntry && i < 0 && (spec.Size == 0 || len(es) < spec.Size):
			es = append(es, u.Entry)
		case u.Kind == ModifyEntry && i >= 0:
			es[i] = u.Entry
		case u.Kind == DeleteEntry && i >= 0:
			es = slices.Delete(es, i, i+1)
		default:
			return nil, false
		}
	}
	return es, true
}

// TestApplyMatchesReference: random batches of inserts, modifies and
// deletes (most of them right, some not) on a table of each reference
// spec; after each, the entries are the oracle's, or unchanged where it
// refuses the batch, and lookups answer as refLookup over them.
func TestApplyMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, spec := range refSpecs {
		spec.Actions = []packet.ActionSpec{{Name: "NoAction", Params: nil}, {Name: "set", Params: []packet.Param{{Name: "id", Width: 32}}}}
		spec.Size = 60
		tb := New(spec)
		var es []packet.Entry
		line, refused, hits := 0, 0, 0
		for range 40 {
			var us []Update
			for range 1 + r.IntN(12) {
				line++
				u := Update{Kind: InsertEntry, Entry: randEntry(r, spec, line)}
				if len(es) > 0 && r.IntN(2) == 0 {
					// Name an entry there by a match written otherwise.
					u.Kind = UpdateKind(1 + r.IntN(2))
					old := es[r.IntN(len(es))]
					u.Entry.Keys, u.Entry.Priority = slices.Clone(old.Keys), old.Priority
					for j, k := range spec.Keys {
						m := &u.Entry.Keys[j]
						care := m.Mask
						switch k.Kind {
						case packet.LPM:
							care = packet.PrefixMask(k.Width, m.PrefixLen)
						case packet.Ternary:
						default:
							continue
						}
						noise := packet.Value{Hi: r.Uint64(), Lo: r.Uint64()}.And(packet.Mask(k.Width)).And(care.Not())
						m.Value = m.Value.And(care).Or(noise)
					}
				}
				us = append(us, u)
			}
			want, ok := refApply(spec, es, us)
			err := tb.Apply(us)
			if ok != (err == nil) {
				t.Fatalf("%s: Apply(%+v) = %v; the oracle says ok %v", spec.Name, us, err, ok)
			}
			if ok {
				es = want
			} else {
				refused++
			}
			if diff := cmp.Diff(es, tb.Entries(), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s: entries (-oracle +table):\n%s", spec.Name, diff)
			}
			hits += checkLookups(t, r, tb, es, 100)
		}
		if refused == 0 || refused == 40 || hits == 0 {
			t.Errorf("%s: %d of 40 batches refused, %d hits: the test tests too little", spec.Name, refused, hits)
		}
		spec.Size = 0
	}
}

// TestConcurrentApply: readers look up while batches move every entry to
// the next generation g: keys 0..n-1 when g is even, 1..n when odd, each
// entry naming g. A batch deletes the key the last generation had alone,
// inserts the next one's, and modifies the keys both share, in key order.
// Readers, sweeping the keys in the same order, must find each key's entry
// whole and never an older generation after a newer one: a batch half
// made would show as one. Run with -race.
func TestConcurrentApply(t *testing.T) {
	spec := &packet.TableSpec{Name: "gen", Keys: []packet.KeySpec{{Name: "k", Width: 32, Kind: packet.Exact}},
		Actions: []packet.ActionSpec{{Name: "set", Params: []packet.Param{{Name: "gen", Width: 32}}}}}
	tb := New(spec)
	const n = 64
	entry := func(k, g uint64) packet.Entry {
		return packet.Entry{Keys: exactKeys(packet.V(k)), Params: []packet.Value{packet.V(g)}}
	}
	var us []Update
	for k := range uint64(n) {
		us = append(us, Update{InsertEntry, entry(k, 0)})
	}
	if err := tb.Apply(us); err != nil {
		t.Fatal(err)
	}
	stop := readWhile(func(keys []packet.Value) bool {
		last := uint64(0)
		for k := range uint64(n + 1) {
			keys[0] = packet.V(k)
			e, hit := tb.Lookup(keys)
			if !hit {
				if k > 0 && k < n {
					t.Errorf("Lookup(%d) missed", k)
					return false
				}
				continue
			}
			g := e.Params[0].Lo
			if e.Keys[0].Value != keys[0] || k == 0 && g%2 != 0 || k == n && g%2 != 1 || g < last {
				t.Errorf("Lookup(%d) = %+v after generation %d", k, e, last)
				return false
			}
			last = g
		}
		return true
	})
	defer stop()
	for g := uint64(1); g < 300; g++ {
		gone, added := (1-g%2)*n, g%2*n
		us = append(us[:0], Update{DeleteEntry, entry(gone, 0)})
		for k := uint64(1); k < n; k++ {
			us = append(us, Update{ModifyEntry, entry(k, g)})
		}
		us = append(us, Update{InsertEntry, entry(added, g)})
		if err := tb.Apply(us); err != nil {
			t.Fatal(err)
		}
	}
}

// TestApplyErrors: what a batch refuses, named by its line or place in
// the batch, leaves the table as it was; a delete frees a place for an
// insert of the same batch; the one-entry forms are batches of one.
func TestApplyErrors(t *testing.T) {
	spec := &packet.TableSpec{Name: "t", Keys: []packet.KeySpec{{Name: "k", Width: 8, Kind: packet.Exact}}, Size: 2,
		Actions: []packet.ActionSpec{{Name: "set", Params: []packet.Param{{Name: "v", Width: 8}}}}}
	e := func(k, v uint64, line int) packet.Entry {
		return packet.Entry{Keys: exactKeys(packet.V(k)), Params: []packet.Value{packet.V(v)}, Line: line}
	}
	tb := New(spec)
	if err := tb.Apply([]Update{{InsertEntry, e(1, 1, 0)}, {InsertEntry, e(2, 2, 0)}}); err != nil {
		t.Fatal(err)
	}
	// Full: a delete (its action and params unread) makes room.
	if err := tb.Apply([]Update{{DeleteEntry, packet.Entry{Keys: exactKeys(packet.V(1)), Action: 9}}, {InsertEntry, e(3, 3, 0)}}); err != nil {
		t.Fatal(err)
	}
	before := tb.Entries()
	for _, tc := range []struct {
		name string
		us   []Update
		want string
		is   error
	}{
		{"full", []Update{{ModifyEntry, e(2, 7, 0)}, {InsertEntry, e(4, 4, 0)}}, "table t: update 1: table full (size 2)", packet.ErrTableFull},
		{"duplicate", []Update{{ModifyEntry, e(2, 7, 0)}, {InsertEntry, e(2, 4, 12)}}, "table t: entry at line 12: duplicate entry of entry 0", packet.ErrDuplicateEntry},
		{"modify of none", []Update{{ModifyEntry, e(1, 7, 0)}}, "table t: update 0: no entry with this match", packet.ErrNoEntry},
		{"delete of none", []Update{{DeleteEntry, e(2, 0, 0)}, {DeleteEntry, e(2, 0, 5)}}, "table t: entry at line 5: no entry with this match", packet.ErrNoEntry},
		{"invalid modify", []Update{{ModifyEntry, e(2, 256, 0)}}, "table t: update 0: action set: param v: 256 wider than 8 bits", nil},
		{"invalid delete", []Update{{DeleteEntry, e(256, 0, 0)}}, "table t: update 0: key k: value 256 wider than 8 bits", nil},
		{"unknown kind", []Update{{UpdateKind(7), e(2, 0, 0)}}, "table t: update 0: unknown update kind 7", nil},
	} {
		err := tb.Apply(tc.us)
		if err == nil || err.Error() != tc.want || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: Apply = %v; want %s", tc.name, err, tc.want)
		}
		if diff := cmp.Diff(before, tb.Entries()); diff != "" {
			t.Errorf("%s: a refused batch changed the table (-before +after):\n%s", tc.name, diff)
		}
	}
	if err := tb.Modify(e(2, 9, 0)); err != nil {
		t.Fatal(err)
	}
	if err := tb.Delete(e(3, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := tb.Insert(e(5, 5, 0)); err != nil {
		t.Fatal(err)
	}
	want := []packet.Entry{e(2, 9, 0), e(5, 5, 0)}
	if diff := cmp.Diff(want, tb.Entries()); diff != "" {
		t.Errorf("after Modify, Delete, Insert (-want +got):\n%s", diff)
	}
}
