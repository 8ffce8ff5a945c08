package table

import (
	"io"

	"github.com/dragonet-go/nsc/packet"
)

// Load makes empty runtime tables for every table of s, in
// Schema.Tables order, and fills them from a table_add script read from r
// (name is for messages). Errors name the line. Each table's index is
// built once, from all its entries.
func Load(s *packet.Schema, name string, r io.Reader) ([]*Table, error) {
	ts := make([]*Table, len(s.Tables))
	for i, t := range s.Tables {
		ts[i] = New(t.Spec)
	}
	if r == nil {
		return ts, nil
	}
	entries, err := packet.ParseEntries(name, r, s.TableSpec)
	if err != nil {
		return nil, err
	}
	at, n := make([]int, len(entries)), make([]int, len(ts))
	for k, te := range entries {
		at[k], _ = s.Table(te.Table)
		n[at[k]]++
	}
	byTable := make([][]packet.Entry, len(ts))
	for i := range byTable {
		byTable[i] = make([]packet.Entry, 0, n[i])
	}
	for k, te := range entries {
		byTable[at[k]] = append(byTable[at[k]], te.Entry)
	}
	for i, es := range byTable {
		ts[i].load(es) // ParseEntries checked them against the same specs
	}
	return ts, nil
}

// Set is a schema's tables in Schema.Tables order, as packet.Env reads
// them.
type Set []*Table

// Lookup looks keys up in table i.
func (s Set) Lookup(i int, keys []packet.Value) (*packet.Entry, bool) { return s[i].Lookup(keys) }
