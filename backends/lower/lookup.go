package lower

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// A lookup, lowered: its keys with the arithmetic each is computed in,
// the words and bytes a table index reads them as, the index shapes the
// table's keys allow, and its actions in port order. The printer spells
// the keys' loads and stores and its target's probe of its table
// structures (Go's runtime tables, XDP's maps), and calls Walker.Actions
// where the picked action runs:
//
//	Dispatch; per action: Action, its assignments (Assign), its port fired, EndAction; EndDispatch

// LookupKey is one key of a lookup.
type LookupKey struct {
	Expr  *packet.Expr
	Width int
	// Kind is how an entry matches the key: a scan tests it so.
	Kind packet.MatchKind
	// Wide: computed in 128 bits, then cut to Width; else its low 64
	// bits are all it needs (flow.LowPreserving).
	Wide bool
	// Words is the 64-bit words the key takes where an index reads
	// words: 2 over 64 bits (the high word first), else 1.
	Words int
	// Shift is the key's bit position where all keys pack into one word
	// (packet.TableSpec.KeyWord), the last key lowest.
	Shift int
	// Bytes is the bytes the key takes where an index reads bytes (an
	// LPM trie), big-endian: its value cut to Width and shifted left by
	// Pad bits fills them (ByteShift).
	Bytes, Pad int
}

// ByteShift is the right shift of the key's padded value whose low byte
// is the key's byte i (big-endian).
func (k *LookupKey) ByteShift(i int) int { return 8 * (k.Bytes - 1 - i) }

// Lookup is a lowered lookup.
type Lookup struct {
	Table int
	Def   *packet.TableDef
	Keys  []LookupKey
	// The index shapes of table.Table the keys allow. Packed: all keys
	// in one word, each at its Shift (packet.TableSpec.KeyWord). InWords:
	// the keys as words (the packed one, or a tuple of at most
	// packet.MaxKeyWords), each computed in 64 bits where it fits them;
	// else the keys are 128-bit values. Scan: a priority table of at
	// most MaxKeyWords keys of a word each, whose entries a scan tests
	// in priority order, each key by its Kind. Interval: the one lpm or
	// range key among exact ones an index searches by interval
	// (packet.TableSpec.IntervalKey), or -1.
	Packed, InWords, Scan bool
	Interval              int
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
	spec := def.Spec
	l := Lookup{Table: n.Op.Table, Def: def, Packed: spec.KeyWord(), Interval: spec.IntervalKey()}
	if len(def.Keys) != len(spec.Keys) {
		w.Refuse(n, "table %s: %d key expressions for %d keys", spec.Name, len(def.Keys), len(spec.Keys))
		return l, false
	}
	narrow := true // every key of at most 64 bits is computed in 64
	l.Scan = spec.NeedsPriority() && len(def.Keys) <= packet.MaxKeyWords
	shift := 0
	l.Keys = make([]LookupKey, len(def.Keys))
	for i := len(def.Keys) - 1; i >= 0; i-- {
		k, sk := def.Keys[i], spec.Keys[i]
		width := sk.Width
		bytes := (width + 7) / 8
		lk := LookupKey{Expr: k, Width: width, Kind: sk.Kind, Words: 1, Shift: shift, Bytes: bytes, Pad: 8*bytes - width}
		lk.Wide = flow.IsWide(k) && (width > 64 || !flow.LowPreserving(k))
		if width > 64 {
			lk.Words = 2
			l.Scan = false
		}
		l.Keys[i] = lk
		shift += width
		narrow = narrow && (width > 64 || !lk.Wide)
	}
	l.InWords = narrow && (l.Packed || spec.KeyWords() <= packet.MaxKeyWords)
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
