package predicate

import (
	"errors"
	"fmt"

	"github.com/dragonet-go/nsc/packet"
)

// Field names a packet field and its width in bits (1..128), e.g.
// {"ipv4.proto", 8}. A name keeps the width it was first used with.
type Field struct {
	Name  string
	Width int
}

// Space owns the BDDs, the variable layout and the atom registry. Predicates
// from different Spaces cannot be combined. A Space is not safe for
// concurrent use and never frees nodes: use one per compilation.
type Space struct {
	bits  *bdd // one variable per field bit, header validity and symbol
	atoms *bdd // one variable per distinct atom; used only for DNF printing

	vars    []varInfo // by bit level
	fields  map[string]fieldVars
	headers map[string]int32 // valid(h) → bit level
	symbols map[string]int32 // symbol → bit level

	atomIDs    map[string]int32   // canonical key → atom level
	atomList   []atomInfo         // by atom level
	fieldAtoms map[string][]int32 // field name → levels of its atoms, ascending

	errs    []error
	errSeen map[string]bool
}

type varKind uint8

const (
	varField varKind = iota
	varValid
	varSymbol
)

type varInfo struct {
	kind varKind
	name string
	bit  int // field bit index, 0 = least significant
}

// fieldVars places a field's bits at consecutive levels, most significant
// first, so that comparisons against constants stay linear in the width.
type fieldVars struct {
	width int
	base  int32 // level of the most significant bit
}

func (f fieldVars) level(bit int) int32 { return f.base + int32(f.width-1-bit) }

type atomInfo struct {
	text    string
	negText string // how the negation prints when not "not(text)": "x != 3" for "x == 3"
	field   string // the field a field atom reads; "" for validity and symbols
	bit     node   // the atom's bit-level meaning
}

// NewSpace returns an empty Space.
func NewSpace() *Space {
	return &Space{
		bits:       newBDD(),
		atoms:      newBDD(),
		fields:     map[string]fieldVars{},
		headers:    map[string]int32{},
		symbols:    map[string]int32{},
		atomIDs:    map[string]int32{},
		fieldAtoms: map[string][]int32{},
		errSeen:    map[string]bool{},
	}
}

// Err reports every misuse seen so far (bad width, width clash, empty name,
// unknown operator, prefix length out of range, mixing Spaces), or nil.
// Each misuse also made the offending constructor or operation return False,
// so a caller that ignores Err gets a predicate that matches nothing.
func (s *Space) Err() error { return errors.Join(s.errs...) }

func (s *Space) fail(format string, args ...any) Pred {
	err := fmt.Errorf("predicate: "+format, args...)
	if !s.errSeen[err.Error()] {
		s.errSeen[err.Error()] = true
		s.errs = append(s.errs, err)
	}
	return s.False()
}

// True returns the predicate that holds for every packet.
func (s *Space) True() Pred { return Pred{s, trueNode, trueNode} }

// False returns the predicate that holds for no packet.
func (s *Space) False() Pred { return Pred{s, falseNode, falseNode} }

func (s *Space) newBitVar(v varInfo) int32 {
	s.vars = append(s.vars, v)
	return int32(len(s.vars) - 1)
}

// field returns the layout of f, allocating its variables on first use.
func (s *Space) field(f Field) (fieldVars, error) {
	if f.Name == "" {
		return fieldVars{}, errors.New("field with empty name")
	}
	if f.Width < 1 || f.Width > 128 {
		return fieldVars{}, fmt.Errorf("field %s has width %d, want 1..128", f.Name, f.Width)
	}
	if fv, ok := s.fields[f.Name]; ok {
		if fv.width != f.Width {
			return fieldVars{}, fmt.Errorf("field %s used with width %d and %d", f.Name, fv.width, f.Width)
		}
		return fv, nil
	}
	fv := fieldVars{width: f.Width, base: int32(len(s.vars))}
	for i := f.Width - 1; i >= 0; i-- {
		s.newBitVar(varInfo{varField, f.Name, i})
	}
	s.fields[f.Name] = fv
	return fv, nil
}

// atom returns the atom with the given key, described by info (text,
// negText, field) and with its bit-level BDD built by build on first use.
// The same key always yields the same atom variable.
func (s *Space) atom(key string, info atomInfo, build func() node) Pred {
	id, ok := s.atomIDs[key]
	if !ok {
		info.bit = build()
		id = int32(len(s.atomList))
		s.atomList = append(s.atomList, info)
		s.atomIDs[key] = id
		if info.field != "" {
			s.fieldAtoms[info.field] = append(s.fieldAtoms[info.field], id)
		}
	}
	return Pred{s, s.atomList[id].bit, s.atoms.variable(id)}
}

// Valid returns the atom "header is present and parsed", printed valid(header).
func (s *Space) Valid(header string) Pred {
	if header == "" {
		return s.fail("valid() of empty header name")
	}
	text := "valid(" + header + ")"
	return s.atom("v\x00"+header, atomInfo{text: text}, func() node {
		l, ok := s.headers[header]
		if !ok {
			l = s.newBitVar(varInfo{kind: varValid, name: header})
			s.headers[header] = l
		}
		return s.bits.variable(l)
	})
}

// Symbol returns an opaque named boolean atom, printed as name, e.g.
// "pred(TxQueue,out)".
func (s *Space) Symbol(name string) Pred {
	if name == "" {
		return s.fail("symbol with empty name")
	}
	return s.atom("s\x00"+name, atomInfo{text: name}, func() node {
		l, ok := s.symbols[name]
		if !ok {
			l = s.newBitVar(varInfo{kind: varSymbol, name: name})
			s.symbols[name] = l
		}
		return s.bits.variable(l)
	})
}

// Eq returns f == v.
func (s *Space) Eq(f Field, v packet.Value) Pred { return s.Cmp(f, "==", v) }

// Cmp returns f op v for op in "==", "!=", "<", "<=", ">", ">=", comparing
// unsigned integers. A field never holds a value wider than itself, so an
// 8-bit field is < 300 always and == 300 never.
func (s *Space) Cmp(f Field, op string, v packet.Value) Pred {
	switch op {
	case "==", "!=", "<", "<=", ">", ">=":
	default:
		return s.fail("unknown comparison %q on field %s", op, f.Name)
	}
	fv, err := s.field(f)
	if err != nil {
		return s.fail("%v", err)
	}
	text := f.Name + " " + op + " " + v.String()
	neg := f.Name + " " + negatedOp[op] + " " + v.String()
	return s.atom("f\x00"+text, atomInfo{text: text, negText: neg, field: f.Name}, func() node {
		switch op {
		case "==": // all 128 mask bits: a v wider than the field never matches
			return s.eqBits(fv, v, packet.Mask(128))
		case "!=":
			return s.bits.not(s.eqBits(fv, v, packet.Mask(128)))
		case "<":
			return s.cmpBits(fv, v, true, false)
		case "<=":
			return s.cmpBits(fv, v, true, true)
		case ">":
			return s.cmpBits(fv, v, false, false)
		default: // ">="
			return s.cmpBits(fv, v, false, true)
		}
	})
}

// negatedOp maps each comparison to the one that holds exactly when it
// does not, for printing negated comparisons.
var negatedOp = map[string]string{"==": "!=", "!=": "==", "<": ">=", ">=": "<", "<=": ">", ">": "<="}

// Masked returns f & mask == v & mask, printed "f in v/mask" in hex.
func (s *Space) Masked(f Field, v, mask packet.Value) Pred {
	fv, err := s.field(f)
	if err != nil {
		return s.fail("%v", err)
	}
	v = v.And(mask)
	text := f.Name + " in " + hex(v) + "/" + hex(mask)
	return s.atom("f\x00"+text, atomInfo{text: text, field: f.Name}, func() node { return s.eqBits(fv, v, mask) })
}

// Range returns lo <= f <= hi, printed "f in [lo, hi]"; it is False when
// lo > hi.
func (s *Space) Range(f Field, lo, hi packet.Value) Pred {
	fv, err := s.field(f)
	if err != nil {
		return s.fail("%v", err)
	}
	text := f.Name + " in [" + lo.String() + ", " + hi.String() + "]"
	return s.atom("f\x00"+text, atomInfo{text: text, field: f.Name}, func() node {
		return s.bits.and(s.cmpBits(fv, lo, false, true), s.cmpBits(fv, hi, true, true))
	})
}

// Prefix returns "the top length bits of f equal those of v", where v is
// read as a value of f's width; printed "f in v/length" with v in hex and
// its low bits cleared. length must be in 0..f.Width.
func (s *Space) Prefix(f Field, v packet.Value, length int) Pred {
	fv, err := s.field(f)
	if err != nil {
		return s.fail("%v", err)
	}
	if length < 0 || length > f.Width {
		return s.fail("prefix length %d on field %s of width %d", length, f.Name, f.Width)
	}
	mask := packet.Mask(f.Width).And(packet.Mask(f.Width - length).Not())
	v = v.And(mask)
	text := f.Name + " in " + hex(v) + "/" + fmt.Sprint(length)
	return s.atom("f\x00"+text, atomInfo{text: text, field: f.Name}, func() node { return s.eqBits(fv, v, mask) })
}

// hex prints masks and masked values, which read better in hex than in
// packet.Value.String's decimal for small numbers.
func hex(v packet.Value) string {
	if v.Hi == 0 {
		return fmt.Sprintf("0x%x", v.Lo)
	}
	return fmt.Sprintf("0x%x%016x", v.Hi, v.Lo)
}

// eqBits is the BDD of f & mask == v & mask. Mask bits above the field's
// width compare against the field's implicit zero bits.
func (s *Space) eqBits(fv fieldVars, v, mask packet.Value) node {
	if !v.And(mask).And(packet.Mask(fv.width).Not()).IsZero() {
		return falseNode
	}
	r := trueNode
	for i := 0; i < fv.width; i++ { // least significant bit first: bottom-up
		if !mask.Bit(i) {
			continue
		}
		if v.Bit(i) {
			r = s.bits.mk(fv.level(i), falseNode, r)
		} else {
			r = s.bits.mk(fv.level(i), r, falseNode)
		}
	}
	return r
}

// cmpBits is the BDD of f < v (less, !orEqual), f <= v, f > v or f >= v,
// built bottom-up: below the most significant differing bit the answer is
// decided, and if no bit differs it is orEqual.
func (s *Space) cmpBits(fv fieldVars, v packet.Value, less, orEqual bool) node {
	if !v.And(packet.Mask(fv.width).Not()).IsZero() { // v is out of the field's range
		if less {
			return trueNode
		}
		return falseNode
	}
	r := falseNode
	if orEqual {
		r = trueNode
	}
	for i := 0; i < fv.width; i++ {
		l := fv.level(i)
		switch {
		case less && v.Bit(i): // f bit 0 < 1: decided true
			r = s.bits.mk(l, trueNode, r)
		case less: // f bit 1 > 0: decided false
			r = s.bits.mk(l, r, falseNode)
		case v.Bit(i): // greater: f bit 0 < 1 decided false
			r = s.bits.mk(l, falseNode, r)
		default:
			r = s.bits.mk(l, r, trueNode)
		}
	}
	return r
}
