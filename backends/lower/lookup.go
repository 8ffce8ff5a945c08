package lower

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// A lookup, lowered: its keys with the arithmetic each is computed in and
// its place in a packed word, and its actions in port order. The
// printer looks the keys up in its target's table structures (Go's
// runtime tables, XDP's maps) and calls Walker.Actions where the picked
// action runs:
//
//	Dispatch; per action: Action, its assignments (Assign), its port fired, EndAction; EndDispatch

// LookupKey is one key of a lookup.
type LookupKey struct {
	Expr  *packet.Expr
	Width int
	// Wide: computed in 128 bits, then cut to Width; else its low 64
	// bits are all it needs (flow.LowPreserving).
	Wide bool
	// Shift is the key's bit position where all keys pack into one word
	// (packet.TableSpec.KeyWord), the last key lowest.
	Shift int
}

// Lookup is a lowered lookup.
type Lookup struct {
	Table int
	Def   *packet.TableDef
	Keys  []LookupKey
	// Narrow: every key of at most 64 bits is computed in 64.
	Narrow bool
	// Actions in port order; the last is the dispatch's default.
	Actions []*packet.Action
}

// ActionSyntax prints a lookup's action dispatch (Walker.Actions).
type ActionSyntax interface {
	// Dispatch opens the dispatch on the action the lookup picked;
	// Action opens action i's case (the last one the default), and
	// EndAction closes it after its port fired; EndDispatch closes the
	// dispatch.
	Dispatch(l *Lookup)
	Action(l *Lookup, i int)
	EndAction(l *Lookup, i int)
	EndDispatch(l *Lookup)
}

// LowerLookup lowers lookup node n; it refuses a table whose key
// expressions or actions do not match its spec.
func (w *Walker) LowerLookup(n *dataflow.Node) (Lookup, bool) {
	s := w.P.Graph.Schema
	def := s.Tables[n.Op.Table]
	l := Lookup{Table: n.Op.Table, Def: def, Narrow: true}
	if len(def.Keys) != len(def.Spec.Keys) {
		w.Refuse(n, "table %s: %d key expressions for %d keys", def.Spec.Name, len(def.Keys), len(def.Spec.Keys))
		return l, false
	}
	shift := 0
	l.Keys = make([]LookupKey, len(def.Keys))
	for i := len(def.Keys) - 1; i >= 0; i-- {
		k, width := def.Keys[i], def.Spec.Keys[i].Width
		l.Keys[i] = LookupKey{Expr: k, Width: width, Wide: flow.IsWide(k) && (width > 64 || !flow.LowPreserving(k)), Shift: shift}
		shift += width
		l.Narrow = l.Narrow && (width > 64 || !l.Keys[i].Wide)
	}
	for _, ai := range def.Actions {
		if ai < 0 || ai >= len(s.Actions) {
			w.Refuse(n, "table %s: action %d does not exist", def.Spec.Name, ai)
			return l, false
		}
		l.Actions = append(l.Actions, s.Actions[ai])
	}
	return l, true
}

// lookup prints lookup node n.
func (w *Walker) lookup(n *dataflow.Node) {
	if l, ok := w.LowerLookup(n); ok {
		w.D.Lookup(n, &l)
	}
}

// Actions prints lookup l's dispatch at node n: each action's
// assignments, in a scope of their own, and its port.
func (w *Walker) Actions(n *dataflow.Node, l *Lookup) {
	d := w.D
	d.Dispatch(l)
	for i, a := range l.Actions {
		d.Action(l, i)
		d.PushScope()
		for _, as := range a.Body {
			if sa, ok := w.assignOf(n, as); ok {
				d.Assign(sa, nil)
			}
		}
		d.PopScope()
		w.Fire(n, i)
		d.EndAction(l, i)
	}
	d.EndDispatch(l)
}
