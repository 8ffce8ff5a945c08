package lang

import (
	"github.com/dragonet-go/nsc/lang/internal/syntax"

	"fmt"
	"math/big"
	"math/bits"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/dragonet-go/nsc/packet"
)

// scope is what names in an expression can mean.
type scope struct {
	params []packet.Param // action parameters, by name
	header *packet.HeaderSpec
	// header fields may be named bare inside their own header (var-length sizes).
}

// value parses an integer or dotted IPv4 literal.
func parseValue(v *syntax.Value) (packet.Value, int, error) {
	if v.IPv4 != nil {
		var out uint64
		for _, part := range strings.Split(*v.IPv4, ".") {
			n, err := strconv.ParseUint(part, 10, 8)
			if err != nil {
				return packet.Value{}, 0, fmt.Errorf("bad IPv4 address %s", *v.IPv4)
			}
			out = out<<8 | n
		}
		return packet.V(out), 32, nil
	}
	return parseInt(*v.Int)
}

// parseInt reads decimal, 0x hex or 0b binary, with _ separators. The
// width is what the literal spells: 4 bits per hex digit and 1 per binary
// digit (so ~0x00ff is 0xff00), the value's own bits for decimal.
func parseInt(s string) (packet.Value, int, error) {
	clean := strings.ReplaceAll(s, "_", "")
	base, digits, spelled := 10, clean, 0
	switch {
	case len(clean) > 2 && (clean[:2] == "0x" || clean[:2] == "0X"):
		base, digits = 16, clean[2:]
		spelled = 4 * len(digits)
	case len(clean) > 2 && (clean[:2] == "0b" || clean[:2] == "0B"):
		base, digits = 2, clean[2:]
		spelled = len(digits)
	}
	n, ok := new(big.Int).SetString(digits, base)
	if !ok || n.Sign() < 0 {
		return packet.Value{}, 0, fmt.Errorf("bad number %s", s)
	}
	if n.BitLen() > 128 {
		return packet.Value{}, 0, fmt.Errorf("number %s is wider than 128 bits", s)
	}
	lo := new(big.Int).And(n, new(big.Int).SetUint64(^uint64(0))).Uint64()
	hi := new(big.Int).Rsh(n, 64).Uint64()
	w := max(n.BitLen(), 1, min(spelled, 128))
	return packet.Value{Hi: hi, Lo: lo}, w, nil
}

// smallInt reads a small positive integer (widths, sizes).
func smallInt(s string, max int) (int, error) {
	v, _, err := parseInt(s)
	if err != nil || v.Hi != 0 || v.Lo > uint64(max) {
		return 0, fmt.Errorf("%s is not a number in 0..%d", s, max)
	}
	return int(v.Lo), nil
}

type exprErr struct {
	pos lexer.Position
	msg string
}

func (e *exprErr) Error() string { return e.msg }

func errAt(pos lexer.Position, format string, args ...any) error {
	return &exprErr{pos, fmt.Sprintf(format, args...)}
}

// resolver turns expression ASTs into packet.Expr. Every node's Text is a
// piece of one string, the whole expression written out once: joining
// each node's text from its operands' would copy a chain (`!!…!x`,
// `a + a + … + a`) once per operator, quadratic in its length.
type resolver struct {
	schema *packet.Schema
	scope  scope
	buf    []byte                // the expression's text so far
	spans  map[*packet.Expr]span // each node's piece of buf
}

type span struct{ start, end int }

// expr resolves a whole expression and gives its nodes their text.
func (r *resolver) expr(e *syntax.Expr) (*packet.Expr, error) {
	r.buf, r.spans = r.buf[:0], map[*packet.Expr]span{}
	x, err := r.or(e)
	if err != nil {
		return nil, err
	}
	text := string(r.buf)
	for n, s := range r.spans {
		n.Text = text[s.start:s.end]
	}
	return x, nil
}

func (r *resolver) write(s string) { r.buf = append(r.buf, s...) }

// node records that x's text is what was written since start.
func (r *resolver) node(x *packet.Expr, start int) *packet.Expr {
	r.spans[x] = span{start, len(r.buf)}
	return x
}

// text is x's text while its expression is being resolved.
func (r *resolver) text(x *packet.Expr) string {
	s := r.spans[x]
	return string(r.buf[s.start:s.end])
}

func (r *resolver) or(e *syntax.Expr) (*packet.Expr, error) {
	start := len(r.buf)
	x, err := r.and(e.Left)
	if err != nil {
		return nil, err
	}
	for _, rhs := range e.Right {
		r.write(" || ")
		y, err := r.and(rhs)
		if err != nil {
			return nil, err
		}
		if x, err = r.logical(packet.EOr, "||", x, y, e.Pos, start); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func (r *resolver) and(e *syntax.AndExpr) (*packet.Expr, error) {
	start := len(r.buf)
	x, err := r.not(e.Left)
	if err != nil {
		return nil, err
	}
	for _, rhs := range e.Right {
		r.write(" && ")
		y, err := r.not(rhs)
		if err != nil {
			return nil, err
		}
		if x, err = r.logical(packet.EAnd, "&&", x, y, e.Pos, start); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func (r *resolver) logical(k packet.ExprKind, op string, a, b *packet.Expr, pos lexer.Position, start int) (*packet.Expr, error) {
	if !a.Boolean() || !b.Boolean() {
		return nil, errAt(pos, "%s needs conditions on both sides", op)
	}
	return r.node(&packet.Expr{Kind: k, Width: 1, A: a, B: b}, start), nil
}

func (r *resolver) not(e *syntax.NotExpr) (*packet.Expr, error) {
	if e.Not == nil {
		return r.cmp(e.Cmp)
	}
	start := len(r.buf)
	r.write("!")
	x, err := r.not(e.Not)
	if err != nil {
		return nil, err
	}
	if !x.Boolean() {
		return nil, errAt(e.Pos, "! needs a condition, %s is a value", r.text(x))
	}
	return r.node(&packet.Expr{Kind: packet.ENot, Width: 1, A: x}, start), nil
}

var cmpKinds = map[string]packet.ExprKind{
	"==": packet.EEq, "!=": packet.ENe, "<": packet.ELt, "<=": packet.ELe, ">": packet.EGt, ">=": packet.EGe,
}

func (r *resolver) cmp(e *syntax.CmpExpr) (*packet.Expr, error) {
	start := len(r.buf)
	x, err := r.sum(e.Left)
	if err != nil {
		return nil, err
	}
	switch {
	case e.Op != "":
		r.write(" " + e.Op + " ")
		y, err := r.sum(e.Right)
		if err != nil {
			return nil, err
		}
		if err := r.fits(x, y, e.Pos); err != nil {
			return nil, err
		}
		if err := r.fits(y, x, e.Pos); err != nil {
			return nil, err
		}
		return r.node(&packet.Expr{Kind: cmpKinds[e.Op], Width: 1, A: x, B: y}, start), nil
	case e.In != nil:
		return r.in(x, e.In, start)
	}
	return x, nil
}

// fits refuses comparing a field with a constant it can never equal.
func (r *resolver) fits(v, c *packet.Expr, pos lexer.Position) error {
	if v.Boolean() || c.Boolean() {
		return errAt(pos, "cannot compare a condition (%s, %s); compare values", r.text(v), r.text(c))
	}
	if c.Kind == packet.EConst && v.Kind != packet.EConst && c.Width > v.Width {
		return errAt(pos, "constant %s does not fit in %s (%d bits)", r.text(c), r.text(v), v.Width)
	}
	return nil
}

func (r *resolver) constant(s *syntax.Sum) (*packet.Expr, error) {
	x, err := r.sum(s)
	if err != nil {
		return nil, err
	}
	if x.Kind != packet.EConst {
		return nil, errAt(s.Pos, "%s is not a constant", r.text(x))
	}
	return x, nil
}

// in resolves `x in SET`, x written from start on.
func (r *resolver) in(x *packet.Expr, set *syntax.InSet, start int) (*packet.Expr, error) {
	if x.Boolean() {
		return nil, errAt(set.Pos, "`in` needs a value on its left, %s is a condition", r.text(x))
	}
	r.write(" in ")
	if set.Lo != nil {
		r.write("[")
		lo, err := r.constant(set.Lo)
		if err != nil {
			return nil, err
		}
		r.write(", ")
		hi, err := r.constant(set.Hi)
		if err != nil {
			return nil, err
		}
		r.write("]")
		if hi.Const.And(packet.Mask(x.Width)) != hi.Const {
			return nil, errAt(set.Pos, "%s does not fit in %s (%d bits)", r.text(hi), r.text(x), x.Width)
		}
		if lo.Const.Cmp(hi.Const) > 0 {
			return nil, errAt(set.Pos, "empty range [%s, %s]", r.text(lo), r.text(hi))
		}
		return r.node(&packet.Expr{Kind: packet.ERange, Width: 1, A: x, Lo: lo.Const, Hi: hi.Const}, start), nil
	}
	v, err := r.constant(set.Value)
	if err != nil {
		return nil, err
	}
	mask := packet.Mask(x.Width)
	switch {
	case set.Mask != nil:
		r.write("&&&")
		m, err := r.constant(set.Mask)
		if err != nil {
			return nil, err
		}
		mask = m.Const
	case set.Prefix != nil:
		n, err := smallInt(*set.Prefix, x.Width)
		if err != nil {
			return nil, errAt(set.Pos, "prefix length %s: longer than %s (%d bits)", *set.Prefix, r.text(x), x.Width)
		}
		mask = mask.And(packet.Mask(x.Width - n).Not())
		r.write("/" + strconv.Itoa(n))
	}
	if v.Const.And(mask) != v.Const && set.Prefix == nil {
		return nil, errAt(set.Pos, "%s has bits outside %s (%d bits)", r.text(v), r.text(x), x.Width)
	}
	return r.node(&packet.Expr{Kind: packet.EMasked, Width: 1, A: x, Value: v.Const, Mask: mask}, start), nil
}

var sumKinds = map[string]packet.ExprKind{"+": packet.EAdd, "-": packet.ESub, "|": packet.EBitOr, "^": packet.EBitXor,
	"*": packet.EMul, "&": packet.EBitAnd, "<<": packet.EShl, ">>": packet.EShr}

func (r *resolver) sum(e *syntax.Sum) (*packet.Expr, error) {
	start := len(r.buf)
	x, err := r.term(e.Left)
	if err != nil {
		return nil, err
	}
	for _, o := range e.Right {
		r.write(" " + o.Op + " ")
		y, err := r.term(o.Right)
		if err != nil {
			return nil, err
		}
		if x, err = r.arith(o.Op, x, y, e.Pos, start); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func (r *resolver) term(e *syntax.Term) (*packet.Expr, error) {
	start := len(r.buf)
	x, err := r.unary(e.Left)
	if err != nil {
		return nil, err
	}
	for _, o := range e.Right {
		r.write(" " + o.Op + " ")
		y, err := r.unary(o.Right)
		if err != nil {
			return nil, err
		}
		if x, err = r.arith(o.Op, x, y, e.Pos, start); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// arith combines values; constants fold so that `(ihl - 5) * 4` stays a
// small tree and a constant stays a constant.
func (r *resolver) arith(op string, a, b *packet.Expr, pos lexer.Position, start int) (*packet.Expr, error) {
	if a.Boolean() || b.Boolean() {
		return nil, errAt(pos, "%s needs values, not conditions", op)
	}
	// Results are as wide as they need to be, so arithmetic is exact up to
	// 128 bits: a subtraction that goes below zero becomes a huge number
	// (which a length check refuses) instead of wrapping at a field's width.
	// Assignment truncates to the destination; bit<N>(...) truncates too.
	w := max(a.Width, b.Width)
	switch op {
	case "+":
		w = min(w+1, 128)
	case "*":
		w = min(a.Width+b.Width, 128)
	case "&":
		w = min(a.Width, b.Width) // masking never widens
	case "-", "<<":
		w = 128
	}
	x := &packet.Expr{Kind: sumKinds[op], Width: w, A: a, B: b}
	if a.Kind == packet.EConst && b.Kind == packet.EConst {
		v, _ := x.Eval(nil, nil)
		x = &packet.Expr{Kind: packet.EConst, Width: widthOf(v), Const: v}
	}
	return r.node(x, start), nil
}

func (r *resolver) unary(e *syntax.Unary) (*packet.Expr, error) {
	if e.Inv == nil {
		return r.primary(e.Primary)
	}
	start := len(r.buf)
	r.write("~")
	x, err := r.unary(e.Inv)
	if err != nil {
		return nil, err
	}
	if x.Boolean() {
		return nil, errAt(e.Pos, "~ needs a value; use ! for conditions")
	}
	return r.node(&packet.Expr{Kind: packet.EBitNot, Width: x.Width, A: x}, start), nil
}

func (r *resolver) primary(p *syntax.Primary) (*packet.Expr, error) {
	start := len(r.buf)
	switch {
	case p.Valid != nil:
		h, ok := r.schema.Header(*p.Valid)
		if !ok {
			return nil, errAt(p.Pos, "valid(%s): unknown header %s", *p.Valid, *p.Valid)
		}
		r.write("valid(" + h.Name + ")")
		return r.node(&packet.Expr{Kind: packet.EValid, Width: 1, Header: h.ID}, start), nil
	case p.Len != nil:
		h, ok := r.schema.Header(*p.Len)
		if !ok {
			return nil, errAt(p.Pos, "len(%s): unknown header %s", *p.Len, *p.Len)
		}
		if h.Metadata {
			return nil, errAt(p.Pos, "len(%s): %s is metadata and has no length on the wire", *p.Len, *p.Len)
		}
		r.write("len(" + h.Name + ")")
		return r.node(&packet.Expr{Kind: packet.ELen, Width: 32, Header: h.ID}, start), nil
	case p.Ones != nil:
		r.write("popcount(")
		x, err := r.or(p.Ones)
		if err != nil {
			return nil, err
		}
		r.write(")")
		if x.Boolean() {
			return nil, errAt(p.Pos, "popcount needs a value, %s is a condition", r.text(x))
		}
		// At most 128 ones: 8 bits. A constant folds like arithmetic does.
		y := &packet.Expr{Kind: packet.EPopCount, Width: 8, A: x}
		if x.Kind == packet.EConst {
			v, _ := y.Eval(nil, nil)
			y = &packet.Expr{Kind: packet.EConst, Width: widthOf(v), Const: v}
		}
		return r.node(y, start), nil
	case p.Cast != nil:
		w, err := smallInt(p.Cast.Width, 128)
		if err != nil || w == 0 {
			return nil, errAt(p.Pos, "bit<%s>: width must be 1..128", p.Cast.Width)
		}
		r.write("bit<" + strconv.Itoa(w) + ">(")
		x, err := r.or(p.Cast.Expr)
		if err != nil {
			return nil, err
		}
		r.write(")")
		mask := &packet.Expr{Kind: packet.EConst, Width: w, Const: packet.Mask(w), Text: strconv.Itoa(w)}
		return r.node(&packet.Expr{Kind: packet.EBitAnd, Width: w, A: x, B: mask}, start), nil
	case p.Value != nil:
		v, w, err := parseValue(p.Value)
		if err != nil {
			return nil, errAt(p.Pos, "%v", err)
		}
		r.write(*orElse(p.Value.Int, p.Value.IPv4))
		return r.node(&packet.Expr{Kind: packet.EConst, Width: w, Const: v}, start), nil
	case p.Ref != nil:
		return r.ref(p.Ref)
	}
	r.write("(")
	x, err := r.or(p.Paren)
	if err != nil {
		return nil, err
	}
	r.write(")")
	y := *x
	return r.node(&y, start), nil
}

func orElse(a, b *string) *string {
	if a != nil {
		return a
	}
	return b
}

// ref resolves `header.field`, a parameter, or (inside a header) a bare
// field of that header.
func (r *resolver) ref(ref *syntax.Ref) (*packet.Expr, error) {
	x, err := r.refExpr(ref)
	if err != nil {
		return nil, err
	}
	start := len(r.buf)
	r.write(ref.Name)
	if ref.Field != nil {
		r.write("." + *ref.Field)
	}
	return r.node(x, start), nil
}

func (r *resolver) refExpr(ref *syntax.Ref) (*packet.Expr, error) {
	if ref.Field == nil {
		for i, p := range r.scope.params {
			if p.Name == ref.Name {
				return &packet.Expr{Kind: packet.EParam, Width: p.Width, Param: i}, nil
			}
		}
		if h := r.scope.header; h != nil {
			if i, ok := h.Field(ref.Name); ok && !h.Fields[i].Variable() {
				return &packet.Expr{Kind: packet.EField, Width: h.Fields[i].Width, Field: packet.FieldRef{Header: h.ID, Field: i}}, nil
			}
		}
		if r.scope.params != nil {
			return nil, errAt(ref.Pos, "unknown name %s (not a parameter; fields are written header.field)", ref.Name)
		}
		return nil, errAt(ref.Pos, "unknown name %s (fields are written header.field)", ref.Name)
	}
	f, err := r.field(ref)
	if err != nil {
		return nil, err
	}
	fs := r.schema.FieldSpec(f)
	if fs.Variable() {
		return nil, errAt(ref.Pos, "%s.%s has a variable length and no value", ref.Name, *ref.Field)
	}
	return &packet.Expr{Kind: packet.EField, Width: fs.Width, Field: f}, nil
}

func (r *resolver) field(ref *syntax.Ref) (packet.FieldRef, error) {
	if ref.Field == nil {
		return packet.FieldRef{}, errAt(ref.Pos, "%s: want header.field", ref.Name)
	}
	h, ok := r.schema.Header(ref.Name)
	if !ok {
		return packet.FieldRef{}, errAt(ref.Pos, "unknown header %s", ref.Name)
	}
	i, ok := h.Field(*ref.Field)
	if !ok {
		return packet.FieldRef{}, errAt(ref.Pos, "header %s has no field %s (it has %s)", h.Name, *ref.Field, fieldNames(h))
	}
	return packet.FieldRef{Header: h.ID, Field: i}, nil
}

func fieldNames(h *packet.HeaderSpec) string {
	names := make([]string, len(h.Fields))
	for i, f := range h.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// widthOf is the number of bits needed for v.
func widthOf(v packet.Value) int {
	if v.Hi != 0 {
		return 128 - bits.LeadingZeros64(v.Hi)
	}
	return max(64-bits.LeadingZeros64(v.Lo), 1)
}
