package p4

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

// priorityRule says where a program table's entry priorities come from.
type priorityRule uint8

const (
	noPriority    priorityRule = iota // the program's table takes none
	modelPriority                     // the model entry's priority
	prefixLength                      // lpm width - prefix length
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
	Actions []string

	rule    priorityRule
	spec    *packet.TableSpec
	ident   string   // the table in the program
	keyVars []string // control-local variables of computed keys
}

// tableOf returns (declaring on first use) schema table t.
func (c *gen) tableOf(t int) *Table {
	for _, x := range c.tables {
		if x.spec == c.s.Tables[t].Spec {
			return x
		}
	}
	def := c.s.Tables[t]
	spec := def.Spec
	tb := &Table{Model: spec.Name, spec: spec, ident: c.tblName[t]}
	qual := func(s string) string {
		if c.opt.Arch == V1Model && s != "NoAction" {
			return c.controlName() + "." + s
		}
		return s
	}
	tb.Name = qual(tb.ident)
	for i, k := range spec.Keys {
		kind := k.Kind
		if c.opt.Arch == V1Model && kind == packet.LPM && spec.NeedsPriority() {
			kind = packet.Ternary
		}
		text := ""
		e := def.Keys[i]
		if e.Kind == packet.EField && c.s.FieldSpec(e.Field).Width == k.Width {
			text = c.field(e.Field)
			tb.keyVars = append(tb.keyVars, "")
		} else {
			v := c.ctlNames.take(fmt.Sprintf("%s_key%d", tb.ident, i))
			c.keyVars = append(c.keyVars, fmt.Sprintf("bit<%d> %s; // %s", k.Width, v, k.Name))
			tb.keyVars = append(tb.keyVars, v)
			text = v
		}
		tb.Keys = append(tb.Keys, packet.KeySpec{Name: text, Width: k.Width, Kind: kind})
	}
	for _, ai := range def.Actions {
		tb.Actions = append(tb.Actions, qual(c.actName[ai]))
	}
	needs := false
	for _, k := range tb.Keys {
		switch {
		case k.Kind == packet.Ternary || k.Kind == packet.Range:
			needs = true
		case k.Kind == packet.LPM && c.opt.Arch == XSA:
			needs = true
		}
	}
	switch {
	case !needs:
		tb.rule = noPriority
	case spec.NeedsPriority():
		tb.rule = modelPriority
	default:
		tb.rule = prefixLength
	}
	c.tables = append(c.tables, tb)
	return tb
}

// actionsAndTables declares the actions the program's tables run, then the
// tables, in the model's order.
func (c *gen) actionsAndTables(w *out) error {
	slices.SortFunc(c.tables, func(a, b *Table) int {
		ia, _ := c.s.Table(a.Model)
		ib, _ := c.s.Table(b.Model)
		return ia - ib
	})
	var acts []int
	for _, t := range c.tables {
		ti, _ := c.s.Table(t.Model)
		for _, ai := range c.s.Tables[ti].Actions {
			if !slices.Contains(acts, ai) && c.actName[ai] != "NoAction" {
				acts = append(acts, ai)
			}
		}
	}
	slices.Sort(acts)
	for _, ai := range acts {
		a := c.s.Actions[ai]
		var ps []string
		sc := &scope{params: paramNames(a)}
		for i, p := range a.Params {
			ps = append(ps, fmt.Sprintf("bit<%d> %s", p.Width, sc.params[i]))
		}
		w.line("action %s(%s) {", c.actName[ai], join(ps, ", "))
		for _, as := range a.Body {
			w.line("%s = %s;", c.field(as.Dst), bare(c.as(as.Src, c.s.FieldSpec(as.Dst).Width, sc)))
		}
		w.line("}")
		w.line("")
	}
	if len(c.keyVars) > 0 {
		w.line("// Keys the model computes.")
		for _, v := range c.keyVars {
			w.line("%s", v)
		}
		w.line("")
	}
	for _, t := range c.tables {
		ti, _ := c.s.Table(t.Model)
		def := c.s.Tables[ti]
		note := ""
		switch t.rule {
		case modelPriority:
			note = "; entries take a priority, the lowest wins"
		case prefixLength:
			note = "; entries take priority width - prefix length, the lowest wins"
		}
		w.line("// %s: %d entries%s", t.Model, t.spec.Size, note)
		w.line("table %s {", t.ident)
		if len(t.Keys) > 0 {
			w.line("key = {")
			width := 0
			for _, k := range t.Keys {
				width = max(width, len(k.Name))
			}
			for i, k := range t.Keys {
				comment := ""
				if t.spec.Keys[i].Kind != k.Kind {
					comment = fmt.Sprintf(" // %s in the model", t.spec.Keys[i].Kind)
				}
				w.line("%-*s : %s;%s", width, k.Name, k.Kind, comment)
			}
			w.line("}")
		}
		w.line("actions = {")
		for _, ai := range def.Actions {
			w.line("%s;", c.actName[ai])
		}
		w.line("}")
		w.line("size = %d;", t.spec.Size)
		var args []string
		a := c.s.Actions[def.Actions[def.Default]]
		for i, v := range def.DefaultParams {
			args = append(args, lit(v, a.Params[i].Width))
		}
		w.line("default_action = %s(%s);", c.actName[def.Actions[def.Default]], join(args, ", "))
		w.line("}")
		w.line("")
	}
	return nil
}

// table returns the program table for a model table name.
func (p *Program) table(model string) *Table {
	for _, t := range p.Tables {
		if t.Model == model {
			return t
		}
	}
	return nil
}

// TableSpec is the spec of a table as the program's table_add lines name
// and match it (name: the program's), for packet.ParseEntries.
func (p *Program) TableSpec(name string) (*packet.TableSpec, bool) {
	for _, t := range p.Tables {
		if t.Name != name {
			continue
		}
		s := &packet.TableSpec{Name: t.Name, Keys: slices.Clone(t.Keys), Size: t.spec.Size,
			Priorities: t.rule != noPriority}
		for i, a := range t.spec.Actions {
			s.Actions = append(s.Actions, packet.ActionSpec{Name: t.Actions[i], Params: a.Params})
			if a.Name == t.spec.Default {
				s.Default = t.Actions[i]
			}
		}
		s.DefaultParams = t.spec.DefaultParams
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
func (p *Program) Entries(w io.Writer, es []packet.TableEntry) error {
	for _, te := range es {
		if p.table(te.Table) == nil {
			return fmt.Errorf("p4 entries: line %d: table %s is not in the program (no node looks it up)", te.Entry.Line, te.Table)
		}
	}
	spec := func(name string) (*packet.TableSpec, bool) { return p.table(name).spec, true }
	if err := packet.CheckEntries(es, spec); err != nil {
		return fmt.Errorf("p4 entries: %w", err)
	}
	bw := bufio.NewWriter(w)
	for _, te := range es {
		t := p.table(te.Table)
		e := &te.Entry
		line := []byte("table_add " + t.Name + " " + t.Actions[e.Action])
		lpmLen, lpmWidth := -1, 0
		for i, k := range t.Keys {
			m := e.Keys[i]
			model := t.spec.Keys[i].Kind
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
		for i, prm := range t.spec.Actions[e.Action].Params {
			line = append(line, ' ')
			line = hexValue(line, e.Params[i], prm.Width)
		}
		switch t.rule {
		case modelPriority:
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(e.Priority), 10)
		case prefixLength:
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
