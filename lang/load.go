package lang

import (
	"github.com/dragonet-go/nsc/lang/internal/syntax"

	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Model is what a set of model files declares: one packet schema shared by
// all its graphs.
type Model struct {
	Schema *packet.Schema
	Graphs []*dataflow.Graph
	files  []string // the files read, includes first
}

// Graph returns the named graph.
func (m *Model) Graph(name string) (*dataflow.Graph, bool) {
	for _, g := range m.Graphs {
		if g.Name == name {
			return g, true
		}
	}
	return nil, false
}

// GraphNames lists the graphs, in declaration order.
func (m *Model) GraphNames() []string {
	names := make([]string, len(m.Graphs))
	for i, g := range m.Graphs {
		names[i] = g.Name
	}
	return names
}

// Loader reads model files. An include is looked up beside the including
// file first, then in Library (the shipped models).
type Loader struct {
	ReadFile func(name string) ([]byte, error)
	Library  fs.FS
}

// maxModelBytes bounds a model file: a model is text a person writes.
const maxModelBytes = 8 << 20

// ReadModel reads a model file from disk: a regular file of at most
// 8 MiB (not a device, a FIFO or a directory, which could feed the
// parser without end).
func ReadModel(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("not a regular file but %s", fileKind(st.Mode()))}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxModelBytes+1))
	if err == nil && len(b) > maxModelBytes {
		err = &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("larger than %d MiB, the most a model file may hold", maxModelBytes>>20)}
	}
	return b, err
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// defaultSize is a table's size when the model gives none.
const defaultSize = 1024

// parseFile parses one file without resolving it.
func parseFile(name string, src []byte) (*syntax.File, error) {
	f, err := syntax.Parse(name, src)
	if err != nil {
		return nil, syntaxError(err)
	}
	return f, nil
}

// parsed keeps the syntax of the library files parsed, by name and
// content: nothing changes a parsed file after, and a program that loads
// many models (nsc fuzz, the tests) would parse the same library files for
// each. Only the library's: other files are as many as the models.
var parsed struct {
	sync.Mutex
	files map[parsedKey]*syntax.File
}

type parsedKey struct {
	name string
	sum  [sha256.Size]byte
}

func parseLibrary(name string, src []byte) (*syntax.File, error) {
	k := parsedKey{name, sha256.Sum256(src)}
	parsed.Lock()
	f := parsed.files[k]
	parsed.Unlock()
	if f != nil {
		return f, nil
	}
	f, err := parseFile(name, src)
	if err != nil {
		return nil, err
	}
	parsed.Lock()
	if parsed.files == nil {
		parsed.files = map[parsedKey]*syntax.File{}
	}
	parsed.files[k] = f
	parsed.Unlock()
	return f, nil
}

func syntaxError(err error) error {
	var pe participle.Error
	if !errors.As(err, &pe) {
		return err
	}
	msg := pe.Message()
	// An "=" where none may stand is most often a comparison (op test)
	// written as an assignment.
	var ut *participle.UnexpectedTokenError
	if errors.As(err, &ut) && ut.Unexpected.Value == "=" {
		msg += `; a comparison is written ==`
	}
	return ErrorList{{pe.Position(), msg}}
}

// Load reads the files (and what they include) as one model.
func (ld Loader) Load(files ...string) (*Model, error) {
	if ld.ReadFile == nil {
		ld.ReadFile = ReadModel
	}
	l := &loader{Loader: ld, seen: map[string]bool{}, same: map[[sha256.Size]byte]bool{}}
	for _, f := range files {
		l.read(f, lexer.Position{})
	}
	if len(l.errs) > 0 {
		return nil, sortErrors(l.errs)
	}
	m := l.resolve()
	if len(l.errs) > 0 {
		return nil, sortErrors(l.errs)
	}
	return m, nil
}

type loader struct {
	Loader
	seen map[string]bool
	// same are the contents read: one library file reached by two paths
	// (beside a model on disk and in the shipped library) is read once.
	same   map[[sha256.Size]byte]bool
	files  []string
	decls  []*syntax.Decl
	errs   ErrorList
	schema *packet.Schema
}

// read parses a file and, depth first, what it includes.
func (l *loader) read(name string, from lexer.Position) {
	if l.seen[name] {
		return
	}
	l.seen[name] = true
	var src []byte
	var err error
	lib, fromLib := strings.CutPrefix(name, libPrefix)
	if fromLib {
		src, err = fs.ReadFile(l.Library, lib)
	} else {
		src, err = l.ReadFile(name)
	}
	if err != nil {
		if from.Filename == "" {
			l.errs = append(l.errs, &Error{lexer.Position{Filename: name, Line: 1, Column: 1}, fmt.Sprintf("cannot read model: %v", unwrapPath(err))})
		} else {
			l.errorf(from, "include %q: %v", name, unwrapPath(err))
		}
		return
	}
	sum := sha256.Sum256(src)
	if l.same[sum] {
		return
	}
	l.same[sum] = true
	parse := parseFile
	if fromLib {
		parse = parseLibrary
	}
	f, err := parse(name, src)
	if err != nil {
		var el ErrorList
		if errors.As(err, &el) {
			l.errs = append(l.errs, el...)
		}
		return
	}
	for _, d := range f.Decls {
		if d.Include != nil {
			l.read(l.includePath(name, d.Include), d.Include.Pos)
		}
	}
	l.files = append(l.files, name)
	l.decls = append(l.decls, f.Decls...)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// includePath resolves an include beside the including file, else in the
// library (where it is read through the library's FS). An absolute path is
// taken as it is.
func (l *loader) includePath(from string, inc *syntax.Include) string {
	rel, err := strconv.Unquote(inc.Path)
	if err != nil {
		rel = strings.Trim(inc.Path, `"`)
	}
	if lib, ok := strings.CutPrefix(from, libPrefix); ok {
		// Inside the library as outside it: beside the file, else from
		// the library's root (`include "lib/udp.nsc"` in ejfat/).
		beside := path.Join(path.Dir(lib), rel)
		if _, err := fs.Stat(l.Library, beside); err != nil {
			if _, err := fs.Stat(l.Library, path.Clean(rel)); err == nil {
				return libPrefix + path.Clean(rel)
			}
		}
		return libPrefix + beside
	}
	if filepath.IsAbs(rel) {
		return filepath.Clean(rel)
	}
	local := filepath.Join(filepath.Dir(from), rel)
	if _, err := l.ReadFile(local); err == nil || l.Library == nil {
		return local
	}
	if _, err := fs.Stat(l.Library, path.Clean(rel)); err == nil {
		return libPrefix + path.Clean(rel)
	}
	return local
}

// libPrefix marks files read from the library.
const libPrefix = "nsc:"

func (l *loader) resolve() *Model {
	l.schema = &packet.Schema{}
	l.headers()
	l.nextEdges()
	l.actions()
	l.tables()
	l.states()
	l.registers()
	l.schema.Finish()
	m := &Model{Schema: l.schema, files: l.files}
	for _, d := range l.decls {
		if d.Graph != nil {
			if g := l.graph(d.Graph); g != nil {
				if _, dup := m.Graph(g.Name); dup {
					l.errorf(d.Graph.Pos, "graph %s declared twice", g.Name)
					continue
				}
				m.Graphs = append(m.Graphs, g)
			}
		}
	}
	return m
}

func (l *loader) resolver(sc scope) *resolver { return &resolver{schema: l.schema, scope: sc} }

// exprErr converts a resolver error into a positioned model error.
func (l *loader) exprError(err error) {
	var ee *exprErr
	if errors.As(err, &ee) {
		l.errorf(ee.pos, "%s", ee.msg)
		return
	}
	l.errs = append(l.errs, &Error{Msg: err.Error()})
}

func (l *loader) headers() {
	s := l.schema
	type pending struct {
		h    *packet.HeaderSpec
		expr *syntax.Expr
	}
	var lengths, sameLengths []pending
	var rules []*syntax.HeaderDecl
	declared := map[string]lexer.Position{}
	for _, d := range l.decls {
		hd := d.Header
		if hd == nil {
			continue
		}
		if hd.Checksum != nil {
			rules = append(rules, hd)
			continue
		}
		first, dup := s.Header(hd.Name)
		h := &packet.HeaderSpec{Name: hd.Name, ID: len(s.Headers), Metadata: hd.Kind == "metadata", Checksum: -1}
		bitsSoFar := 0
		errsBefore := len(l.errs)
		addField := func(pos lexer.Position, name string, width int) bool {
			if _, dup := h.Field(name); dup {
				l.errorf(pos, "header %s: field %s declared twice", h.Name, name)
				return false
			}
			if n := len(h.Fields); n > 0 && h.Fields[n-1].Width == 0 { // variable; its Length comes later
				l.errorf(pos, "header %s: field %s follows variable-length field %s; it must be the last field", h.Name, name, h.Fields[n-1].Name)
				return false
			}
			h.Fields = append(h.Fields, packet.FieldSpec{Name: name, Offset: bitsSoFar, Width: width})
			bitsSoFar += width
			return true
		}
		if hd.Layout != nil {
			fields, err := packet.ParseLayout(strings.Trim(*hd.Layout, "'"))
			if err != nil {
				l.errorf(hd.Pos, "header %s: %v", hd.Name, err)
				continue
			}
			for _, f := range fields {
				addField(hd.Pos, f.Name, f.Width)
			}
		}
		for _, fd := range hd.Fields {
			if fd.Bytes != nil {
				if h.Metadata {
					l.errorf(fd.Pos, "metadata %s: field %s cannot have a variable length", h.Name, fd.Name)
					continue
				}
				if addField(fd.Pos, fd.Name, 0) {
					if dup {
						sameLengths = append(sameLengths, pending{first, fd.Bytes})
					} else {
						lengths = append(lengths, pending{h, fd.Bytes})
					}
				}
				continue
			}
			w, err := smallInt(*fd.Width, 128)
			if err != nil || w == 0 {
				l.errorf(fd.Pos, "header %s: field %s: width %s is not 1..128 bits", h.Name, fd.Name, *fd.Width)
				continue
			}
			if !addField(fd.Pos, fd.Name, w) || fd.Checksum == nil {
				continue
			}
			switch {
			case h.Metadata:
				l.errorf(fd.Checksum.Pos, "metadata %s has no checksum", h.Name)
			case h.Checksum >= 0:
				l.errorf(fd.Checksum.Pos, "header %s: a second checksum field %s", h.Name, fd.Name)
			case w != 16 || (bitsSoFar-w)%16 != 0:
				l.errorf(fd.Checksum.Pos, "header %s: checksum field %s must be 16 bits at a 16-bit offset", h.Name, fd.Name)
			default:
				h.Checksum = len(h.Fields) - 1
				h.ChecksumOptional = fd.Checksum.Optional
				h.ChecksumKind = packet.ChecksumHeader
				switch fd.Checksum.Kind {
				case "message":
					h.ChecksumKind = packet.ChecksumMessage
				case "l4":
					h.ChecksumKind = packet.ChecksumL4
				}
			}
		}
		if len(l.errs) > errsBefore {
			continue
		}
		if dup {
			// Libraries combine: the same declaration again (the same
			// file from disk and from the shipped library, or two
			// libraries that agree) is the one header.
			if why := differs(first, h); why != "" {
				l.errorf(hd.Pos, "%s %s declared twice, differently: at %s %s", hd.Kind, hd.Name, posString(declared[hd.Name]), why)
			}
			continue
		}
		declared[hd.Name] = hd.Pos
		if len(h.Fields) == 0 {
			l.errorf(hd.Pos, "header %s has no fields", h.Name)
			continue
		}
		if !h.Metadata && bitsSoFar%8 != 0 {
			l.errorf(hd.Pos, "header %s is %d bits long, not a whole number of bytes", h.Name, bitsSoFar)
		}
		if h.Metadata {
			h.MetaBase = s.MetaFields
			s.MetaFields += len(h.Fields)
		}
		s.Headers = append(s.Headers, h)
	}
	for _, p := range lengths {
		x, err := l.resolver(scope{header: p.h}).expr(p.expr)
		if err != nil {
			l.exprError(err)
			continue
		}
		if x.Boolean() {
			l.errorf(p.expr.Pos, "header %s: a length must be a value, not a condition", p.h.Name)
			continue
		}
		p.h.Fields[len(p.h.Fields)-1].Length = x
	}
	for _, p := range sameLengths {
		x, err := l.resolver(scope{header: p.h}).expr(p.expr)
		if err != nil {
			l.exprError(err)
			continue
		}
		if want := p.h.Fields[len(p.h.Fields)-1].Length; want != nil && x.Text != want.Text {
			l.errorf(p.expr.Pos, "header %s declared twice, differently: at %s its length is %s", p.h.Name, posString(declared[p.h.Name]), want.Text)
		}
	}
	l.checksumRules(rules, declared)
}

// differs says how header b, declared again, differs from a ("" when it
// does not): fields (names and widths, in order) and the checksum.
func differs(a, b *packet.HeaderSpec) string {
	kind := func(h *packet.HeaderSpec) string {
		if h.Metadata {
			return "metadata"
		}
		return "header"
	}
	if kind(a) != kind(b) {
		return "it is " + kind(a)
	}
	for i, f := range a.Fields {
		if i >= len(b.Fields) || b.Fields[i].Name != f.Name || b.Fields[i].Width != f.Width {
			return fmt.Sprintf("its field %d is %s", i+1, fieldText(f))
		}
	}
	if len(b.Fields) > len(a.Fields) {
		return "it has no field " + b.Fields[len(a.Fields)].Name
	}
	if a.Checksum != b.Checksum || a.ChecksumKind != b.ChecksumKind || a.ChecksumOptional != b.ChecksumOptional {
		return "its checksum is " + checksumText(a)
	}
	return ""
}

func fieldText(f packet.FieldSpec) string {
	if f.Width == 0 {
		return f.Name + ": bytes(…)"
	}
	return fmt.Sprintf("%s: %d", f.Name, f.Width)
}

func checksumText(h *packet.HeaderSpec) string {
	if h.Checksum < 0 {
		return "none"
	}
	opt := ""
	if h.ChecksumOptional {
		opt = ", optional"
	}
	return fmt.Sprintf("%s @checksum(%s%s)", h.Fields[h.Checksum].Name, checksumKinds[h.ChecksumKind], opt)
}

// checksumKinds are the @checksum kinds by packet.ChecksumKind.
var checksumKinds = map[packet.ChecksumKind]string{packet.ChecksumHeader: "header", packet.ChecksumMessage: "message", packet.ChecksumL4: "l4"}

// checksumRules applies `header H @checksum(KIND[, optional])`: in this
// model, H's checksum (declared elsewhere, of that kind) has RFC 768's
// zero rule or not. A model sets a header's rule once.
func (l *loader) checksumRules(rules []*syntax.HeaderDecl, declared map[string]lexer.Position) {
	set := map[string]*syntax.HeaderDecl{}
	for _, hd := range rules {
		h, ok := l.schema.Header(hd.Name)
		switch {
		case !ok:
			l.errorf(hd.Pos, "header %s: no such header to set the checksum rule of", hd.Name)
			continue
		case hd.Kind == "metadata" || h.Metadata:
			l.errorf(hd.Pos, "metadata %s has no checksum", hd.Name)
			continue
		case h.Checksum < 0:
			l.errorf(hd.Pos, "header %s has no checksum field (declared at %s)", hd.Name, posString(declared[hd.Name]))
			continue
		case checksumKinds[h.ChecksumKind] != hd.Checksum.Kind:
			l.errorf(hd.Checksum.Pos, "header %s: its checksum is %s (declared at %s); a rule keeps the kind", hd.Name, checksumText(h), posString(declared[hd.Name]))
			continue
		}
		if prev, ok := set[hd.Name]; ok {
			if prev.Checksum.Optional != hd.Checksum.Optional {
				l.errorf(hd.Pos, "header %s: checksum rule set twice, differently (at %s)", hd.Name, posString(prev.Pos))
			}
			continue
		}
		set[hd.Name] = hd
		h.ChecksumOptional = hd.Checksum.Optional
	}
}

func (l *loader) nextEdges() {
	s := l.schema
	for _, d := range l.decls {
		nd := d.Next
		if nd == nil {
			continue
		}
		r := l.resolver(scope{})
		f, err := r.field(nd.Field)
		if err != nil {
			l.exprError(err)
			continue
		}
		fs := s.FieldSpec(f)
		var deflt []packet.ParseEdge
		for _, c := range nd.Cases {
			to, ok := s.Header(c.Target)
			if !ok {
				l.errorf(c.Pos, "next %s.%s: unknown header %s", nd.Field.Name, *nd.Field.Field, c.Target)
				continue
			}
			if to.Metadata {
				l.errorf(c.Pos, "next: %s is metadata, not a header on the wire", c.Target)
				continue
			}
			e := packet.ParseEdge{From: f.Header, Field: f.Field, To: to.ID}
			if c.Default {
				deflt = append(deflt, e)
				continue
			}
			v, w, err := parseValue(c.Value)
			if err != nil {
				l.errorf(c.Pos, "%v", err)
				continue
			}
			if w > fs.Width {
				l.errorf(c.Pos, "value %s does not fit in %s.%s (%d bits)", *orElse(c.Value.Int, c.Value.IPv4), nd.Field.Name, fs.Name, fs.Width)
				continue
			}
			e.Value, e.Mask = v, packet.Mask(fs.Width)
			s.Next = append(s.Next, e)
		}
		s.Next = append(s.Next, deflt...) // a default matches anything, so it goes last
	}
}

func (l *loader) actions() {
	s := l.schema
	for _, d := range l.decls {
		ad := d.Action
		if ad == nil {
			continue
		}
		if _, dup := s.Action(ad.Name); dup {
			l.errorf(ad.Pos, "action %s declared twice", ad.Name)
			continue
		}
		a := &packet.Action{Name: ad.Name, Params: []packet.Param{}}
		for _, p := range ad.Params {
			w, err := smallInt(p.Width, 128)
			if err != nil || w == 0 {
				l.errorf(p.Pos, "action %s: parameter %s: width %s is not 1..128 bits", ad.Name, p.Name, p.Width)
				continue
			}
			if slices.ContainsFunc(a.Params, func(q packet.Param) bool { return q.Name == p.Name }) {
				l.errorf(p.Pos, "action %s: parameter %s declared twice", ad.Name, p.Name)
				continue
			}
			a.Params = append(a.Params, packet.Param{Name: p.Name, Width: w})
		}
		a.Body = l.assigns(ad.Body, scope{params: a.Params})
		s.Actions = append(s.Actions, a)
	}
}

func (l *loader) assigns(as []*syntax.Assign, sc scope) []packet.Assign {
	var out []packet.Assign
	r := l.resolver(sc)
	for _, a := range as {
		dst, err := r.field(a.Dst)
		if err != nil {
			l.exprError(err)
			continue
		}
		if l.schema.FieldSpec(dst).Variable() {
			l.errorf(a.Dst.Pos, "cannot assign variable-length field %s", l.schema.FieldName(dst))
			continue
		}
		src, err := r.expr(a.Src)
		if err != nil {
			l.exprError(err)
			continue
		}
		if src.Kind == packet.EConst && src.Width > l.schema.FieldSpec(dst).Width {
			l.errorf(a.Src.Pos, "constant %s does not fit in %s (%d bits)", src.Text, l.schema.FieldName(dst), l.schema.FieldSpec(dst).Width)
			continue
		}
		out = append(out, packet.Assign{Dst: dst, Src: src})
	}
	return out
}

func (l *loader) tables() {
	s := l.schema
	for _, d := range l.decls {
		td := d.Table
		if td == nil {
			continue
		}
		if _, dup := s.Table(td.Name); dup {
			l.errorf(td.Pos, "table %s declared twice", td.Name)
			continue
		}
		def := &packet.TableDef{Spec: &packet.TableSpec{Name: td.Name, Size: defaultSize}, Default: -1}
		spec := def.Spec
		var deflt *syntax.Call
		r := l.resolver(scope{})
		ok := true
		for _, it := range td.Items {
			switch {
			case it.Size != nil:
				n, err := smallInt(*it.Size, 1<<30)
				if err != nil || n == 0 {
					l.errorf(it.Pos, "table %s: size %s is not 1..%d", td.Name, *it.Size, 1<<30)
					ok = false
				}
				spec.Size = n
			case it.Default != nil:
				deflt = it.Default
			case it.Prio:
				spec.Priorities = true
			case it.Actions != nil:
				for _, name := range it.Actions {
					ai, found := s.Action(name)
					if !found {
						l.errorf(it.Pos, "table %s: unknown action %s", td.Name, name)
						ok = false
						continue
					}
					a := s.Actions[ai]
					spec.Actions = append(spec.Actions, packet.ActionSpec{Name: a.Name, Params: a.Params})
					def.Actions = append(def.Actions, ai)
				}
			default:
				for _, k := range it.Keys {
					x, err := r.expr(k.Expr)
					if err != nil {
						l.exprError(err)
						ok = false
						continue
					}
					kind, known := packet.ParseMatchKind(k.Kind)
					if !known {
						l.errorf(k.Pos, "table %s: key %s: unknown match kind %s (want exact, lpm, ternary or range)", td.Name, x.Text, k.Kind)
						ok = false
						continue
					}
					if x.Boolean() {
						x = &packet.Expr{Kind: x.Kind, Width: 1, A: x.A, B: x.B, Header: x.Header, Value: x.Value, Mask: x.Mask, Lo: x.Lo, Hi: x.Hi, Text: x.Text}
					}
					spec.Keys = append(spec.Keys, packet.KeySpec{Name: x.Text, Width: x.Width, Kind: kind})
					def.Keys = append(def.Keys, x)
				}
			}
		}
		if len(spec.Actions) == 0 && ok {
			l.errorf(td.Pos, "table %s has no actions", td.Name)
			ok = false
		}
		if lpm := countKind(spec, packet.LPM); lpm > 1 {
			l.errorf(td.Pos, "table %s has %d lpm keys; at most one", td.Name, lpm)
			ok = false
		}
		if deflt == nil {
			l.errorf(td.Pos, "table %s has no default action (add `default ACTION`)", td.Name)
			ok = false
		} else if ok {
			l.tableDefault(def, deflt)
		}
		if ok && len(l.errs) == 0 {
			if err := spec.Validate(); err != nil {
				l.errorf(td.Pos, "%v", err)
			}
		}
		s.Tables = append(s.Tables, def)
	}
}

func countKind(t *packet.TableSpec, k packet.MatchKind) int {
	n := 0
	for _, key := range t.Keys {
		if key.Kind == k {
			n++
		}
	}
	return n
}

func (l *loader) tableDefault(def *packet.TableDef, c *syntax.Call) {
	spec := def.Spec
	i := slices.IndexFunc(spec.Actions, func(a packet.ActionSpec) bool { return a.Name == c.Name })
	if i < 0 {
		l.errorf(c.Pos, "table %s: default action %s is not one of its actions", spec.Name, c.Name)
		return
	}
	params := spec.Actions[i].Params
	if len(c.Args) != len(params) {
		l.errorf(c.Pos, "table %s: default action %s takes %d argument(s), got %d", spec.Name, c.Name, len(params), len(c.Args))
		return
	}
	def.Default = i
	spec.Default = c.Name
	for j, a := range c.Args {
		v, w, err := parseValue(a)
		if err == nil && w > params[j].Width {
			err = fmt.Errorf("argument %s does not fit in %s (%d bits)", *orElse(a.Int, a.IPv4), params[j].Name, params[j].Width)
		}
		if err != nil {
			l.errorf(a.Pos, "table %s: default %s: %v", spec.Name, c.Name, err)
			return
		}
		def.DefaultParams = append(def.DefaultParams, v)
	}
	spec.DefaultParams = def.DefaultParams
}
