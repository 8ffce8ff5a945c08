package packet

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// TableEntry is an entry of a control-plane script with the table it is for.
type TableEntry struct {
	Table string
	Entry Entry
}

// ScriptError is a problem in a table_add script, at a line of file Name.
type ScriptError struct {
	Name string
	Line int
	Err  error
}

func (e *ScriptError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err) }

func (e *ScriptError) Unwrap() error { return e.Err }

// scriptWord is a word of a script and the line it is on.
type scriptWord struct {
	s    string
	line int
}

// ParseEntries reads a script of table_add commands, the form BMv2's CLI and
// seed 000 use:
//
//	table_add TABLE ACTION KEY... => PARAM... [PRIORITY]
//
// A command may span lines: it runs until the next table_add or the end. '#'
// starts a comment. Numbers are hex (0x...) or decimal. Keys are written by
// kind: exact v, lpm v/len, ternary v&&&mask (or v/len for a prefix mask),
// range lo->hi. PRIORITY follows the params when the table needs one (lower
// wins). tables resolves a table name to its spec. The entries are
// validated as the whole content of their tables, as CheckEntries does:
// each on its own, no duplicates, no table over its size. Lines may be of
// any length; a word may not be longer than 320 bytes (maxWord). Errors in the
// script are *ScriptError, at the line of the offending word or else of the
// table_add.
func ParseEntries(name string, r io.Reader, tables func(string) (*TableSpec, bool)) ([]TableEntry, error) {
	p := &scriptParser{tables: tables, sets: newScriptSets(tables)}
	err := readWords(r, p.word)
	if err == nil {
		err = p.command()
	}
	var se *ScriptError
	if errors.As(err, &se) { // every error of a script is one
		se.Name = name
		return nil, se
	}
	return p.out, err
}

// scriptParser parses a script's commands as their words come, so that
// it holds one command's words at a time.
type scriptParser struct {
	tables func(string) (*TableSpec, bool)
	sets   *scriptSets
	cmd    []scriptWord // the command so far
	out    []TableEntry
}

// word takes the script's next word.
func (p *scriptParser) word(w scriptWord) error {
	if !isCommand(w.s) {
		if len(p.cmd) == 0 {
			return &ScriptError{Line: w.line, Err: fmt.Errorf("expected table_add, found %q", w.s)}
		}
		p.cmd = append(p.cmd, w)
		return nil
	}
	if err := p.command(); err != nil {
		return err
	}
	p.cmd = append(p.cmd[:0], w)
	return nil
}

// command parses the command whose words p holds, if it is a table_add
// (the others drive a simulator: no table content).
func (p *scriptParser) command() error {
	if len(p.cmd) == 0 || p.cmd[0].s != "table_add" {
		return nil
	}
	te, serr := parseEntry(p.cmd[0].line, p.cmd[1:], p.tables)
	if serr != nil {
		return serr
	}
	if err := p.sets.insert(&te, len(p.out)); err != nil {
		return &ScriptError{Line: te.Entry.Line, Err: fmt.Errorf("table_add %s: %w", te.Table, err)}
	}
	p.out = append(p.out, te)
	return nil
}

// maxWord is the longest word a table script may have: four times the
// longest a valid entry needs (a 128-bit range in decimal), so that errors
// quoting a word stay short.
const maxWord = 4 * 80

// readWords calls word with each word of a script, and its line, dropping
// comments; it stops at word's first error. Lines may be of any length.
func readWords(r io.Reader, word func(scriptWord) error) error {
	br := bufio.NewReader(r)
	var long []byte // a line longer than br's buffer, gathered
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		for err == bufio.ErrBufferFull {
			long = append(long, b...)
			b, err = br.ReadSlice('\n')
		}
		if long != nil {
			b, long = append(long, b...), nil
		}
		if err != nil && err != io.EOF {
			return &ScriptError{Line: line, Err: err}
		}
		text, _, _ := strings.Cut(string(b), "#")
		for _, f := range strings.Fields(text) {
			if len(f) > maxWord {
				return &ScriptError{Line: line, Err: fmt.Errorf("word of %d bytes (at most %d): %.20q...", len(f), maxWord, f)}
			}
			if err := word(scriptWord{f, line}); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// isCommand reports whether word starts a command of the BMv2/p4bm CLI.
// Only table_add fills tables; run_traffic, counter_read, reset_state and
// exit drive the simulator and are skipped (seed 000's script ends with
// run_traffic).
func isCommand(word string) bool {
	switch word {
	case "table_add", "run_traffic", "counter_read", "reset_state", "exit":
		return true
	}
	return false
}

// parseEntry parses the words after one table_add, which is at line start.
func parseEntry(start int, toks []scriptWord, tables func(string) (*TableSpec, bool)) (TableEntry, *ScriptError) {
	fail := func(line int, format string, args ...any) (TableEntry, *ScriptError) {
		return TableEntry{}, &ScriptError{Line: line, Err: fmt.Errorf(format, args...)}
	}
	if len(toks) == 0 {
		return fail(start, "table_add: missing table name")
	}
	tname := toks[0].s
	spec, ok := tables(tname)
	if !ok || spec == nil {
		return fail(toks[0].line, "table_add: unknown table %q", tname)
	}
	where := "table_add " + tname
	if len(toks) < 2 {
		return fail(start, "%s: missing action", where)
	}
	act, ok := spec.ActionIndex(toks[1].s)
	if !ok {
		return fail(toks[1].line, "%s: unknown action %q", where, toks[1].s)
	}
	arrow := -1
	for i := 2; i < len(toks); i++ {
		if toks[i].s == "=>" {
			arrow = i
			break
		}
	}
	if arrow < 0 {
		return fail(start, "%s: missing =>", where)
	}
	keys := toks[2:arrow]
	if len(keys) != len(spec.Keys) {
		return fail(start, "%s: %d keys, table has %d", where, len(keys), len(spec.Keys))
	}
	e := Entry{Action: act, Line: start, Keys: make([]KeyMatch, 0, len(keys))}
	for i, t := range keys {
		km, err := parseKey(t.s, spec.Keys[i])
		if err != nil {
			return fail(t.line, "%s: key %s: %v", where, spec.Keys[i].Name, err)
		}
		e.Keys = append(e.Keys, km)
	}
	a := &spec.Actions[act]
	rest := toks[arrow+1:]
	switch want := len(a.Params); {
	case len(rest) < want:
		return fail(start, "%s: action %s takes %d params, got %d", where, a.Name, want, len(rest))
	case spec.NeedsPriority() && len(rest) == want:
		return fail(start, "%s: missing priority after the params", where)
	case !spec.NeedsPriority() && len(rest) > want:
		return fail(rest[want].line, "%s: unexpected %q after the params of %s (table takes no priority)", where, rest[want].s, a.Name)
	case len(rest) > want+1:
		return fail(rest[want+1].line, "%s: unexpected %q after the priority", where, rest[want+1].s)
	}
	for i, p := range a.Params {
		v, err := scriptValue(rest[i].s, p.Width)
		if err != nil {
			return fail(rest[i].line, "%s: param %s of %s: %q: %v", where, p.Name, a.Name, rest[i].s, err)
		}
		if !v.Fits(p.Width) {
			return fail(rest[i].line, "%s: param %s of %s: %s wider than %d bits", where, p.Name, a.Name, rest[i].s, p.Width)
		}
		e.Params = append(e.Params, v)
	}
	if spec.NeedsPriority() {
		t := rest[len(a.Params)]
		v, err := ParseValue(t.s)
		if err != nil || v.BitLen() > 31 {
			return fail(t.line, "%s: priority %q is not a number below 2^31", where, t.s)
		}
		e.Priority = int(v.Lo)
	}
	return TableEntry{Table: tname, Entry: e}, nil
}

// parseKey reads one key word in the form its kind takes.
func parseKey(s string, k KeySpec) (KeyMatch, error) {
	num := func(s string, what string) (Value, error) {
		v, err := scriptValue(s, k.Width)
		if err != nil {
			return Value{}, fmt.Errorf("%s %q: %v", what, s, err)
		}
		if !v.Fits(k.Width) {
			return Value{}, fmt.Errorf("%s %s wider than %d bits", what, s, k.Width)
		}
		return v, nil
	}
	prefix := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > k.Width {
			return 0, fmt.Errorf("prefix length %q not in 0..%d", s, k.Width)
		}
		return n, nil
	}
	var m KeyMatch
	var err error
	switch k.Kind {
	case Exact:
		m.Value, err = num(s, "value")
	case LPM:
		v, l, ok := strings.Cut(s, "/")
		if !ok {
			return m, fmt.Errorf("lpm key %q is not value/prefix-length", s)
		}
		if m.Value, err = num(v, "value"); err == nil {
			m.PrefixLen, err = prefix(l)
		}
	case Ternary:
		if v, mask, ok := strings.Cut(s, "&&&"); ok {
			if m.Value, err = num(v, "value"); err == nil {
				m.Mask, err = num(mask, "mask")
			}
		} else if v, l, ok := strings.Cut(s, "/"); ok {
			var n int
			if m.Value, err = num(v, "value"); err == nil {
				n, err = prefix(l)
				m.Mask = PrefixMask(k.Width, n)
			}
		} else {
			return m, fmt.Errorf("ternary key %q is not value&&&mask or value/prefix-length", s)
		}
	case Range:
		lo, hi, ok := strings.Cut(s, "->")
		if !ok {
			return m, fmt.Errorf("range key %q is not low->high", s)
		}
		if m.Lo, err = num(lo, "low bound"); err == nil {
			if m.Hi, err = num(hi, "high bound"); err == nil && m.Lo.Cmp(m.Hi) > 0 {
				err = fmt.Errorf("empty range %q", s)
			}
		}
	default:
		err = fmt.Errorf("unknown match kind %v", k.Kind)
	}
	return m, err
}

// FormatEntries writes es one table_add per line, every number in hex padded
// to its field's width (priorities and prefix lengths in decimal). The output
// is deterministic and ParseEntries reads it back to es, Line aside.
func FormatEntries(w io.Writer, es []TableEntry, tables func(string) (*TableSpec, bool)) error {
	bw := bufio.NewWriter(w)
	var buf []byte
	for i := range es {
		te := &es[i]
		spec, ok := tables(te.Table)
		if !ok || spec == nil {
			return fmt.Errorf("entry %d: unknown table %q", i, te.Table)
		}
		e := &te.Entry
		if err := spec.checkEntry(e); err != nil {
			return fmt.Errorf("entry %d: table %s: %w", i, te.Table, err)
		}
		a := &spec.Actions[e.Action]
		buf = append(buf[:0], "table_add "...)
		buf = append(buf, te.Table...)
		buf = append(buf, ' ')
		buf = append(buf, a.Name...)
		for j, k := range spec.Keys {
			m := &e.Keys[j]
			d := (k.Width + 3) / 4
			buf = append(buf, ' ')
			switch k.Kind {
			case Exact:
				buf = m.Value.appendHex(buf, d)
			case LPM:
				buf = m.Value.appendHex(buf, d)
				buf = append(buf, '/')
				buf = strconv.AppendInt(buf, int64(m.PrefixLen), 10)
			case Ternary:
				buf = m.Value.appendHex(buf, d)
				buf = append(buf, "&&&"...)
				buf = m.Mask.appendHex(buf, d)
			case Range:
				buf = m.Lo.appendHex(buf, d)
				buf = append(buf, "->"...)
				buf = m.Hi.appendHex(buf, d)
			}
		}
		buf = append(buf, " =>"...)
		for j, p := range a.Params {
			buf = append(buf, ' ')
			buf = e.Params[j].appendHex(buf, (p.Width+3)/4)
		}
		if spec.NeedsPriority() {
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, int64(e.Priority), 10)
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// scriptValue reads a key or parameter value of a width-bit field as
// BMv2's runtime CLI does: an IPv4 address for 32 bits (10.0.0.1), a MAC
// for 48 (02:00:00:00:00:01), an IPv6 address for 128 (fd00::1), else a
// number (ParseValue).
func scriptValue(s string, width int) (Value, error) {
	switch {
	case width == 32 && strings.Contains(s, "."):
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return Value{}, fmt.Errorf("not a number or an IPv4 address")
		}
		b := a.As4()
		return V(uint64(binary.BigEndian.Uint32(b[:]))), nil
	case width == 48 && strings.Contains(s, ":"):
		hw, err := net.ParseMAC(s)
		if err != nil || len(hw) != 6 {
			return Value{}, fmt.Errorf("not a number or a MAC address")
		}
		var b [8]byte
		copy(b[2:], hw)
		return V(binary.BigEndian.Uint64(b[:])), nil
	case width == 128 && strings.Contains(s, ":"):
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return Value{}, fmt.Errorf("not a number or an IPv6 address")
		}
		b := a.As16()
		return Value{Hi: binary.BigEndian.Uint64(b[:8]), Lo: binary.BigEndian.Uint64(b[8:])}, nil
	}
	return ParseValue(s)
}
