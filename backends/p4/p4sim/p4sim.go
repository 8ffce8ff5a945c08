// Package p4sim is a small interpreter for the P4_16 the P4 backend
// writes, with the architectures' meaning as far as the programs use it
// (v1model as BMv2's simple_switch runs it, xsa as VitisNet's
// XilinxPipeline): parser states with extract, verify and select, a
// parser error that hands over to the control, tables, actions (also
// called directly, with inout parameters), if/else, switch on action_run,
// return, setValid/setInvalid, counters, drops, and a deparser that emits
// valid headers and then the bytes the parser did not take. Expressions
// follow P4_16's precedence and typing: bit<W> arithmetic wraps at W,
// casts truncate or zero-extend, ++ concatenates, shifts past the width
// give 0. It reads the program's text, not the generator's data, so it
// checks what a P4 compiler would see.
//
// Parse reads a program, Tables loads the table_add lines the backend
// converts, New makes a Machine whose Run takes a frame to the bytes that
// leave (nil: dropped) or to an error where the program reads a field of
// an invalid header (P4 leaves that value unspecified). InvalidHeaderAccesses
// is p4c's header validity check on the same text.
//
// p4c and BMv2 are not installable here (docs/p4.md); this is what holds
// the generated programs to the reference interpreter meanwhile. Its
// users are backends/p4's tests and nsc fuzz.
package p4sim

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

// ---- lexer

type tok struct {
	s    string
	line int
}

func lex(src string) ([]tok, error) {
	var out []tok
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "//") || c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", line)
			}
			line += strings.Count(src[i:i+2+j], "\n")
			i += j + 4
		case isWord(c):
			j := i
			for j < len(src) && (isWord(src[j]) || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			out = append(out, tok{src[i:j], line})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (isWord(src[j]) || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			out = append(out, tok{src[i:j], line})
			i = j
		default:
			n := 1
			for _, op := range []string{"&&&", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "++"} {
				if strings.HasPrefix(src[i:], op) {
					n = len(op)
					break
				}
			}
			out = append(out, tok{src[i : i+n], line})
			i += n
		}
	}
	return out, nil
}

func isWord(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// ---- syntax

type expr interface{}

type (
	eLit struct {
		w int // 0: an untyped integer
		v packet.Value
	}
	eBool bool
	eRef  struct{ path string }
	eCall struct {
		fn   string
		args []expr
	} // fn is a dotted path: hdr.x.isValid, t.apply
	eSlice struct {
		x      expr
		hi, lo int
	}
	eCast struct {
		w int
		x expr
	}
	eUn struct {
		op string
		x  expr
	}
	eBin struct {
		op   string
		a, b expr
	}
)

type stmt interface{}

type (
	sAssign struct{ lhs, rhs expr }
	sDecl   struct {
		name string
		typ  string // "bool" or "bit"
		w    int
		init expr
	}
	sCall struct{ call eCall }
	sIf   struct {
		cond      expr
		then, els []stmt
	}
	sBlock  struct{ body []stmt }
	sReturn struct{}
	sSwitch struct {
		table string
		cases []swCase
	}
	sTransition struct {
		to     string // a state, or "" with a select
		key    expr
		cases  []selCase
		dflt   string
		hasDef bool
	}
)

type swCase struct {
	labels []string
	body   []stmt
}

type selCase struct {
	v  expr
	to string
}

type field struct {
	name string
	w    int // a bit<W> or varbit<W> field
	vb   bool
}

type param struct {
	dir, name string
	w         int
}

type action struct {
	params []param
	body   []stmt
}

// tableDecl is a table as the program declares it.
type tableDecl struct {
	keys    []expr
	actions []string
	dflt    string
	args    []expr
}

// Program is a parsed P4 program.
type Program struct {
	headers map[string][]field
	structs map[string][]structField
	states  map[string][]stmt
	actions map[string]*action
	tables  map[string]*tableDecl
	// control-level variable declarations and the apply block.
	locals  []sDecl
	apply   []stmt
	deparse []string // hdr paths emitted in order
	// parameter names and types of the parser and control
	hdrType, metaName, metaType, stdName string
}

type structField struct{ name, typ string }

type pparser struct {
	t   []tok
	i   int
	err error
}

func (p *pparser) peek() string {
	if p.i < len(p.t) {
		return p.t[p.i].s
	}
	return ""
}

func (p *pparser) next() string {
	s := p.peek()
	p.i++
	return s
}

func (p *pparser) fail(format string, args ...any) {
	if p.err == nil {
		line := 0
		if p.i < len(p.t) {
			line = p.t[p.i].line
		}
		p.err = fmt.Errorf("p4 line %d: %s", line, fmt.Sprintf(format, args...))
	}
	p.i = len(p.t)
}

func (p *pparser) want(s string) {
	if got := p.next(); got != s {
		p.fail("want %q, got %q", s, got)
	}
}

func (p *pparser) int() int {
	n, err := strconv.Atoi(p.next())
	if err != nil {
		p.fail("want a number")
	}
	return n
}

// bitType reads bit<W> (or varbit<W>) and returns W.
func (p *pparser) bitType() (int, bool) {
	kw := p.next()
	if kw != "bit" && kw != "varbit" {
		p.fail("want a bit type, got %q", kw)
	}
	p.want("<")
	w := p.int()
	p.want(">")
	return w, kw == "varbit"
}

// Parse reads a program's text; an error names the line it could not read.
func Parse(src string) (*Program, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &pparser{t: toks}
	prog := &Program{headers: map[string][]field{}, structs: map[string][]structField{}, states: map[string][]stmt{},
		actions: map[string]*action{}, tables: map[string]*tableDecl{}}
	for p.i < len(p.t) && p.err == nil {
		switch kw := p.next(); kw {
		case "header":
			name := p.next()
			p.want("{")
			var fs []field
			for p.peek() != "}" && p.err == nil {
				w, vb := p.bitType()
				fs = append(fs, field{p.next(), w, vb})
				p.want(";")
			}
			p.want("}")
			prog.headers[name] = fs
		case "struct":
			name := p.next()
			p.want("{")
			var fs []structField
			for p.peek() != "}" && p.err == nil {
				typ := p.peek()
				if typ == "bit" {
					w, _ := p.bitType()
					typ = fmt.Sprintf("bit<%d>", w)
				} else {
					p.next()
				}
				fs = append(fs, structField{p.next(), typ})
				p.want(";")
			}
			p.want("}")
			prog.structs[name] = fs
		case "error":
			p.want("{")
			for p.peek() != "}" && p.err == nil {
				p.next()
			}
			p.want("}")
		case "parser":
			p.parserBlock(prog)
		case "control":
			p.controlBlock(prog)
		default:
			// The package instance: skip to "main ;".
			for p.err == nil && p.i < len(p.t) && p.next() != "main" {
			}
			p.want(";")
		}
	}
	return prog, p.err
}

// params reads a parenthesized parameter list: [dir] type name, ...
func (p *pparser) params() []param {
	p.want("(")
	var out []param
	for p.peek() != ")" && p.err == nil {
		dir := ""
		if s := p.peek(); s == "in" || s == "out" || s == "inout" {
			dir = p.next()
		}
		w := 0
		if p.peek() == "bit" {
			w, _ = p.bitType()
		} else {
			p.next()
		}
		out = append(out, param{dir, p.next(), w})
		if p.peek() == "," {
			p.next()
		}
	}
	p.want(")")
	return out
}

func (p *pparser) parserBlock(prog *Program) {
	p.next() // name
	p.want("(")
	var toks []string
	for p.peek() != ")" && p.err == nil {
		toks = append(toks, p.next())
	}
	p.want(")")
	// packet_in packet , out headers_t hdr , inout META meta , inout standard_metadata_t STD
	prog.hdrType, prog.metaType, prog.metaName, prog.stdName = toks[4], toks[8], toks[9], toks[len(toks)-1]
	p.want("{")
	for p.peek() == "state" && p.err == nil {
		p.next()
		name := p.next()
		p.want("{")
		var body []stmt
		for p.peek() != "}" && p.err == nil {
			body = append(body, p.statement())
		}
		p.want("}")
		prog.states[name] = body
	}
	p.want("}")
}

func (p *pparser) controlBlock(prog *Program) {
	name := p.next()
	p.params()
	p.want("{")
	deparser := strings.HasPrefix(name, "Deparser")
	for p.peek() != "}" && p.err == nil {
		switch p.peek() {
		case "action":
			p.next()
			an := p.next()
			a := &action{params: p.params()}
			a.body = p.block()
			prog.actions[an] = a
		case "table":
			p.next()
			tn := p.next()
			t := &tableDecl{}
			p.want("{")
			for p.peek() != "}" && p.err == nil {
				switch item := p.next(); item {
				case "key":
					p.want("=")
					p.want("{")
					for p.peek() != "}" && p.err == nil {
						t.keys = append(t.keys, p.expr())
						p.want(":")
						p.next()
						p.want(";")
					}
					p.want("}")
				case "actions":
					p.want("=")
					p.want("{")
					for p.peek() != "}" && p.err == nil {
						t.actions = append(t.actions, p.next())
						p.want(";")
					}
					p.want("}")
				case "size":
					p.want("=")
					p.int()
					p.want(";")
				case "default_action":
					p.want("=")
					t.dflt = p.next()
					p.want("(")
					for p.peek() != ")" && p.err == nil {
						t.args = append(t.args, p.expr())
						if p.peek() == "," {
							p.next()
						}
					}
					p.want(")")
					p.want(";")
				default:
					p.fail("table item %q", item)
				}
			}
			p.want("}")
			prog.tables[tn] = t
		case "counter":
			for p.err == nil && p.next() != ";" {
			}
		case "bit", "bool":
			d := p.statement().(sDecl)
			prog.locals = append(prog.locals, d)
		case "apply":
			p.next()
			body := p.block()
			if deparser {
				for _, s := range body {
					c := s.(sCall).call
					prog.deparse = append(prog.deparse, c.args[0].(eRef).path)
				}
			} else if len(body) > 0 {
				prog.apply = body
			}
		default:
			p.fail("control item %q", p.peek())
		}
	}
	p.want("}")
}

func (p *pparser) block() []stmt {
	p.want("{")
	var out []stmt
	for p.peek() != "}" && p.err == nil {
		out = append(out, p.statement())
	}
	p.want("}")
	return out
}

func (p *pparser) statement() stmt {
	switch p.peek() {
	case "{":
		return sBlock{p.block()}
	case "return":
		p.next()
		p.want(";")
		return sReturn{}
	case "if":
		p.next()
		p.want("(")
		c := p.expr()
		p.want(")")
		s := sIf{cond: c, then: p.block()}
		if p.peek() == "else" {
			p.next()
			if p.peek() == "if" {
				s.els = []stmt{p.statement()}
			} else {
				s.els = p.block()
			}
		}
		return s
	case "switch":
		p.next()
		p.want("(")
		t := p.next()
		p.want(".")
		p.want("apply")
		p.want("(")
		p.want(")")
		p.want(".")
		p.want("action_run")
		p.want(")")
		p.want("{")
		s := sSwitch{table: t}
		var labels []string
		for p.peek() != "}" && p.err == nil {
			labels = append(labels, p.next())
			p.want(":")
			if p.peek() == "{" {
				s.cases = append(s.cases, swCase{labels, p.block()})
				labels = nil
			}
		}
		p.want("}")
		return s
	case "bool", "bit":
		d := sDecl{typ: p.peek()}
		if d.typ == "bool" {
			p.next()
			d.w = 1
		} else {
			d.w, _ = p.bitType()
		}
		d.name = p.next()
		if p.peek() == "=" {
			p.next()
			d.init = p.expr()
		}
		p.want(";")
		return d
	case "transition":
		p.next()
		tr := sTransition{}
		if p.peek() != "select" {
			tr.to = p.next()
			p.want(";")
			return tr
		}
		p.next()
		p.want("(")
		tr.key = p.expr()
		p.want(")")
		p.want("{")
		for p.peek() != "}" && p.err == nil {
			if p.peek() == "default" {
				p.next()
				p.want(":")
				tr.dflt, tr.hasDef = p.next(), true
			} else {
				v := p.expr()
				p.want(":")
				tr.cases = append(tr.cases, selCase{v, p.next()})
			}
			p.want(";")
		}
		p.want("}")
		return tr
	}
	lhs := p.expr()
	if p.peek() == "=" {
		p.next()
		rhs := p.expr()
		p.want(";")
		return sAssign{lhs, rhs}
	}
	p.want(";")
	c, ok := lhs.(eCall)
	if !ok {
		p.fail("not a statement")
	}
	return sCall{c}
}

// P4_16's binary operators, loosest first (p4c's grammar).
var levels = [][]string{{"||"}, {"&&"}, {"==", "!="}, {"<", ">", "<=", ">="}, {"|"}, {"^"}, {"&"}, {"<<", ">>"}, {"++", "+", "-"}, {"*"}}

func (p *pparser) expr() expr { return p.binary(0) }

func (p *pparser) binary(level int) expr {
	if level == len(levels) {
		return p.unary()
	}
	x := p.binary(level + 1)
	for {
		op := p.peek()
		found := false
		for _, o := range levels[level] {
			found = found || o == op
		}
		if !found {
			return x
		}
		p.next()
		x = eBin{op, x, p.binary(level + 1)}
	}
}

func (p *pparser) unary() expr {
	switch p.peek() {
	case "!", "~", "-":
		op := p.next()
		return eUn{op, p.unary()}
	case "(":
		if p.i+1 < len(p.t) && p.t[p.i+1].s == "bit" {
			p.next()
			w, _ := p.bitType()
			p.want(")")
			return eCast{w, p.unary()}
		}
	}
	return p.postfix()
}

func (p *pparser) postfix() expr {
	x := p.primary()
	for p.peek() == "[" {
		p.next()
		hi := p.int()
		p.want(":")
		lo := p.int()
		p.want("]")
		x = eSlice{x, hi, lo}
	}
	return x
}

func (p *pparser) primary() expr {
	s := p.next()
	switch {
	case s == "(":
		x := p.expr()
		p.want(")")
		return x
	case s == "true" || s == "false":
		return eBool(s == "true")
	case s[0] >= '0' && s[0] <= '9':
		w := 0
		if i := strings.Index(s, "w"); i > 0 {
			w, _ = strconv.Atoi(s[:i])
			s = s[i+1:]
		}
		v, err := packet.ParseValue(s)
		if err != nil {
			p.fail("number %q", s)
		}
		return eLit{w, v}
	}
	path := s
	for p.peek() == "." {
		p.next()
		path += "." + p.next()
	}
	if p.peek() != "(" {
		return eRef{path}
	}
	p.next()
	c := eCall{fn: path}
	for p.peek() != ")" && p.err == nil {
		c.args = append(c.args, p.expr())
		if p.peek() == "," {
			p.next()
		}
	}
	p.want(")")
	return c
}

// ---- running it

// val is a value: bit<w> (w > 0), an untyped integer (w == 0), a bool, or
// an error name.
type val struct {
	w    int
	v    packet.Value
	b    bool
	kind byte // 'b' bit/int, 'B' bool, 'e' error
	err  string
}

func bits(w int, v packet.Value) val {
	if w > 0 {
		v = v.And(packet.Mask(w))
	}
	return val{w: w, v: v, kind: 'b'}
}
func boolv(b bool) val { return val{b: b, kind: 'B'} }

type frame struct {
	vars map[string]*val
}

// Machine runs one program on frames.
type Machine struct {
	prog   *Program
	arch   string
	tables map[string]*table.Table
	// state of the frame being run
	valid    map[string]bool
	store    map[string]*val
	varbits  map[string][]byte
	scopes   []*frame
	dropped  bool
	counts   map[string]int
	data     []byte
	cursor   int
	parseErr string
}

type stopErr struct{ err string }

// New makes a machine for prog on arch (p4.V1Model or p4.XSA) with tables
// by the program's table names (Tables).
func New(prog *Program, arch string, tables map[string]*table.Table) *Machine {
	return &Machine{prog: prog, arch: arch, tables: tables, counts: map[string]int{}}
}

// reset lays out every header field and metadata field at zero.
func (m *Machine) reset(frameBytes []byte) {
	m.valid, m.store, m.varbits = map[string]bool{}, map[string]*val{}, map[string][]byte{}
	m.scopes, m.dropped, m.parseErr = nil, false, ""
	m.data, m.cursor = frameBytes, 0
	var lay func(prefix, typ string)
	lay = func(prefix, typ string) {
		if fs, ok := m.prog.headers[typ]; ok {
			for _, f := range fs {
				if !f.vb {
					v := bits(f.w, packet.Value{})
					m.store[prefix+"."+f.name] = &v
				}
			}
			return
		}
		for _, f := range m.prog.structs[typ] {
			if strings.HasPrefix(f.typ, "bit<") {
				w, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f.typ, "bit<"), ">"))
				v := bits(w, packet.Value{})
				m.store[prefix+"."+f.name] = &v
				continue
			}
			lay(prefix+"."+f.name, f.typ)
		}
	}
	lay("hdr", m.prog.hdrType)
	lay(m.prog.metaName, m.prog.metaType)
	for _, f := range []struct {
		name string
		w    int
	}{{"egress_spec", 9}, {"ingress_port", 9}, {"drop", 1}, {"packet_length", 32}} {
		v := bits(f.w, packet.Value{})
		m.store[m.prog.stdName+"."+f.name] = &v
	}
	e := val{kind: 'e', err: "NoError"}
	m.store[m.prog.stdName+".parser_error"] = &e
	for _, d := range m.prog.locals {
		v := bits(d.w, packet.Value{})
		if d.typ == "bool" {
			v = boolv(false)
		}
		m.store[d.name] = &v
	}
}

// Run runs a frame: parser, control, deparser. It returns the frame out
// (empty, not nil, when no header and no byte is left), or nil if
// dropped.
func (m *Machine) Run(frameBytes []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			if s, ok := r.(stopErr); ok {
				err = fmt.Errorf("%s", s.err)
				return
			}
			panic(r)
		}
	}()
	m.reset(frameBytes)
	m.parse()
	m.exec(m.prog.apply)
	if m.dropped || m.arch == "xsa" && !m.store["smeta.drop"].v.IsZero() {
		return nil, nil
	}
	out = []byte{} // sent, though it may be empty
	for _, h := range m.prog.deparse {
		if !m.valid[h] {
			continue
		}
		if b, ok := m.varbits[h]; ok {
			out = append(out, b...)
			continue
		}
		typ := m.headerType(h)
		bitsLen := 0
		for _, f := range m.prog.headers[typ] {
			bitsLen += f.w
		}
		buf := make([]byte, bitsLen/8)
		off := 0
		for _, f := range m.prog.headers[typ] {
			packet.SetBits(buf, off, f.w, m.store[h+"."+f.name].v)
			off += f.w
		}
		out = append(out, buf...)
	}
	return append(out, m.data[m.cursor:]...), nil
}

// Egress is the v1model egress port the last run left.
func (m *Machine) Egress() uint64 { return m.store[m.prog.stdName+".egress_spec"].v.Lo }

// Counts is how many times each counter (by its name in the program)
// counted, over every run.
func (m *Machine) Counts() map[string]int { return maps.Clone(m.counts) }

// Consumed is how many bytes of the last frame the parser took.
func (m *Machine) Consumed() int { return m.cursor }

// headerType is the type of header instance path hdr.X.
func (m *Machine) headerType(path string) string {
	name := strings.TrimPrefix(path, "hdr.")
	for _, f := range m.prog.structs[m.prog.hdrType] {
		if f.name == name {
			return f.typ
		}
	}
	panic(stopErr{"no header " + path})
}

type reject struct{ err string }

// parse runs the parser from start; a failure sets the parser error and
// ends parsing, as both architectures hand the frame to the control then.
func (m *Machine) parse() {
	defer func() {
		if r := recover(); r != nil {
			if rj, ok := r.(reject); ok {
				*m.store[m.prog.stdName+".parser_error"] = val{kind: 'e', err: rj.err}
				return
			}
			panic(r)
		}
	}()
	state := "start"
	for steps := 0; state != "accept"; steps++ {
		if state == "reject" {
			panic(reject{"reject"})
		}
		body, ok := m.prog.states[state]
		if !ok || steps > 1000 {
			panic(stopErr{"no state " + state})
		}
		next := ""
		for _, s := range body {
			if tr, ok := s.(sTransition); ok {
				next = m.transition(tr)
				break
			}
			m.stmt(s)
		}
		state = next
	}
}

func (m *Machine) transition(tr sTransition) string {
	if tr.key == nil {
		return tr.to
	}
	k := m.eval(tr.key)
	for _, c := range tr.cases {
		v := m.eval(c.v)
		if k.kind == 'B' && v.kind == 'B' && k.b == v.b || k.kind == 'b' && v.kind == 'b' && k.v == v.v.And(packet.Mask(k.w)) {
			return c.to
		}
	}
	if tr.hasDef {
		return tr.dflt
	}
	// P4_16 makes this error.NoMatch, but p4c-bm2-ss does not emit that
	// transition and BMv2 ends the parse as accept, with the headers
	// parsed so far (p4c's bmv2_select_no_default.p4); run it as BMv2
	// does, so a select without a default fails the tests.
	return "accept"
}

func (m *Machine) extract(path string, size expr) {
	typ := m.headerType(path)
	fs := m.prog.headers[typ]
	if len(fs) == 1 && fs[0].vb {
		n := m.eval(size)
		if n.v.Hi != 0 || n.v.Lo > uint64(fs[0].w) {
			panic(reject{"HeaderTooLong"})
		}
		nb := int(n.v.Lo) / 8
		if m.cursor+nb > len(m.data) {
			panic(reject{"PacketTooShort"})
		}
		m.varbits[path] = append([]byte(nil), m.data[m.cursor:m.cursor+nb]...)
		m.cursor += nb
		m.valid[path] = true
		return
	}
	total := 0
	for _, f := range fs {
		total += f.w
	}
	if m.cursor+total/8 > len(m.data) {
		panic(reject{"PacketTooShort"})
	}
	off := m.cursor * 8
	for _, f := range fs {
		v, _ := packet.GetBits(m.data, off, f.w)
		*m.store[path+"."+f.name] = bits(f.w, v)
		off += f.w
	}
	m.cursor += total / 8
	m.valid[path] = true
}

// exec runs statements; a return unwinds through the panic below.
type returned struct{}

func (m *Machine) exec(body []stmt) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(returned); ok && len(m.scopes) == 0 {
				return
			}
			panic(r)
		}
	}()
	m.block(body)
}

func (m *Machine) block(body []stmt) {
	m.scopes = append(m.scopes, &frame{vars: map[string]*val{}})
	defer func() { m.scopes = m.scopes[:len(m.scopes)-1] }()
	for _, s := range body {
		m.stmt(s)
	}
}

func (m *Machine) stmt(s stmt) {
	switch s := s.(type) {
	case sBlock:
		m.block(s.body)
	case sReturn:
		panic(returned{})
	case sDecl:
		v := bits(s.w, packet.Value{})
		if s.typ == "bool" {
			v = boolv(false)
		}
		if s.init != nil {
			v = m.convert(m.eval(s.init), v)
		}
		m.scopes[len(m.scopes)-1].vars[s.name] = &v
	case sAssign:
		dst := m.lvalue(s.lhs)
		*dst = m.convert(m.eval(s.rhs), *dst)
	case sIf:
		if m.truth(m.eval(s.cond)) {
			m.block(s.then)
		} else if s.els != nil {
			m.block(s.els)
		}
	case sSwitch:
		run := m.apply(s.table)
		hit := false
		for _, c := range s.cases {
			for _, l := range c.labels {
				hit = hit || l == run || l == "default"
			}
			if hit {
				m.block(c.body)
				return
			}
		}
	case sCall:
		m.call(s.call)
	default:
		panic(stopErr{fmt.Sprintf("statement %T", s)})
	}
}

func (m *Machine) truth(v val) bool {
	if v.kind != 'B' {
		panic(stopErr{"a condition that is not a bool"})
	}
	return v.b
}

// convert makes v fit the type of dst (an assignment or an in argument).
func (m *Machine) convert(v, dst val) val {
	switch dst.kind {
	case 'B':
		if v.kind != 'B' {
			panic(stopErr{"bool from a non-bool"})
		}
		return v
	case 'e':
		return v
	}
	if v.kind != 'b' || v.w != 0 && v.w != dst.w {
		panic(stopErr{fmt.Sprintf("assigning %+v to bit<%d>: P4 wants the same width", v, dst.w)})
	}
	return bits(dst.w, v.v)
}

func (m *Machine) lookupVar(path string) *val {
	for i := len(m.scopes) - 1; i >= 0; i-- {
		if v, ok := m.scopes[i].vars[path]; ok {
			return v
		}
	}
	if v, ok := m.store[path]; ok {
		return v
	}
	return nil
}

func (m *Machine) lvalue(e expr) *val {
	r, ok := e.(eRef)
	if !ok {
		panic(stopErr{fmt.Sprintf("cannot assign to %T", e)})
	}
	m.checkValid(r.path, "writes")
	v := m.lookupVar(r.path)
	if v == nil {
		panic(stopErr{"no variable " + r.path})
	}
	return v
}

// checkValid stops the run when path is a field of a header that is not
// valid: P4 leaves such a read unspecified (BMv2 returns what an earlier
// frame left there), so a program that does it is wrong whatever it
// happens to compute.
func (m *Machine) checkValid(path, what string) {
	h, ok := headerOf(path)
	if ok && !m.valid[h] {
		panic(stopErr{fmt.Sprintf("%s %s of the invalid header %s", what, path, h)})
	}
}

// headerOf is the header instance hdr.X of a field path hdr.X.f.
func headerOf(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "hdr.")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, ".")
	return "hdr." + name, ok
}

// apply looks a table up, runs the action and returns its name.
func (m *Machine) apply(name string) string {
	t := m.prog.tables[name]
	if t == nil {
		panic(stopErr{"no table " + name})
	}
	var keys []packet.Value
	for _, k := range t.keys {
		keys = append(keys, m.eval(k).v)
	}
	act, args := t.dflt, []val{}
	for _, a := range t.args {
		args = append(args, m.eval(a))
	}
	if rt := m.tables[name]; rt != nil {
		if e, hit := rt.Lookup(keys); hit {
			act = rt.Spec().Actions[e.Action].Name
			if i := strings.LastIndex(act, "."); i >= 0 {
				act = act[i+1:]
			}
			args = nil
			for i, p := range e.Params {
				args = append(args, bits(rt.Spec().Actions[e.Action].Params[i].Width, p))
			}
		}
	}
	m.runAction(act, args, nil)
	return act
}

// runAction runs an action with argument values; inout arguments are
// copied back to the places outs names.
func (m *Machine) runAction(name string, args []val, outs []*val) {
	if name == "NoAction" {
		return
	}
	a := m.prog.actions[name]
	if a == nil {
		panic(stopErr{"no action " + name})
	}
	if len(args) != len(a.params) {
		panic(stopErr{fmt.Sprintf("action %s: %d args for %d params", name, len(args), len(a.params))})
	}
	f := &frame{vars: map[string]*val{}}
	for i, p := range a.params {
		v := m.convert(args[i], bits(p.w, packet.Value{}))
		f.vars[p.name] = &v
	}
	saved := m.scopes
	m.scopes = []*frame{f}
	m.block(a.body)
	m.scopes = saved
	for i, p := range a.params {
		if p.dir == "inout" || p.dir == "out" {
			*outs[i] = *f.vars[p.name]
		}
	}
}

func (m *Machine) call(c eCall) val {
	fn := c.fn
	switch {
	case strings.HasSuffix(fn, ".isValid"):
		return boolv(m.valid[strings.TrimSuffix(fn, ".isValid")])
	case strings.HasSuffix(fn, ".setValid"):
		m.valid[strings.TrimSuffix(fn, ".setValid")] = true
		return val{}
	case strings.HasSuffix(fn, ".setInvalid"):
		h := strings.TrimSuffix(fn, ".setInvalid")
		m.valid[h] = false
		delete(m.varbits, h)
		return val{}
	case fn == "packet.extract":
		var size expr
		if len(c.args) > 1 {
			size = c.args[1]
		}
		m.extract(c.args[0].(eRef).path, size)
		return val{}
	case fn == "verify":
		if !m.truth(m.eval(c.args[0])) {
			panic(reject{strings.TrimPrefix(c.args[1].(eRef).path, "error.")})
		}
		return val{}
	case fn == "mark_to_drop":
		m.dropped = true
		return val{}
	case strings.HasSuffix(fn, ".count"):
		m.counts[strings.TrimSuffix(fn, ".count")]++
		return val{}
	case strings.HasSuffix(fn, ".apply"):
		m.apply(strings.TrimSuffix(fn, ".apply"))
		return val{}
	}
	// A direct action call.
	a := m.prog.actions[fn]
	if a == nil {
		panic(stopErr{"no function " + fn})
	}
	var args []val
	var outs []*val
	for i, x := range c.args {
		if a.params[i].dir == "inout" || a.params[i].dir == "out" {
			outs = append(outs, m.lvalue(x))
			args = append(args, *m.lvalue(x))
		} else {
			outs = append(outs, nil)
			args = append(args, m.eval(x))
		}
	}
	m.runAction(fn, args, outs)
	return val{}
}

// unify gives an untyped integer the width of the typed operand.
func unify(a, b val) (val, val) {
	if a.kind != 'b' || b.kind != 'b' {
		return a, b
	}
	switch {
	case a.w == 0 && b.w > 0:
		a = bits(b.w, a.v)
	case b.w == 0 && a.w > 0:
		b = bits(a.w, b.v)
	case a.w != b.w:
		panic(stopErr{fmt.Sprintf("operands of widths %d and %d: P4 wants a cast", a.w, b.w)})
	}
	return a, b
}

func (m *Machine) eval(e expr) val {
	switch e := e.(type) {
	case eLit:
		return bits(e.w, e.v)
	case eBool:
		return boolv(bool(e))
	case eRef:
		if strings.HasPrefix(e.path, "error.") {
			return val{kind: 'e', err: strings.TrimPrefix(e.path, "error.")}
		}
		m.checkValid(e.path, "reads")
		v := m.lookupVar(e.path)
		if v == nil {
			panic(stopErr{"no variable " + e.path})
		}
		return *v
	case eCall:
		return m.call(e)
	case eSlice:
		x := m.eval(e.x)
		return bits(e.hi-e.lo+1, x.v.Shr(uint(e.lo)))
	case eCast:
		x := m.eval(e.x)
		if x.kind == 'B' {
			if x.b {
				return bits(e.w, packet.V(1))
			}
			return bits(e.w, packet.Value{})
		}
		return bits(e.w, x.v)
	case eUn:
		x := m.eval(e.x)
		switch e.op {
		case "!":
			return boolv(!m.truth(x))
		case "~":
			if x.w == 0 {
				panic(stopErr{"~ of an untyped integer"})
			}
			return bits(x.w, x.v.Not())
		}
	case eBin:
		switch e.op {
		case "&&":
			return boolv(m.truth(m.eval(e.a)) && m.truth(m.eval(e.b)))
		case "||":
			return boolv(m.truth(m.eval(e.a)) || m.truth(m.eval(e.b)))
		}
		a, b := m.eval(e.a), m.eval(e.b)
		switch e.op {
		case "<<", ">>":
			n := uint(min(b.v.Lo, 200))
			if b.v.Hi != 0 {
				n = 200
			}
			if a.w == 0 {
				panic(stopErr{"shift of an untyped integer"})
			}
			if n >= uint(a.w) {
				return bits(a.w, packet.Value{})
			}
			if e.op == "<<" {
				return bits(a.w, a.v.Shl(n))
			}
			return bits(a.w, a.v.Shr(n))
		case "++":
			if a.w == 0 || b.w == 0 {
				panic(stopErr{"++ of an untyped integer"})
			}
			return bits(a.w+b.w, a.v.Shl(uint(b.w)).Or(b.v))
		case "==", "!=":
			if a.kind == 'e' {
				return boolv((a.err == b.err) == (e.op == "=="))
			}
			if a.kind == 'B' {
				return boolv((a.b == b.b) == (e.op == "=="))
			}
			a, b = unify(a, b)
			return boolv((a.v == b.v) == (e.op == "=="))
		case "<", "<=", ">", ">=":
			a, b = unify(a, b)
			c := a.v.Cmp(b.v)
			return boolv(map[string]bool{"<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[e.op])
		}
		a, b = unify(a, b)
		if a.w == 0 {
			panic(stopErr{"arithmetic on untyped integers only"})
		}
		switch e.op {
		case "+":
			return bits(a.w, a.v.Add(b.v))
		case "-":
			return bits(a.w, a.v.Sub(b.v))
		case "*":
			return bits(a.w, a.v.Mul(b.v))
		case "&":
			return bits(a.w, a.v.And(b.v))
		case "|":
			return bits(a.w, a.v.Or(b.v))
		case "^":
			return bits(a.w, a.v.Xor(b.v))
		}
	}
	panic(stopErr{fmt.Sprintf("cannot evaluate %#v", e)})
}
