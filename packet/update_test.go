package packet

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// refSameMatch is the oracle of an entry's identity, from the definitions:
// two entries are one when they match the same keys at the same priority.
func refSameMatch(spec *TableSpec, a, b *Entry) bool {
	if a.Priority != b.Priority {
		return false
	}
	for i, k := range spec.Keys {
		x, y := a.Keys[i], b.Keys[i]
		switch k.Kind {
		case Exact:
			if x.Value != y.Value {
				return false
			}
		case LPM:
			if x.PrefixLen != y.PrefixLen {
				return false
			}
			for b := 0; b < x.PrefixLen; b++ {
				if x.Value.Bit(k.Width-1-b) != y.Value.Bit(k.Width-1-b) {
					return false
				}
			}
		case Ternary:
			for b := 0; b < k.Width; b++ {
				if x.Mask.Bit(b) != y.Mask.Bit(b) || x.Mask.Bit(b) && x.Value.Bit(b) != y.Value.Bit(b) {
					return false
				}
			}
		case Range:
			if x.Lo != y.Lo || x.Hi != y.Hi {
				return false
			}
		}
	}
	return true
}

// refFind is the index in es of the entry with e's match, -1 if none.
func refFind(spec *TableSpec, es []Entry, e *Entry) int {
	return slices.IndexFunc(es, func(x Entry) bool { return refSameMatch(spec, &x, e) })
}

// refApply is Apply by the oracle: es changed by us, or false where Apply
// must refuse the batch.
func refApply(spec *TableSpec, es []Entry, us []Update) ([]Entry, bool) {
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
		spec.Actions = []ActionSpec{{"NoAction", nil}, {"set", []Param{{"id", 32}}}}
		spec.Size = 60
		tb := NewTable(spec)
		var es []Entry
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
						case LPM:
							care = PrefixMask(k.Width, m.PrefixLen)
						case Ternary:
						default:
							continue
						}
						noise := Value{Hi: r.Uint64(), Lo: r.Uint64()}.And(Mask(k.Width)).And(care.Not())
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
	spec := &TableSpec{Name: "gen", Keys: []KeySpec{{"k", 32, Exact}},
		Actions: []ActionSpec{{"set", []Param{{"gen", 32}}}}}
	tb := NewTable(spec)
	const n = 64
	entry := func(k, g uint64) Entry { return Entry{Keys: exactKeys(V(k)), Params: []Value{V(g)}} }
	var us []Update
	for k := range uint64(n) {
		us = append(us, Update{InsertEntry, entry(k, 0)})
	}
	if err := tb.Apply(us); err != nil {
		t.Fatal(err)
	}
	stop := readWhile(func(keys []Value) bool {
		last := uint64(0)
		for k := range uint64(n + 1) {
			keys[0] = V(k)
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
