// Package tableadd writes table entries as a generated P4 program takes
// them: table_add lines in the program's table and action names, keys in
// its match kinds, priorities where its tables take one. The P4 generator
// (backends/p4) says how each model table is declared (Tables); a control
// plane that programs the running switch imports this, not the generator.
package tableadd

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/dragonet-go/nsc/packet"
)

// Tables. A model table becomes a P4 table of the same name, keys in the
// same order with the same match kinds, and the model's actions with their
// parameters in the same order, so a table_add script written for the model
// fits the program once the names are the program's (Entries). Two
// architecture rules change a table's shape:
//
//   - v1model (BMv2) takes a priority only for tables with a ternary or
//     range key, and an lpm table orders entries by prefix length alone.
//     A model table whose entries carry priorities over an lpm key (seed
//     000's epoch table) is therefore declared with that key as ternary,
//     and an lpm entry v/len becomes v&&&mask: the same matches, and the
//     priority decides as in the model;
//   - xsa (VitisNet) builds every table with a non-exact key as a TCAM that
//     takes a priority, lpm tables included (ejfat-lb-pipeline-2025.md
//     A.4). A model lpm table without priorities orders by prefix length,
//     so its entries get priority width - prefix length: a longer prefix
//     is a lower number, and the lowest wins.

// Priority says where a program table's entry priorities come from.
type Priority uint8

const (
	NoPriority    Priority = iota // the program's table takes none
	ModelPriority                 // the model entry's priority
	PrefixLength                  // lpm width - prefix length
)

// Table is a model table as the generated program declares it.
type Table struct {
	// Model is the table's name in the model and in scripts written for it.
	Model string
	// Name is its name in the program's table_add lines: qualified by the
	// control for v1model (BMv2's CLI), bare for xsa (p4bm's runsim.txt).
	Name string
	// Keys are the keys as the program matches them (Name is the P4 key).
	Keys []packet.KeySpec
	// Actions are the table_add names of the model's actions, in order.
	Actions  []string
	Priority Priority
	// Spec is the model's table.
	Spec *packet.TableSpec
}

// Tables are a program's tables, in the model's order (those it looks up).
type Tables []*Table

// Table returns the program table for a model table name (nil: none).
func (ts Tables) Table(model string) *Table {
	for _, t := range ts {
		if t.Model == model {
			return t
		}
	}
	return nil
}

// TableSpec is the spec of a table as the program's table_add lines name
// and match it (name: the program's), for packet.ParseEntries.
func (ts Tables) TableSpec(name string) (*packet.TableSpec, bool) {
	for _, t := range ts {
		if t.Name != name {
			continue
		}
		s := &packet.TableSpec{Name: t.Name, Keys: slices.Clone(t.Keys), Size: t.Spec.Size,
			Priorities: t.Priority != NoPriority}
		for i, a := range t.Spec.Actions {
			s.Actions = append(s.Actions, packet.ActionSpec{Name: t.Actions[i], Params: a.Params})
			if a.Name == t.Spec.Default {
				s.Default = t.Actions[i]
			}
		}
		s.DefaultParams = t.Spec.DefaultParams
		return s, true
	}
	return nil, false
}

// Entries writes the table_add lines that install, in the program, the
// entries es of a script written for the model (packet.ParseEntries with
// the model's tables): the program's table and action names, keys and
// parameters in the same order, keys in the form of the program's match
// kinds, and a priority where the program's table takes one. Entries for a
// table the program does not look up are refused, and so is what the
// model's tables refuse (packet.CheckEntries: duplicates, more entries
// than a table's size, values wider than their keys).
func (ts Tables) Entries(w io.Writer, es []packet.TableEntry) error {
	for _, te := range es {
		if ts.Table(te.Table) == nil {
			return fmt.Errorf("p4 entries: line %d: table %s is not in the program (no node looks it up)", te.Entry.Line, te.Table)
		}
	}
	spec := func(name string) (*packet.TableSpec, bool) { return ts.Table(name).Spec, true }
	if err := packet.CheckEntries(es, spec); err != nil {
		return fmt.Errorf("p4 entries: %w", err)
	}
	bw := bufio.NewWriter(w)
	for _, te := range es {
		t := ts.Table(te.Table)
		e := &te.Entry
		line := []byte("table_add " + t.Name + " " + t.Actions[e.Action])
		lpmLen, lpmWidth := -1, 0
		for i, k := range t.Keys {
			m := e.Keys[i]
			model := t.Spec.Keys[i].Kind
			line = append(line, ' ')
			switch {
			case k.Kind == packet.Exact:
				line = hexValue(line, m.Value, k.Width)
			case k.Kind == packet.LPM:
				line = hexValue(line, m.Value, k.Width)
				line = append(line, '/')
				line = strconv.AppendInt(line, int64(m.PrefixLen), 10)
				lpmLen, lpmWidth = m.PrefixLen, k.Width
			case k.Kind == packet.Ternary && model == packet.LPM:
				line = hexValue(line, m.Value, k.Width)
				line = append(line, "&&&"...)
				line = hexValue(line, packet.PrefixMask(k.Width, m.PrefixLen), k.Width)
			case k.Kind == packet.Ternary:
				line = hexValue(line, m.Value, k.Width)
				line = append(line, "&&&"...)
				line = hexValue(line, m.Mask, k.Width)
			case k.Kind == packet.Range:
				line = hexValue(line, m.Lo, k.Width)
				line = append(line, "->"...)
				line = hexValue(line, m.Hi, k.Width)
			}
		}
		line = append(line, " =>"...)
		for i, prm := range t.Spec.Actions[e.Action].Params {
			line = append(line, ' ')
			line = hexValue(line, e.Params[i], prm.Width)
		}
		switch t.Priority {
		case ModelPriority:
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(e.Priority), 10)
		case PrefixLength:
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(lpmWidth-lpmLen), 10)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// hexValue appends v in hex, padded to width's digits.
func hexValue(dst []byte, v packet.Value, width int) []byte {
	digits := (width + 3) / 4
	var s string
	if v.Hi != 0 {
		s = fmt.Sprintf("%x%016x", v.Hi, v.Lo)
	} else {
		s = strconv.FormatUint(v.Lo, 16)
	}
	dst = append(dst, "0x"...)
	for i := len(s); i < digits; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}
