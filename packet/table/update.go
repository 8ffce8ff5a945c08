package table

import (
	"fmt"
	"slices"

	"github.com/dragonet-go/nsc/packet"
)

// UpdateKind is what an Update does to a table.
type UpdateKind uint8

const (
	InsertEntry UpdateKind = iota // add an entry whose match no other has
	ModifyEntry                   // replace the entry with the same match
	DeleteEntry                   // remove the entry with the same match
)

// Update is one change of a batch that Table.Apply makes. An entry is known
// by its match: its keys as they compare (an lpm value cut to its prefix, a
// ternary value to its mask) and, in a table that needs one, its priority,
// as P4Runtime knows entries. A delete reads only the match.
type Update struct {
	Kind  UpdateKind
	Entry packet.Entry
}

// Apply makes a batch of updates, in order, and publishes the result as one
// new snapshot, or changes nothing if any update fails (the error names it
// by its line, else by its place in us). Lookups in progress keep the
// snapshot they started with. It costs one index build, O(entries) plus a
// sort of a priority table's entries, however many updates the batch has:
// a control plane that writes many entries writes them in one batch.
func (t *Table) Apply(us []Update) error {
	return t.update(us, false, updateName)
}

// Insert adds e (copied): Apply of one InsertEntry. Each costs an index
// build, O(entries): write many entries in one Apply.
func (t *Table) Insert(e packet.Entry) error {
	return t.update([]Update{{InsertEntry, e}}, false, func(e *packet.Entry, _ int) string { return packet.EntryName(e, t.Len()) })
}

// Modify replaces the entry with e's match by e (copied): Apply of one
// ModifyEntry.
func (t *Table) Modify(e packet.Entry) error { return t.Apply([]Update{{ModifyEntry, e}}) }

// Delete removes the entry with e's match: Apply of one DeleteEntry.
func (t *Table) Delete(e packet.Entry) error { return t.Apply([]Update{{DeleteEntry, e}}) }

// Replace swaps in a whole new set of entries (copied) at once, or changes
// nothing if any entry is invalid (the error names it by its line, else by
// its index in es).
func (t *Table) Replace(es []packet.Entry) error {
	us := make([]Update, len(es))
	for i := range es {
		us[i] = Update{InsertEntry, es[i]}
	}
	return t.update(us, true, packet.EntryName)
}

// load swaps in es, which an EntrySet of the table's spec let in, and
// which the table owns from now on.
func (t *Table) load(es []packet.Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.snap.Store(t.build(es))
}

// updateName names update i of a batch in errors: by script line when
// known.
func updateName(e *packet.Entry, i int) string {
	if e.Line > 0 {
		return packet.EntryName(e, i)
	}
	return fmt.Sprintf("update %d", i)
}

// update applies us to the table's entries (to none if fresh) and swaps in
// the new snapshot; name names update i in errors.
func (t *Table) update(us []Update, fresh bool, name func(e *packet.Entry, i int) string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var old []packet.Entry
	if !fresh {
		old = t.snap.Load().entries
	}
	set := packet.NewEntrySet(t.spec, len(old)+len(us))
	es := make([]packet.Entry, len(old), len(old)+len(us))
	copy(es, old) // entries are immutable, so sharing their slices is safe
	for i := range es {
		set.Known(&es[i], i)
	}
	var sl slab
	sl.reserve(us)
	deleted := false
	for ui := range us {
		u := &us[ui]
		var err error
		switch u.Kind {
		case InsertEntry:
			if err = set.Insert(&u.Entry, len(es)); err == nil {
				es = append(es, sl.clone(&u.Entry))
			}
		case ModifyEntry:
			var i int
			if i, err = set.Modify(&u.Entry); err == nil {
				es[i] = sl.clone(&u.Entry)
			}
		case DeleteEntry:
			var i int
			if i, err = set.Remove(&u.Entry); err == nil {
				es[i].Action, deleted = -1, true // valid entries' are not negative
			}
		default:
			err = fmt.Errorf("unknown update kind %d", u.Kind)
		}
		if err != nil {
			return fmt.Errorf("table %s: %s: %w", t.spec.Name, name(&u.Entry, ui), err)
		}
	}
	if deleted {
		es = slices.DeleteFunc(es, func(e packet.Entry) bool { return e.Action < 0 })
	}
	t.snap.Store(t.build(es))
	return nil
}

// slab holds the keys and parameters of a batch's entries, so that
// copying them takes two allocations, not two per entry.
type slab struct {
	keys   []packet.KeyMatch
	params []packet.Value
}

// reserve makes room for the entries of us.
func (s *slab) reserve(us []Update) {
	nk, np := 0, 0
	for i := range us {
		nk += len(us[i].Entry.Keys)
		np += len(us[i].Entry.Params)
	}
	s.keys, s.params = make([]packet.KeyMatch, 0, nk), make([]packet.Value, 0, np)
}

// clone copies e, its slices into the slab (nil stays nil).
func (s *slab) clone(e *packet.Entry) packet.Entry {
	c := *e
	if e.Keys != nil {
		n := len(s.keys)
		s.keys = append(s.keys, e.Keys...)
		c.Keys = s.keys[n:len(s.keys):len(s.keys)]
	}
	if e.Params != nil {
		n := len(s.params)
		s.params = append(s.params, e.Params...)
		c.Params = s.params[n:len(s.params):len(s.params)]
	}
	return c
}
