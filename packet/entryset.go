package packet

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrNoEntry reports a modify or delete of a match the table does not have.
var ErrNoEntry = errors.New("no entry with this match")

// EntrySet is the one validator of a table's content, whichever way the
// entries come (packet/table's Table.Apply and its single-entry forms,
// ParseEntries, CheckEntries): each entry valid for the spec on its own, no
// two with the same match (a repeat could never be hit: a script mistake
// worth reporting), at most spec.Size of them. It knows each entry by its
// index in the caller's list.
type EntrySet struct {
	spec *TableSpec
	at   map[string]entryRef // by match (appendMatch)
	live int
	key  []byte // scratch
}

// entryRef is an entry the set holds: its index and script line.
type entryRef struct{ i, line int }

// NewEntrySet returns an empty set for spec's entries, room made for n.
func NewEntrySet(spec *TableSpec, n int) *EntrySet {
	return &EntrySet{spec: spec, at: make(map[string]entryRef, n)}
}

// Known adds entry i, which an earlier check let in.
func (s *EntrySet) Known(e *Entry, i int) {
	s.key = s.spec.appendMatch(s.key[:0], e)
	s.at[string(s.key)] = entryRef{i, e.Line}
	s.live++
}

// Insert checks e and adds it as entry i.
func (s *EntrySet) Insert(e *Entry, i int) error {
	if err := s.spec.checkEntry(e); err != nil {
		return err
	}
	s.key = s.spec.appendMatch(s.key[:0], e)
	if p, dup := s.at[string(s.key)]; dup {
		return fmt.Errorf("%w of %s", ErrDuplicateEntry, EntryName(&Entry{Line: p.line}, p.i))
	}
	if s.spec.Size > 0 && s.live >= s.spec.Size {
		return fmt.Errorf("%w (size %d)", ErrTableFull, s.spec.Size)
	}
	s.at[string(s.key)] = entryRef{i, e.Line}
	s.live++
	return nil
}

// Modify checks e and returns the index of the entry it replaces.
func (s *EntrySet) Modify(e *Entry) (int, error) {
	p, err := s.find(e, s.spec.checkEntry)
	if err != nil {
		return 0, err
	}
	s.at[string(s.key)] = entryRef{p.i, e.Line}
	return p.i, nil
}

// Remove checks e's match and returns the index of the entry it removes.
func (s *EntrySet) Remove(e *Entry) (int, error) {
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
func (s *EntrySet) find(e *Entry, check func(*Entry) error) (entryRef, error) {
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
// EntrySet.
type scriptSets struct {
	tables func(string) (*TableSpec, bool)
	sets   map[string]*EntrySet
}

func newScriptSets(tables func(string) (*TableSpec, bool)) *scriptSets {
	return &scriptSets{tables: tables, sets: map[string]*EntrySet{}}
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
		set = NewEntrySet(spec, 0)
		ss.sets[te.Table] = set
	}
	return set.Insert(&te.Entry, i)
}

// CheckEntries validates es as the whole content of their tables, as
// ParseEntries validates a script's and packet/table's Table.Replace a
// table's: each entry valid for its table's spec, no two of a table with
// the same match, no table over its size. A writer of entries for another
// target (the P4 program's table_add lines) calls it to refuse what the
// tables would. The error names the first entry wrong, by its line, else
// its index in es.
func CheckEntries(es []TableEntry, tables func(string) (*TableSpec, bool)) error {
	ss := newScriptSets(tables)
	for i := range es {
		if err := ss.insert(&es[i], i); err != nil {
			return fmt.Errorf("table %s: %s: %w", es[i].Table, EntryName(&es[i].Entry, i), err)
		}
	}
	return nil
}
