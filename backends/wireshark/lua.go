package wireshark

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dragonet-go/nsc/packet"
)

// protoName is the Wireshark name of header h (Wireshark wants protocol
// names in lower case; field names keep the model's case).
func (g *gen) protoName(h int) string { return strings.ToLower(g.s.Headers[h].Name) }

// fieldVar, valueVar: the Lua names of a field's ProtoField and value.
// ProtoFields live in a table per header: Lua allows a chunk 200 locals.
func (g *gen) fieldVar(f packet.FieldRef) string {
	return fmt.Sprintf("h_%s.field[%q]", g.protoName(f.Header), g.s.Headers[f.Header].Fields[f.Field].Name)
}
func valueVar(f *packet.FieldSpec) string { return "v_" + f.Name }

// layout is where a field sits and how Wireshark shows it.
type layout struct {
	off, n   int    // the bytes the field spans
	kind     string // ProtoField constructor
	mask     uint64 // a bitmask within those bytes, or 0
	computed bool   // Wireshark cannot mask it: the value is passed in
}

// maskBits is how wide a mask may be: Wireshark 4.0's Lua takes masks as
// numbers (doubles), exact up to 53 bits.
const maskBits = 53

func fieldLayout(f *packet.FieldSpec) layout {
	off, bit := f.Offset/8, f.Offset%8
	n := (bit + f.Width + 7) / 8
	l := layout{off: off, n: n}
	aligned := bit == 0 && f.Width%8 == 0
	switch {
	case f.Width > 64:
		l.kind = "bytes"
		return l
	case n > 8:
		l.kind, l.computed = "uint64", true
		return l
	case n > 4:
		l.kind = "uint64"
	default:
		l.kind = []string{"", "uint8", "uint16", "uint24", "uint32"}[n]
	}
	if !aligned {
		l.mask = maxOf(f.Width) << uint(n*8-bit-f.Width)
		if f.Width > maskBits {
			l.mask, l.computed = 0, true
		}
	}
	if f.Width == 1 {
		l.kind = "bool"
	}
	return l
}

// valueNames are the names the model gives values of header h's fields:
// the header a switch case or an equality test leads to, else the case's
// port.
func (g *gen) valueNames(h int) map[int]map[uint64]string {
	out := map[int]map[uint64]string{}
	name := func(f packet.FieldRef, v uint64, body *step, port string) {
		if f.Header != h {
			return
		}
		if fs := body.follows(); len(fs) == 1 {
			port = g.s.Headers[fs[0]].Name
		}
		if port == "" {
			return
		}
		if out[f.Field] == nil {
			out[f.Field] = map[uint64]string{}
		}
		if _, dup := out[f.Field][v]; !dup {
			out[f.Field][v] = port
		}
	}
	g.tree(h).walk(func(st *step) {
		switch st.kind {
		case stepSwitch:
			for _, a := range st.arms {
				for _, v := range a.values {
					name(st.field, v, a.body, a.port)
				}
			}
		case stepIf:
			if f, v, ok := equality(g.s, st.cond); ok {
				name(f, v, st.then, "")
			}
		}
	})
	return out
}

// equality recognises `f == c` (and a next edge's full mask).
func equality(s *packet.Schema, e *packet.Expr) (packet.FieldRef, uint64, bool) {
	f, set, ok := single(s, e)
	if !ok || len(set) != 1 || set[0].lo != set[0].hi {
		return packet.FieldRef{}, 0, false
	}
	return f, set[0].lo, true
}

// declare writes header h's Proto, ProtoFields and expert field.
func (g *gen) declare(h int) error {
	hs := g.s.Headers[h]
	p := g.protoName(h)
	names := g.valueNames(h)
	g.line(0, "")
	g.line(0, "-- Header %s: %d bytes%s.", hs.Name, hs.FixedBytes(), variableNote(hs))
	g.line(0, "local h_%s = { field = {} }", p)
	g.line(0, "h_%s.proto = Proto(%q, %q)", p, p, hs.Name+" header")
	var vars []string
	for i := range hs.Fields {
		f := &hs.Fields[i]
		ref := packet.FieldRef{Header: h, Field: i}
		v := g.fieldVar(ref)
		vars = append(vars, v)
		abbr := p + "." + f.Name
		if f.Variable() {
			g.line(0, "%s = ProtoField.bytes(%q, %q)", v, abbr, f.Name)
			continue
		}
		l := fieldLayout(f)
		switch l.kind {
		case "bytes":
			g.line(0, "%s = ProtoField.bytes(%q, %q)", v, abbr, f.Name)
		case "bool":
			g.line(0, "%s = ProtoField.bool(%q, %q, %d, nil, %s)", v, abbr, f.Name, l.n*8, hex(l.mask))
		default:
			var extra string // value string and mask, as far as there are any
			if l.mask != 0 {
				extra = ", " + hex(l.mask)
			}
			if f.Width <= 32 && len(names[i]) > 0 {
				extra = ", " + valueString(names[i]) + extra
			} else if extra != "" {
				extra = ", nil" + extra
			}
			g.line(0, "%s = ProtoField.%s(%q, %q, base.DEC%s)", v, l.kind, abbr, f.Name, extra)
		}
	}
	g.line(0, "h_%s.expert = ProtoExpert.new(%q, %q, expert.group.MALFORMED, expert.severity.ERROR)", p, p+".nsc.malformed", hs.Name+" is malformed")
	g.line(0, "h_%s.proto.fields = { %s }", p, strings.Join(vars, ", "))
	g.line(0, "h_%s.proto.experts = { h_%s.expert }", p, p)
	return nil
}

func variableNote(h *packet.HeaderSpec) string {
	if n := len(h.Fields); n > 0 && h.Fields[n-1].Variable() {
		return " and " + h.Fields[n-1].Name
	}
	return ""
}

func hex(v uint64) string { return fmt.Sprintf("0x%x", v) }

func valueString(names map[uint64]string) string {
	keys := make([]uint64, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("[%d] = %q", k, names[k]))
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// dissector writes header h's dissector function, and the function a
// heuristic dissector asks whether the bytes are such a header.
func (g *gen) dissector(h int) error {
	hs := g.s.Headers[h]
	p := g.protoName(h)
	g.line(0, "")
	g.line(0, "function h_%s.dissect(tvb, pinfo, tree)", p)
	g.line(1, "pinfo.cols.protocol = %q", hs.Name)
	info, err := g.values(h, func(need string) string {
		return fmt.Sprintf("return short(tvb, pinfo, tree, h_%s.proto, h_%s.expert, %q, %s)", p, p, hs.Name, need)
	})
	if err != nil {
		return err
	}
	g.line(1, "local t = tree:add(h_%s.proto, tvb(0, n))", p)
	for i := range hs.Fields {
		g.addField(packet.FieldRef{Header: h, Field: i})
	}
	g.line(1, "pinfo.cols.info:append(%s)", info)
	g.step(h, g.tree(h), 1, nil)
	g.line(0, "end")
	g.line(0, "")
	g.line(0, "function h_%s.proto.dissector(tvb, pinfo, tree)", p)
	g.line(1, "if next(active) == nil then cut = 0 end -- called by Wireshark: tvb knows its length")
	g.line(1, "active[%q] = true", p)
	g.line(1, "local n = h_%s.dissect(tvb, pinfo, tree)", p)
	g.line(1, "active[%q] = nil", p)
	g.line(1, "return n")
	g.line(0, "end")
	if g.heuristic(h) {
		g.line(0, "")
		g.line(0, "-- accepts: the bytes are a %s the model's parser does not reject.", hs.Name)
		g.line(0, "function h_%s.accepts(tvb)", p)
		if _, err := g.values(h, func(string) string { return "return false" }); err != nil {
			return err
		}
		g.accepting = true
		g.step(h, g.tree(h), 1, nil)
		g.accepting = false
		g.line(0, "end")
	}
	return nil
}

// tree is the decision tree after header h (nil: none).
func (g *gen) tree(h int) *step {
	if ts := g.trees[h]; len(ts) > 0 {
		return ts[0]
	}
	return nil
}

// values writes the reading of header h's fields into locals, n (its
// length) and size (its variable field's), with short (given the bytes
// needed) where the header does not fit. It returns the Info text.
func (g *gen) values(h int, short func(need string) string) (luaText, error) {
	hs := g.s.Headers[h]
	fixed := hs.FixedBytes()
	g.line(1, "if tvb:len() < %d then", fixed)
	g.line(2, "%s", short(strconv.Itoa(fixed)))
	g.line(1, "end")
	info := luaText{" " + hs.Name}
	for i := range hs.Fields {
		f := &hs.Fields[i]
		if f.Variable() || f.Width > 64 {
			continue
		}
		l := fieldLayout(f)
		g.line(1, "local %s = tvb(%d, %d):bitfield(%d, %d)", valueVar(f), l.off, l.n, f.Offset%8, f.Width)
		info = append(info, " "+f.Name+"=", luaValue(valueVar(f)))
	}
	g.line(1, "local n = %d", fixed)
	if last := &hs.Fields[len(hs.Fields)-1]; last.Variable() {
		size, err := g.luaArith(h, last.Length)
		if err != nil {
			return nil, fmt.Errorf("header %s: the size of %s: %w", hs.Name, last.Name, err)
		}
		g.line(1, "local size = %s", size)
		g.line(1, "if size < 0 or tvb:len() < n + size then")
		g.line(2, "%s", short("n + math.max(size, 0)"))
		g.line(1, "end")
		g.line(1, "n = n + size")
	}
	return info, nil
}

// addField writes the line that adds field f to the tree.
func (g *gen) addField(f packet.FieldRef) {
	fs := g.s.FieldSpec(f)
	v := g.fieldVar(f)
	if fs.Variable() {
		g.line(1, "if size > 0 then t:add(%s, tvb(%d, size)) end", v, fs.Offset/8)
		return
	}
	l := fieldLayout(fs)
	if l.computed {
		g.line(1, "t:add(%s, tvb(%d, %d), %s)", v, l.off, l.n, valueVar(fs))
		return
	}
	g.line(1, "t:add(%s, tvb(%d, %d))", v, l.off, l.n)
}

// step writes the decision tree after header h: every branch returns.
// why says, as a Lua string expression, what led to a drop.
func (g *gen) step(h int, st *step, depth int, why luaText) {
	p := g.protoName(h)
	if g.accepting && (st == nil || st.kind == stepEnd || st.kind == stepNext) {
		g.line(depth, "return true")
		return
	}
	if next, ok := g.then[h]; ok && (st == nil || st.kind == stepEnd) {
		q := g.protoName(next)
		g.line(depth, "return follow(tvb, n, pinfo, tree, t, h_%s.expert, %q) -- next as --headers orders them", q, q)
		return
	}
	if st == nil {
		g.line(depth, "return rest(tvb, n, pinfo, tree)")
		return
	}
	switch st.kind {
	case stepEnd:
		g.line(depth, "return rest(tvb, n, pinfo, tree) -- %s: the model's parsing ends here", st.at)
	case stepFail:
		if g.accepting {
			g.line(depth, "return false -- %s", st.at)
			return
		}
		if why == nil {
			why = luaText{"the model's parser"}
		}
		why = append(why, fmt.Sprintf(": dropped at %s (%s)", st.at, st.reason))
		g.line(depth, "malformed(pinfo, t, h_%s.expert, %s)", p, why)
		g.line(depth, "return rest(tvb, n, pinfo, tree)")
	case stepNext:
		g.next(h, st, depth)
	case stepIf:
		cond, ok := g.luaCond(h, st.cond)
		if !ok {
			stop := "rest(tvb, n, pinfo, tree)"
			if g.accepting {
				stop = "true"
			}
			g.line(depth, "return %s -- %s: `%s` is not translated; decoding stops", stop, st.at, st.cond.Text)
			return
		}
		g.line(depth, "if %s then", cond)
		g.step(h, st.then, depth+1, luaText{st.cond.Text + " is true"})
		g.line(depth, "else")
		g.step(h, st.els, depth+1, luaText{st.cond.Text + " is false"})
		g.line(depth, "end")
	case stepSwitch:
		f := g.s.FieldSpec(st.field)
		for i, a := range st.arms {
			kw := "elseif"
			if i == 0 {
				kw = "if"
			}
			g.line(depth, "%s %s then", kw, luaSet(valueVar(f), valuesSet(a.values), f.Width))
			g.step(h, a.body, depth+1, luaText{g.s.FieldName(st.field) + " is ", luaValue(valueVar(f))})
		}
		g.line(depth, "else")
		g.step(h, st.els, depth+1, luaText{g.s.FieldName(st.field) + " is ", luaValue(valueVar(f)), ", no case of the switch"})
		g.line(depth, "end")
	}
}

// heuristic reports whether header h binds by a heuristic dissector.
func (g *gen) heuristic(h int) bool {
	return slices.ContainsFunc(g.binds[h], func(b binding) bool { return b.heuristic })
}

// luaText is a Lua string built of literals and values (luaValue).
type luaText []string

// luaValue marks a Lua variable within a luaText.
func luaValue(v string) string { return "\x00" + v }

// String is the Lua expression, adjacent literals merged.
func (t luaText) String() string {
	var parts []string
	lit := ""
	for _, s := range t {
		if v, ok := strings.CutPrefix(s, "\x00"); ok {
			if lit != "" {
				parts = append(parts, strconv.Quote(lit))
				lit = ""
			}
			parts = append(parts, "tostring("+v+")")
			continue
		}
		lit += s
	}
	if lit != "" {
		parts = append(parts, strconv.Quote(lit))
	}
	return strings.Join(parts, " .. ")
}

// next writes the hand-off to the header st says follows.
func (g *gen) next(h int, st *step, depth int) {
	p := g.protoName(h)
	to := g.s.Headers[st.header]
	switch {
	case slices.Contains(g.headers, st.header):
		q := g.protoName(st.header)
		g.line(depth, "return follow(tvb, n, pinfo, tree, t, h_%s.expert, %q)", q, q)
	case nativeDissectors[to.Name] != "":
		g.line(depth, "return follow(tvb, n, pinfo, tree, t, h_%s.expert, %q) -- %s", p, nativeDissectors[to.Name], to.Name)
	default:
		g.line(depth, "return rest(tvb, n, pinfo, tree) -- %s: %s follows; not dissected here", st.at, to.Name)
	}
}

// luaCond translates a condition on header h's fields.
func (g *gen) luaCond(h int, e *packet.Expr) (string, bool) {
	switch e.Kind {
	case packet.ENot:
		a, ok := g.luaCond(h, e.A)
		return "not (" + a + ")", ok
	case packet.EAnd, packet.EOr:
		a, ok1 := g.luaCond(h, e.A)
		b, ok2 := g.luaCond(h, e.B)
		op := map[packet.ExprKind]string{packet.EAnd: "and", packet.EOr: "or"}[e.Kind]
		return "(" + a + " " + op + " " + b + ")", ok1 && ok2
	}
	ref, set, ok := single(g.s, e)
	if !ok || ref.Header != h || len(set) > maxSpans {
		return "", false
	}
	f := g.s.FieldSpec(ref)
	return luaSet(valueVar(f), set, f.Width), true
}

// maxSpans is the most value spans a condition is written out with.
const maxSpans = 16

// luaSet is the Lua condition "v is in set".
func luaSet(v string, set valueSet, width int) string {
	switch {
	case len(set) == 0:
		return "false"
	case set.isFull(width):
		return "true"
	}
	var parts []string
	for _, x := range set {
		switch {
		case x.lo == x.hi:
			parts = append(parts, fmt.Sprintf("%s == %s", v, luaNum(x.lo, width)))
		case x.lo == 0:
			parts = append(parts, fmt.Sprintf("%s <= %s", v, luaNum(x.hi, width)))
		case x.hi == maxOf(width):
			parts = append(parts, fmt.Sprintf("%s >= %s", v, luaNum(x.lo, width)))
		default:
			parts = append(parts, fmt.Sprintf("(%s >= %s and %s <= %s)", v, luaNum(x.lo, width), v, luaNum(x.hi, width)))
		}
	}
	return strings.Join(parts, " or ")
}

// luaNum is a constant as the value of a width-bit field: a number up to
// 32 bits (TvbRange:bitfield's type), a UInt64 above.
func luaNum(x uint64, width int) string {
	if width <= 32 {
		return strconv.FormatUint(x, 10)
	}
	return fmt.Sprintf("UInt64.fromhex(%q)", fmt.Sprintf("%016x", x))
}

// luaArith translates a variable field's size: + - * of constants and the
// header's fields of up to 32 bits.
func (g *gen) luaArith(h int, e *packet.Expr) (string, error) {
	switch e.Kind {
	case packet.EConst:
		if e.Const.Hi != 0 || e.Const.Lo > 1<<32 {
			return "", fmt.Errorf("constant %s is too large", e.Text)
		}
		return strconv.FormatUint(e.Const.Lo, 10), nil
	case packet.EField:
		if e.Field.Header != h || g.s.FieldSpec(e.Field).Width > 32 {
			return "", fmt.Errorf("%s is not a field of the header of up to 32 bits", e.Text)
		}
		return valueVar(g.s.FieldSpec(e.Field)), nil
	case packet.EAdd, packet.ESub, packet.EMul:
		a, err := g.luaArith(h, e.A)
		if err != nil {
			return "", err
		}
		b, err := g.luaArith(h, e.B)
		op := map[packet.ExprKind]string{packet.EAdd: "+", packet.ESub: "-", packet.EMul: "*"}[e.Kind]
		return "(" + a + " " + op + " " + b + ")", err
	}
	return "", fmt.Errorf("%s: only + - * of fields and constants are translated", e.Text)
}

// register writes the registrations in Wireshark's dissector tables.
func (g *gen) register() {
	g.line(0, "")
	g.line(0, "-- Where the model parses these headers after one Wireshark dissects.")
	tables := map[string]bool{}
	for _, h := range g.headers {
		for _, b := range g.binds[h] {
			tables[b.table] = !b.heuristic
		}
	}
	tables["udp.port"] = true // for Decode As
	names := make([]string, 0, len(tables))
	for t, table := range tables {
		if table {
			names = append(names, t)
		}
	}
	sort.Strings(names)
	for _, t := range names {
		g.line(0, "local %s = DissectorTable.get(%q)", tableVar(t), t)
	}
	for _, h := range g.headers {
		p := g.protoName(h)
		for _, b := range g.binds[h] {
			if b.heuristic {
				g.line(0, "-- after %s on any port: a heuristic dissector", g.s.Headers[b.field.Header].Name)
				g.line(0, "h_%s.proto:register_heuristic(%q, function(tvb, pinfo, tree)", p, b.table)
				g.line(1, "if not h_%s.accepts(tvb) then return false end", p)
				g.line(1, "h_%s.proto.dissector(tvb, pinfo, tree)", p)
				g.line(1, "return true")
				g.line(0, "end)")
				continue
			}
			g.line(0, "-- %s, on the model's paths to %s", g.s.FieldName(b.field), g.s.Headers[h].Name)
			for _, x := range b.set {
				if x.lo == x.hi {
					g.line(0, "%s:add(%d, h_%s.proto)", tableVar(b.table), x.lo, p)
				} else {
					g.line(0, "%s:add(\"%d-%d\", h_%s.proto)", tableVar(b.table), x.lo, x.hi, p)
				}
			}
		}
		g.line(0, "udp_port:add_for_decode_as(h_%s.proto)", p)
	}
}

func tableVar(t string) string { return strings.NewReplacer(".", "_").Replace(t) }
