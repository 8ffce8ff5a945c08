package p4

import (
	"fmt"
	"slices"

	"github.com/dragonet-go/nsc/backends/p4/tableadd"
	"github.com/dragonet-go/nsc/packet"
)

// Tables. A model table becomes a P4 table of the same name, keys in the
// same order with the same match kinds, and the model's actions with their
// parameters in the same order; package tableadd says how, and writes a
// model script's entries in the program's names.

// table is a model table as the program declares it and applies it.
type table struct {
	*tableadd.Table
	ident   string   // the table in the program
	keyVars []string // control-local variables of computed keys
}

// tableOf returns (declaring on first use) schema table t.
func (c *gen) tableOf(t int) *table {
	for _, x := range c.tables {
		if x.Spec == c.s.Tables[t].Spec {
			return x
		}
	}
	def := c.s.Tables[t]
	spec := def.Spec
	tb := &table{Table: &tableadd.Table{Model: spec.Name, Spec: spec}, ident: c.tblName[t]}
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
		tb.Priority = tableadd.NoPriority
	case spec.NeedsPriority():
		tb.Priority = tableadd.ModelPriority
	default:
		tb.Priority = tableadd.PrefixLength
	}
	c.tables = append(c.tables, tb)
	return tb
}

// actionsAndTables declares the actions the program's tables run, then the
// tables, in the model's order.
func (c *gen) actionsAndTables(w *out) error {
	slices.SortFunc(c.tables, func(a, b *table) int {
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
		switch t.Priority {
		case tableadd.ModelPriority:
			note = "; entries take a priority, the lowest wins"
		case tableadd.PrefixLength:
			note = "; entries take priority width - prefix length, the lowest wins"
		}
		w.line("// %s: %d entries%s", t.Model, t.Spec.Size, note)
		w.line("table %s {", t.ident)
		if len(t.Keys) > 0 {
			w.line("key = {")
			width := 0
			for _, k := range t.Keys {
				width = max(width, len(k.Name))
			}
			for i, k := range t.Keys {
				comment := ""
				if t.Spec.Keys[i].Kind != k.Kind {
					comment = fmt.Sprintf(" // %s in the model", t.Spec.Keys[i].Kind)
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
		w.line("size = %d;", t.Spec.Size)
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
