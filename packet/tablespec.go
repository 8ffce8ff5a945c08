package packet

import (
	"errors"
	"fmt"
	"math"
)

// MatchKind is how a table key compares a packet value with an entry.
type MatchKind uint8

const (
	Exact   MatchKind = iota // value equals
	LPM                      // longest prefix: the top PrefixLen bits equal
	Ternary                  // value&mask equals entry&mask
	Range                    // Lo <= value <= Hi
)

var matchKindNames = [...]string{Exact: "exact", LPM: "lpm", Ternary: "ternary", Range: "range"}

func (k MatchKind) String() string {
	if int(k) < len(matchKindNames) {
		return matchKindNames[k]
	}
	return fmt.Sprintf("MatchKind(%d)", k)
}

// ParseMatchKind maps the P4 names "exact", "lpm", "ternary" and "range".
func ParseMatchKind(s string) (MatchKind, bool) {
	for k, n := range matchKindNames {
		if n == s {
			return MatchKind(k), true
		}
	}
	return 0, false
}

// KeySpec is one key of a table. Name is the field path, e.g. "ipv4.dst" or
// "meta.epoch".
type KeySpec struct {
	Name  string
	Width int
	Kind  MatchKind
}

// Param is an action parameter, filled from the table entry.
type Param struct {
	Name  string
	Width int
}

// ActionSpec is an action as a table sees it: a name and its parameters.
type ActionSpec struct {
	Name   string
	Params []Param
}

// TableSpec is a table's schema. It must not change once a table.Table
// (packet/table) uses it.
type TableSpec struct {
	Name    string
	Keys    []KeySpec
	Actions []ActionSpec
	// Size bounds the number of entries; 0 means no bound.
	Size int
	// Default names the action a miss runs ("" for none) with DefaultParams.
	Default       string
	DefaultParams []Value
	// Priorities makes entries carry a priority although no key is ternary
	// or range: seed 000's epoch table matches one lpm key yet lets a
	// priority, not the prefix length, pick among overlapping entries.
	Priorities bool
}

// Shaped reports, as an error, where o differs from s in what code
// generated for s relies on: the name, the keys (kinds and widths) and
// the actions (names, parameters' widths), in order. An entry of a table
// of o is then one of s.
func (s *TableSpec) Shaped(o *TableSpec) error {
	if o.Name != s.Name {
		return fmt.Errorf("table is %s, want %s", o.Name, s.Name)
	}
	if len(o.Keys) != len(s.Keys) {
		return fmt.Errorf("%s: %d keys, want %d", s.Name, len(o.Keys), len(s.Keys))
	}
	for i, k := range s.Keys {
		if ok := o.Keys[i]; ok.Width != k.Width || ok.Kind != k.Kind {
			return fmt.Errorf("%s: key %d is %d bits %s, want %d bits %s", s.Name, i, ok.Width, ok.Kind, k.Width, k.Kind)
		}
	}
	if len(o.Actions) != len(s.Actions) {
		return fmt.Errorf("%s: %d actions, want %d", s.Name, len(o.Actions), len(s.Actions))
	}
	for i, a := range s.Actions {
		oa := o.Actions[i]
		same := oa.Name == a.Name && len(oa.Params) == len(a.Params)
		for j := 0; same && j < len(a.Params); j++ {
			same = oa.Params[j].Width == a.Params[j].Width
		}
		if !same {
			return fmt.Errorf("%s: action %d is %s%v, want %s%v", s.Name, i, oa.Name, oa.Params, a.Name, a.Params)
		}
	}
	return nil
}

// NeedsPriority reports whether entries carry a priority that decides among
// overlapping matches: with a ternary or range key, more than one lpm key
// (prefix length alone no longer orders them), or when Priorities is set.
func (s *TableSpec) NeedsPriority() bool {
	lpms := 0
	for _, k := range s.Keys {
		switch k.Kind {
		case Ternary, Range:
			return true
		case LPM:
			lpms++
		}
	}
	return s.Priorities || lpms > 1
}

// ActionIndex returns the index in Actions of the named action.
func (s *TableSpec) ActionIndex(name string) (int, bool) {
	for i, a := range s.Actions {
		if a.Name == name {
			return i, true
		}
	}
	return -1, false
}

// Validate checks that widths are 1..128, kinds known, action names unique and
// the default action resolves with fitting parameters.
func (s *TableSpec) Validate() error {
	if s.Size < 0 {
		return fmt.Errorf("table %s: negative size %d", s.Name, s.Size)
	}
	for _, k := range s.Keys {
		if k.Width < 1 || k.Width > 128 {
			return fmt.Errorf("table %s: key %s: width %d not in 1..128", s.Name, k.Name, k.Width)
		}
		if k.Kind > Range {
			return fmt.Errorf("table %s: key %s: unknown match kind %d", s.Name, k.Name, k.Kind)
		}
	}
	seen := map[string]bool{}
	for _, a := range s.Actions {
		if a.Name == "" || seen[a.Name] {
			return fmt.Errorf("table %s: action name %q empty or repeated", s.Name, a.Name)
		}
		seen[a.Name] = true
		for _, p := range a.Params {
			if p.Width < 1 || p.Width > 128 {
				return fmt.Errorf("table %s: action %s: param %s: width %d not in 1..128", s.Name, a.Name, p.Name, p.Width)
			}
		}
	}
	if s.Default == "" {
		if len(s.DefaultParams) != 0 {
			return fmt.Errorf("table %s: default params without a default action", s.Name)
		}
		return nil
	}
	a, ok := s.ActionIndex(s.Default)
	if !ok {
		return fmt.Errorf("table %s: unknown default action %q", s.Name, s.Default)
	}
	if err := s.CheckParams(a, s.DefaultParams); err != nil {
		return fmt.Errorf("table %s: default: %w", s.Name, err)
	}
	return nil
}

// KeyMatch is how one entry matches one key. Which members count depends on
// the key's kind: Exact uses Value; LPM Value and PrefixLen; Ternary Value and
// Mask; Range Lo and Hi.
type KeyMatch struct {
	Value, Mask Value
	PrefixLen   int
	Lo, Hi      Value
}

// Entry is one table entry.
type Entry struct {
	Keys   []KeyMatch // one per Spec.Keys
	Action int        // index into Spec.Actions
	Params []Value    // one per action parameter
	// Priority picks among overlapping matches in tables that need one:
	// lower wins, as in P4 runtimes and seed 000 ("low is higher").
	Priority int
	Line     int // source line of a table_add script, 0 if none
}

var (
	// ErrTableFull reports an insert past TableSpec.Size.
	ErrTableFull = errors.New("table full")
	// ErrDuplicateEntry reports an entry that matches exactly what an
	// earlier one does (with the same priority, where priorities count).
	ErrDuplicateEntry = errors.New("duplicate entry")
)

// CheckParams validates params against action a's parameter list.
func (s *TableSpec) CheckParams(a int, params []Value) error {
	act := &s.Actions[a]
	if len(params) != len(act.Params) {
		return fmt.Errorf("action %s takes %d params, got %d", act.Name, len(act.Params), len(params))
	}
	for i, p := range act.Params {
		if !params[i].Fits(p.Width) {
			return fmt.Errorf("action %s: param %s: %v wider than %d bits", act.Name, p.Name, params[i], p.Width)
		}
	}
	return nil
}

// checkEntry validates e against the spec, without looking at other entries.
func (s *TableSpec) checkEntry(e *Entry) error {
	if err := s.checkMatch(e); err != nil {
		return err
	}
	if e.Action < 0 || e.Action >= len(s.Actions) {
		return fmt.Errorf("action index %d out of range", e.Action)
	}
	return s.CheckParams(e.Action, e.Params)
}

// checkMatch validates e's keys and priority against the spec.
func (s *TableSpec) checkMatch(e *Entry) error {
	if len(e.Keys) != len(s.Keys) {
		return fmt.Errorf("%d keys, table has %d", len(e.Keys), len(s.Keys))
	}
	for i, k := range s.Keys {
		m := &e.Keys[i]
		var err error
		switch k.Kind {
		case Exact:
			err = fits(m.Value, k.Width, "value")
		case LPM:
			err = fits(m.Value, k.Width, "value")
			if err == nil && (m.PrefixLen < 0 || m.PrefixLen > k.Width) {
				err = fmt.Errorf("prefix length %d not in 0..%d", m.PrefixLen, k.Width)
			}
		case Ternary:
			err = fits(m.Value, k.Width, "value")
			if err == nil {
				err = fits(m.Mask, k.Width, "mask")
			}
		case Range:
			err = fits(m.Lo, k.Width, "low bound")
			if err == nil {
				err = fits(m.Hi, k.Width, "high bound")
			}
			if err == nil && m.Lo.Cmp(m.Hi) > 0 {
				err = fmt.Errorf("empty range %v->%v", m.Lo, m.Hi)
			}
		}
		if err != nil {
			return fmt.Errorf("key %s: %w", k.Name, err)
		}
	}
	switch {
	case e.Priority != 0 && !s.NeedsPriority():
		return fmt.Errorf("priority %d in a table without priorities", e.Priority)
	case e.Priority < 0 || e.Priority > math.MaxInt32:
		return fmt.Errorf("priority %d not in 0..2^31-1", e.Priority)
	}
	return nil
}

func fits(v Value, width int, what string) error {
	if !v.Fits(width) {
		return fmt.Errorf("%s %v wider than %d bits", what, v, width)
	}
	return nil
}

// EntryName names entry i of a table in errors: by script line when known.
func EntryName(e *Entry, i int) string {
	if e.Line > 0 {
		return fmt.Sprintf("entry at line %d", e.Line)
	}
	return fmt.Sprintf("entry %d", i)
}

// KeyBits is the width of a table's keys together: what a PRG's key_bits
// limit bounds.
func (s *TableSpec) KeyBits() int {
	w := 0
	for _, k := range s.Keys {
		w += k.Width
	}
	return w
}

// ActionBits is the most parameter bits an action of the table carries:
// what a PRG's action_bits limit bounds.
func (s *TableSpec) ActionBits() int {
	most := 0
	for _, a := range s.Actions {
		bits := 0
		for _, p := range a.Params {
			bits += p.Width
		}
		most = max(most, bits)
	}
	return most
}

// KeyWord reports whether a table's keys fit one 64-bit word together, so
// that table.Table.LookupWord can take them packed (PackKeys).
func (s *TableSpec) KeyWord() bool { return s.KeyBits() <= 64 }

// Packable reports whether a table's keys are all exact and fit in 64 bits
// together, so that table.Table.LookupWord finds them with one probe.
func (s *TableSpec) Packable() bool {
	w := 0
	for _, k := range s.Keys {
		if k.Kind != Exact {
			return false
		}
		w += k.Width
	}
	return w <= 64 && !s.NeedsPriority()
}

// PackKeys packs key values (each cut to its width) into one word, the
// first key in the highest bits: the key table.Table.LookupWord takes.
func (s *TableSpec) PackKeys(keys []Value) uint64 {
	var k uint64
	for i, ks := range s.Keys {
		k = k<<ks.Width | keys[i].Lo&(1<<ks.Width-1)
	}
	return k
}

// MaxKeyWords is the most key words table.Table.LookupWords takes.
const MaxKeyWords = 4

// KeyWords is the number of 64-bit words a table's keys take as
// table.Table.LookupWords wants them: one per key of at most 64 bits, two
// per wider key (high word first), in key order.
func (s *TableSpec) KeyWords() int {
	n := 0
	for _, k := range s.Keys {
		n++
		if k.Width > 64 {
			n++
		}
	}
	return n
}

// IntervalKey is the key an interval index of a table's entries cuts into
// segments: its one key that is not exact, if that is an lpm or range key,
// every key is at most 64 bits wide and there are at most MaxKeyWords of
// them; -1 if the table has not that shape.
func (s *TableSpec) IntervalKey() int {
	at := -1
	for j, k := range s.Keys {
		switch {
		case k.Width > 64 || j >= MaxKeyWords:
			return -1
		case k.Kind == Exact:
		case at >= 0 || k.Kind == Ternary:
			return -1
		default:
			at = j
		}
	}
	return at
}
