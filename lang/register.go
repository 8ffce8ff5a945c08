package lang

import (
	"github.com/dragonet-go/nsc/lang/internal/syntax"
	"github.com/dragonet-go/nsc/packet"
)

// defaultRegisterSize is a register's size when its declaration leaves it
// out.
const defaultRegisterSize = 1024

func (l *loader) registers() {
	s := l.schema
	for _, d := range l.decls {
		rd := d.Register
		if rd == nil {
			continue
		}
		if _, dup := s.Register(rd.Name); dup {
			l.errorf(rd.Pos, "register %s declared twice", rd.Name)
			continue
		}
		if r := l.register(rd); r != nil {
			s.Registers = append(s.Registers, r)
		}
	}
}

// register resolves one declaration; nil after recording an error.
func (l *loader) register(rd *syntax.RegisterDecl) *packet.RegisterDef {
	r := &packet.RegisterDef{Name: rd.Name, Value: -1, Size: defaultRegisterSize}
	before := len(l.errs)
	seen := map[string]bool{}
	res := l.resolver(scope{})
	for _, it := range rd.Items {
		item := "key"
		switch {
		case it.Value != nil:
			item = "value"
		case it.Size != nil:
			item = "size"
		}
		if seen[item] {
			l.errorf(it.Pos, "register %s: %s given twice", rd.Name, item)
			continue
		}
		seen[item] = true
		switch item {
		case "value":
			h, ok := l.schema.Header(*it.Value)
			switch {
			case !ok:
				l.errorf(it.Pos, "register %s: unknown header %s", rd.Name, *it.Value)
			case !h.Metadata:
				l.errorf(it.Pos, "register %s: value %s is a wire header; want metadata", rd.Name, *it.Value)
			default:
				r.Value = h.ID
			}
		case "size":
			n, err := smallInt(*it.Size, 1<<30)
			if err != nil || n == 0 {
				l.errorf(it.Pos, "register %s: size %s: want 1 to 2^30 entries", rd.Name, *it.Size)
			}
			r.Size = n
		default:
			for _, k := range it.Keys {
				if e := l.valueExpr(res, k, "register "+rd.Name+": key"); e != nil {
					r.Keys = append(r.Keys, e)
				}
			}
			if n := len(it.Keys); n == 0 || n > packet.MaxRegisterKeys {
				l.errorf(it.Pos, "register %s: a key of %d expressions; want 1 to %d", rd.Name, n, packet.MaxRegisterKeys)
			}
		}
	}
	switch {
	case len(l.errs) > before:
	case !seen["key"]:
		l.errorf(rd.Pos, "register %s has no key (add `key { EXPR, … }`)", rd.Name)
	case r.Value < 0:
		l.errorf(rd.Pos, "register %s has no value (add `value METADATA`, the header its entries hold)", rd.Name)
	default:
		return r
	}
	return nil
}
