package lang

import (
	"github.com/dragonet-go/nsc/lang/internal/syntax"

	"strings"
	"time"

	"github.com/dragonet-go/nsc/packet"
)

// State defaults, when a state declaration leaves them out.
const (
	defaultStateMax     = 1 << 30
	defaultStateTimeout = 500 * time.Millisecond
	defaultStateEvents  = 1024
	defaultStateBytes   = 4 << 30
)

var byteUnits = map[string]uint64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}

var timeUnits = map[string]time.Duration{"ns": time.Nanosecond, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}

// maxAmount bounds every state amount, in bytes or ns (1 PiB, 13 days).
const maxAmount = 1 << 50

func (l *loader) states() {
	s := l.schema
	for _, d := range l.decls {
		sd := d.State
		if sd == nil {
			continue
		}
		if _, dup := s.State(sd.Name); dup {
			l.errorf(sd.Pos, "state %s declared twice", sd.Name)
			continue
		}
		if st := l.state(sd); st != nil {
			s.States = append(s.States, st)
		}
	}
}

// state resolves one declaration; nil after recording an error.
func (l *loader) state(sd *syntax.StateDecl) *packet.StateDef {
	st := &packet.StateDef{Name: sd.Name, Max: defaultStateMax, Timeout: defaultStateTimeout, Events: defaultStateEvents, Bytes: defaultStateBytes}
	before := len(l.errs)
	seen := map[string]bool{}
	once := func(it *syntax.StateItem, item string) bool {
		if seen[item] {
			l.errorf(it.Pos, "state %s: %s given twice", sd.Name, item)
			return false
		}
		seen[item] = true
		return true
	}
	r := l.resolver(scope{})
	value := func(x *syntax.Expr, what string) *packet.Expr {
		return l.valueExpr(r, x, "state "+sd.Name+": "+what)
	}
	for _, it := range sd.Items {
		switch {
		case it.Buffer != nil:
			if once(it, "buffer") {
				st.Length = value(it.Buffer, "buffer")
			}
		case it.Limit != "":
			if once(it, it.Limit) {
				l.stateLimit(sd.Name, st, it.Limit, it.Amount)
			}
		default:
			if !once(it, "key") {
				continue
			}
			for _, k := range it.Keys {
				if e := value(k, "key"); e != nil {
					st.Keys = append(st.Keys, e)
				}
			}
			if len(it.Keys) == 0 {
				l.errorf(it.Pos, "state %s: an empty key (name what tells its entries apart)", sd.Name)
			}
		}
	}
	if len(l.errs) > before {
		return nil
	}
	switch {
	case !seen["key"]:
		l.errorf(sd.Pos, "state %s has no key (add `key { EXPR, … }`)", sd.Name)
	case st.Length == nil:
		l.errorf(sd.Pos, "state %s has no buffer length (add `buffer EXPR`, the whole event's length)", sd.Name)
	case st.Max > st.Bytes:
		l.errorf(sd.Pos, "state %s: max %d is above bytes %d: an event that long could never be held", sd.Name, st.Max, st.Bytes)
	default:
		return st
	}
	return nil
}

// stateLimit sets one of max, timeout, events and bytes.
func (l *loader) stateLimit(state string, st *packet.StateDef, limit string, a *syntax.Amount) {
	n, err := smallInt(a.Value, maxAmount)
	if err == nil && n == 0 {
		l.errorf(a.Pos, "state %s: %s 0: want at least 1", state, limit)
		return
	}
	if err != nil {
		l.errorf(a.Pos, "state %s: %s: %v", state, limit, err)
		return
	}
	unit := ""
	if a.Unit != nil {
		unit = *a.Unit
	}
	bad := func(want string) {
		l.errorf(a.Pos, "state %s: %s %s: want %s", state, limit, strings.TrimSpace(a.Value+" "+unit), want)
	}
	switch limit {
	case "timeout":
		u, ok := timeUnits[unit]
		switch {
		case !ok:
			bad("a duration (ns, us, ms or s)")
			return
		case n > maxAmount/int(u):
			bad("at most 2^50 ns (13 days)")
			return
		}
		st.Timeout = time.Duration(n) * u
	case "events":
		if unit != "" {
			bad("a number of events, no unit")
			return
		}
		st.Events = n
	default:
		u, ok := byteUnits[unit]
		switch {
		case !ok:
			bad("bytes (B, KiB, MiB or GiB)")
			return
		case uint64(n) > maxAmount/u:
			bad("at most 2^50 bytes (1 PiB)")
			return
		}
		if limit == "max" {
			st.Max = uint64(n) * u
		} else {
			st.Bytes = uint64(n) * u
		}
	}
}

// placeOp resolves `place STATE at OFFSET [size SIZE]`.
func (l *loader) placeOp(od *syntax.OpDecl, r *resolver) *packet.Op {
	pd := od.Place
	o := &packet.Op{Kind: packet.OpPlace, After: -1, Header: -1, Table: -1}
	var ok bool
	if o.State, ok = l.schema.State(pd.State); !ok {
		l.errorf(od.Pos, "unknown state %s", pd.State)
		return nil
	}
	o.Offset = l.valueExpr(r, pd.Offset, "place at")
	if pd.Size != nil {
		o.Size = l.valueExpr(r, pd.Size, "place size")
		if o.Size == nil {
			return nil
		}
	}
	if o.Offset == nil {
		return nil
	}
	return o
}

// valueExpr resolves x, which must be a value; nil after an error.
func (l *loader) valueExpr(r *resolver, x *syntax.Expr, what string) *packet.Expr {
	e, err := r.expr(x)
	if err != nil {
		l.exprError(err)
		return nil
	}
	if e.Boolean() {
		l.errorf(x.Pos, "%s %s: want a value, not a condition", what, e.Text)
		return nil
	}
	return e
}
