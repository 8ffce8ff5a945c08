package packet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
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
	Entry Entry
}

// ErrNoEntry reports a modify or delete of a match the table does not have.
var ErrNoEntry = errors.New("no entry with this match")

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
func (t *Table) Insert(e Entry) error {
	return t.update([]Update{{InsertEntry, e}}, false, func(e *Entry, _ int) string { return entryName(e, t.Len()) })
}

// Modify replaces the entry with e's match by e (copied): Apply of one
// ModifyEntry.
func (t *Table) Modify(e Entry) error { return t.Apply([]Update{{ModifyEntry, e}}) }

// Delete removes the entry with e's match: Apply of one DeleteEntry.
func (t *Table) Delete(e Entry) error { return t.Apply([]Update{{DeleteEntry, e}}) }

// Replace swaps in a whole new set of entries (copied) at once, or changes
// nothing if any entry is invalid (the error names it by its line, else by
// its index in es).
func (t *Table) Replace(es []Entry) error {
	us := make([]Update, len(es))
	for i := range es {
		us[i] = Update{InsertEntry, es[i]}
	}
	return t.update(us, true, entryName)
}

// load swaps in es, which an entrySet of the table's spec let in, and
// which the table owns from now on.
func (t *Table) load(es []Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.snap.Store(t.build(es))
}

// updateName names update i of a batch in errors: by script line when
// known.
func updateName(e *Entry, i int) string {
	if e.Line > 0 {
		return entryName(e, i)
	}
	return fmt.Sprintf("update %d", i)
}

// update applies us to the table's entries (to none if fresh) and swaps in
// the new snapshot; name names update i in errors.
func (t *Table) update(us []Update, fresh bool, name func(e *Entry, i int) string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var old []Entry
	if !fresh {
		old = t.snap.Load().entries
	}
	set := newEntrySet(t.spec, len(old)+len(us))
	es := make([]Entry, len(old), len(old)+len(us))
	copy(es, old) // entries are immutable, so sharing their slices is safe
	for i := range es {
		set.known(&es[i], i)
	}
	var sl slab
	sl.reserve(us)
	deleted := false
	for ui := range us {
		u := &us[ui]
		var err error
		switch u.Kind {
		case InsertEntry:
			if err = set.insert(&u.Entry, len(es)); err == nil {
				es = append(es, sl.clone(&u.Entry))
			}
		case ModifyEntry:
			var i int
			if i, err = set.modify(&u.Entry); err == nil {
				es[i] = sl.clone(&u.Entry)
			}
		case DeleteEntry:
			var i int
			if i, err = set.remove(&u.Entry); err == nil {
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
		es = slices.DeleteFunc(es, func(e Entry) bool { return e.Action < 0 })
	}
	t.snap.Store(t.build(es))
	return nil
}

// slab holds the keys and parameters of a batch's entries, so that
// copying them takes two allocations, not two per entry.
type slab struct {
	keys   []KeyMatch
	params []Value
}

// reserve makes room for the entries of us.
func (s *slab) reserve(us []Update) {
	nk, np := 0, 0
	for i := range us {
		nk += len(us[i].Entry.Keys)
		np += len(us[i].Entry.Params)
	}
	s.keys, s.params = make([]KeyMatch, 0, nk), make([]Value, 0, np)
}

// clone copies e, its slices into the slab (nil stays nil).
func (s *slab) clone(e *Entry) Entry {
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

// entrySet is the one validator of a table's content, whichever way the
// entries come (Table.Apply and its single-entry forms, ParseEntries,
// CheckEntries): each entry valid for the spec on its own (checkEntry), no
// two with the same match (a repeat could never be hit: a script mistake
// worth reporting), at most spec.Size of them. It knows each entry by its
// index in the caller's list.
type entrySet struct {
	spec *TableSpec
	at   map[string]entryRef // by match (appendMatch)
	live int
	key  []byte // scratch
}

// entryRef is an entry the set holds: its index and script line.
type entryRef struct{ i, line int }

func newEntrySet(spec *TableSpec, n int) *entrySet {
	return &entrySet{spec: spec, at: make(map[string]entryRef, n)}
}

// known adds entry i, which an earlier check let in.
func (s *entrySet) known(e *Entry, i int) {
	s.key = s.spec.appendMatch(s.key[:0], e)
	s.at[string(s.key)] = entryRef{i, e.Line}
	s.live++
}

// insert checks e and adds it as entry i.
func (s *entrySet) insert(e *Entry, i int) error {
	if err := s.spec.checkEntry(e); err != nil {
		return err
	}
	s.key = s.spec.appendMatch(s.key[:0], e)
	if p, dup := s.at[string(s.key)]; dup {
		return fmt.Errorf("%w of %s", ErrDuplicateEntry, entryName(&Entry{Line: p.line}, p.i))
	}
	if s.spec.Size > 0 && s.live >= s.spec.Size {
		return fmt.Errorf("%w (size %d)", ErrTableFull, s.spec.Size)
	}
	s.at[string(s.key)] = entryRef{i, e.Line}
	s.live++
	return nil
}

// modify checks e and returns the index of the entry it replaces.
func (s *entrySet) modify(e *Entry) (int, error) {
	p, err := s.find(e, s.spec.checkEntry)
	if err != nil {
		return 0, err
	}
	s.at[string(s.key)] = entryRef{p.i, e.Line}
	return p.i, nil
}

// remove checks e's match and returns the index of the entry it removes.
func (s *entrySet) remove(e *Entry) (int, error) {
	p, err := s.find(e, s.spec.checkMatch)
	if err != nil {
		return 0, err
	}
	delete(s.at, string(s.key))
	s.live--
	return p.i, nil
}

// find checks e by check and returns the entry with e's match, whose key
// it leaves in s.key.
func (s *entrySet) find(e *Entry, check func(*Entry) error) (entryRef, error) {
	if err := check(e); err != nil {
		return entryRef{}, err
	}
	s.key = s.spec.appendMatch(s.key[:0], e)
	p, ok := s.at[string(s.key)]
	if !ok {
		return entryRef{}, ErrNoEntry
	}
	return p, nil
}

// appendMatch appends e's match, which checkMatch passed, as bytes: the
// same bytes for two entries exactly when they match the same keys at the
// same priority.
func (s *TableSpec) appendMatch(b []byte, e *Entry) []byte {
	for j, k := range s.Keys {
		m := &e.Keys[j]
		switch k.Kind {
		case Exact:
			b = appendValue(b, m.Value, k.Width)
		case LPM:
			b = append(b, byte(m.PrefixLen))
			b = appendValue(b, m.Value.And(PrefixMask(k.Width, m.PrefixLen)), k.Width)
		case Ternary:
			b = appendValue(b, m.Mask, k.Width)
			b = appendValue(b, m.Value.And(m.Mask), k.Width)
		case Range:
			b = appendValue(b, m.Lo, k.Width)
			b = appendValue(b, m.Hi, k.Width)
		}
	}
	return binary.LittleEndian.AppendUint32(b, uint32(e.Priority))
}

// appendValue appends v, of width bits, in as few words as that takes.
func appendValue(b []byte, v Value, width int) []byte {
	if width > 64 {
		b = binary.LittleEndian.AppendUint64(b, v.Hi)
	}
	return binary.LittleEndian.AppendUint64(b, v.Lo)
}

// scriptSets validates the entries of many tables, each table's by its own
// entrySet.
type scriptSets struct {
	tables func(string) (*TableSpec, bool)
	sets   map[string]*entrySet
}

func newScriptSets(tables func(string) (*TableSpec, bool)) *scriptSets {
	return &scriptSets{tables: tables, sets: map[string]*entrySet{}}
}

// insert checks te as the next entry of its table; i is its index among
// all the entries.
func (ss *scriptSets) insert(te *TableEntry, i int) error {
	set := ss.sets[te.Table]
	if set == nil {
		spec, ok := ss.tables(te.Table)
		if !ok || spec == nil {
			return fmt.Errorf("unknown table %q", te.Table)
		}
		set = newEntrySet(spec, 0)
		ss.sets[te.Table] = set
	}
	return set.insert(&te.Entry, i)
}

// CheckEntries validates es as the whole content of their tables, as
// ParseEntries validates a script's and Table.Replace a table's: each entry
// valid for its table's spec, no two of a table with the same match, no
// table over its size. A writer of entries for another target (the P4
// program's table_add lines) calls it to refuse what the tables would. The
// error names the first entry wrong, by its line, else its index in es.
func CheckEntries(es []TableEntry, tables func(string) (*TableSpec, bool)) error {
	ss := newScriptSets(tables)
	for i := range es {
		if err := ss.insert(&es[i], i); err != nil {
			return fmt.Errorf("table %s: %s: %w", es[i].Table, entryName(&es[i].Entry, i), err)
		}
	}
	return nil
}
