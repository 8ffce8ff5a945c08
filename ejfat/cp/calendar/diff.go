package calendar

import (
	"encoding/binary"
	"slices"

	"github.com/dragonet-go/nsc/packet"
)

// Diff is what changes from one table state to another. A data plane
// applies Added, then Modified, then Deleted, each in order: Added and
// Modified keep the new state's order, in which Entries puts members
// before the calendars that name them and calendars before the epochs
// that select them; Deleted is in the reverse of the old state's order.
// For an epoch change this keeps every tick of the epochs that stay live
// where it went (TestDiffEpochChange).
// An entry's identity is its table, keys and priority; Modified holds the
// new entries whose action or parameters changed.
type Diff struct {
	Added, Modified, Deleted []packet.TableEntry
}

// Len is the number of changes.
func (d *Diff) Len() int { return len(d.Added) + len(d.Modified) + len(d.Deleted) }

// Compare returns the diff from table state old to next.
func Compare(old, next []packet.TableEntry) Diff {
	before := make(map[string]*packet.TableEntry, len(old))
	var buf []byte
	for i := range old {
		buf = identity(buf[:0], &old[i])
		before[string(buf)] = &old[i]
	}
	var d Diff
	for i := range next {
		e := &next[i]
		buf = identity(buf[:0], e)
		o, ok := before[string(buf)]
		switch {
		case !ok:
			d.Added = append(d.Added, *e)
		case o.Entry.Action != e.Entry.Action || !slices.Equal(o.Entry.Params, e.Entry.Params):
			d.Modified = append(d.Modified, *e)
		}
		delete(before, string(buf))
	}
	for i := len(old) - 1; i >= 0; i-- {
		buf = identity(buf[:0], &old[i])
		if _, gone := before[string(buf)]; gone {
			d.Deleted = append(d.Deleted, old[i])
		}
	}
	return d
}

// identity appends to b an encoding of the entry's table, keys and
// priority.
func identity(b []byte, te *packet.TableEntry) []byte {
	b = append(append(b, te.Table...), 0)
	for _, k := range te.Entry.Keys {
		for _, v := range []packet.Value{k.Value, k.Mask, k.Lo, k.Hi} {
			b = binary.BigEndian.AppendUint64(b, v.Hi)
			b = binary.BigEndian.AppendUint64(b, v.Lo)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(k.PrefixLen))
	}
	return binary.BigEndian.AppendUint32(b, uint32(te.Entry.Priority))
}
