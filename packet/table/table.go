package table

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/dragonet-go/nsc/packet"
)

// clone copies e and its slices.
func clone(e *packet.Entry) packet.Entry {
	c := *e
	c.Keys = slices.Clone(e.Keys)
	c.Params = slices.Clone(e.Params)
	return c
}

// lookupMode is the lookup structure a spec gets.
type lookupMode uint8

const (
	modeExact    lookupMode = iota // hash of the whole key tuple
	modeLPM                        // one hash per prefix length, longest first
	modePriority                   // scan in priority order, first match wins
)

// Table is a match table: a spec and an immutable snapshot of its entries.
// Writers build a new snapshot and swap it in, so Lookup takes no lock and
// never sees half an update.
type Table struct {
	spec  *packet.TableSpec
	mode  lookupMode
	lpm   int            // index of the lpm key in modeLPM
	masks []packet.Value // per key, the width mask a lookup key is cut to
	def   *packet.Entry  // what a miss returns
	// narrow: every key is at most 64 bits wide; shift: where key j sits
	// in a word packed by PackKeys (tables whose keys fit one word).
	narrow bool
	shift  []uint

	mu   sync.Mutex // serializes writers
	snap atomic.Pointer[snapshot]
}

// snapshot is one immutable generation of a table's entries and index.
type snapshot struct {
	entries []packet.Entry
	// index finds entries by their key words (what Lookup reads), if
	// indexed: every modeExact and modeLPM table, and modePriority tables
	// with few tuples of masks (maskGroups) unless Intervals serves one of
	// several levels better. Inline, a probe is one load less away from
	// the snapshot.
	index   wordIndex
	indexed bool
	// Probes are what generated code probes inline, and LookupWord(s)
	// too.
	Probes
	// modePriority: entry indices by (priority, insertion), and per entry
	// and key the matcher to test.
	order []int32
	match []matcher
}

// WordScan is a priority table's entries in priority order as rows of
// word matchers, for tables of at most MaxKeyWords keys: the first row all
// of whose matchers pass is the hit. Generated code scans it inline
// (Probes.Scan); the rows' fixed size spares it bounds checks.
type WordScan struct {
	Rows []ScanRow
}

// ScanRow is an entry's matchers, one per key (those past the keys pass
// every word), and its action.
type ScanRow struct {
	Match [packet.MaxKeyWords]WordMatch
	SlotAction
}

// WordMatch tests a key word k: k&Mask == Val && k-Lo <= Span (Span is hi
// - lo: one unsigned comparison tests the range).
type WordMatch struct{ Val, Mask, Lo, Span uint64 }

// level gathers, while a table is built, the entries of one lpm prefix
// length (or all exact entries).
type level struct {
	prefix  int
	mask    packet.Value // the lpm key's prefix mask
	entries []int32      // in insertion order
}

// matcher tests k&mask == val && lo <= k <= hi; every kind is a special case.
type matcher struct{ val, mask, lo, hi packet.Value }

// New makes an empty table for spec, which should have passed Validate;
// an invalid default action is ignored.
func New(spec *packet.TableSpec) *Table {
	t := &Table{spec: spec, lpm: -1, masks: make([]packet.Value, len(spec.Keys))}
	for i, k := range spec.Keys {
		t.masks[i] = packet.Mask(k.Width)
		if k.Kind == packet.LPM {
			t.lpm = i
		}
	}
	t.narrow = true
	for _, k := range spec.Keys {
		t.narrow = t.narrow && k.Width <= 64
	}
	if spec.KeyWord() {
		t.shift = make([]uint, len(spec.Keys))
		at := uint(0)
		for i := len(spec.Keys) - 1; i >= 0; i-- {
			t.shift[i] = at
			at += uint(spec.Keys[i].Width)
		}
	}
	switch {
	case spec.NeedsPriority():
		t.mode, t.lpm = modePriority, -1
	case t.lpm >= 0:
		t.mode = modeLPM
	}
	if a, ok := spec.ActionIndex(spec.Default); ok && spec.CheckParams(a, spec.DefaultParams) == nil {
		t.def = &packet.Entry{Action: a, Params: slices.Clone(spec.DefaultParams)}
	}
	t.snap.Store(t.build(nil))
	return t
}

// Spec returns the table's schema.
func (t *Table) Spec() *packet.TableSpec { return t.spec }

// Len returns the number of entries.
func (t *Table) Len() int { return len(t.snap.Load().entries) }

// Entries returns a copy of the entries in insertion order.
func (t *Table) Entries() []packet.Entry {
	es := t.snap.Load().entries
	out := make([]packet.Entry, len(es))
	for i := range es {
		out[i] = clone(&es[i])
	}
	return out
}

// build indexes entries an EntrySet let in: valid, no two with the same
// match.
func (t *Table) build(es []packet.Entry) *snapshot {
	s := &snapshot{entries: es}
	s.Len = len(es)
	nk := len(t.masks)
	if t.mode == modePriority {
		s.match = make([]matcher, len(es)*nk)
		s.order = make([]int32, len(es))
		for i := range es {
			s.order[i] = int32(i)
			ms := s.match[i*nk : (i+1)*nk]
			for j := range ms {
				ms[j] = t.matcher(j, &es[i].Keys[j])
			}
		}
		sort.SliceStable(s.order, func(a, b int) bool {
			return es[s.order[a]].Priority < es[s.order[b]].Priority
		})
		t.maskGroups(s)
		match := func(i int32, j int) *matcher { return &s.match[int(i)*nk+j] }
		if (!s.indexed || len(s.index.levels) > 1) && t.intervals(s, s.order, match) {
			s.index, s.indexed = wordIndex{}, false
		}
		if t.narrow && nk <= packet.MaxKeyWords && !s.indexed && s.Intervals == nil {
			s.Scan.Rows = make([]ScanRow, len(es))
			for oi, i := range s.order {
				r := &s.Scan.Rows[oi]
				for j := range r.Match {
					r.Match[j] = WordMatch{Span: math.MaxUint64}
					if j < nk {
						m := &s.match[int(i)*nk+j]
						r.Match[j] = WordMatch{m.val.Lo, m.mask.Lo, m.lo.Lo, m.hi.Lo - m.lo.Lo}
					}
				}
				r.SlotAction = SlotAction{int32(es[i].Action), es[i].Params}
			}
		}
		s.setProbe()
		return s
	}

	// norm holds, per entry, each key's value as compared (lpm values cut
	// to their prefix).
	norm := make([]packet.Value, len(es)*nk)
	var levels []level        // modeExact: one, prefix -1; modeLPM: one per prefix
	byPrefix := map[int]int{} // prefix length -> index in levels
	for i := range es {
		prefix, mask := -1, packet.Value{}
		for j := range nk {
			k := &es[i].Keys[j]
			v := k.Value
			if j == t.lpm {
				prefix = k.PrefixLen
				mask = packet.PrefixMask(t.spec.Keys[j].Width, prefix)
				v = v.And(mask)
			}
			norm[i*nk+j] = v
		}
		li, ok := byPrefix[prefix]
		if !ok {
			li = len(levels)
			byPrefix[prefix] = li
			levels = append(levels, level{prefix: prefix, mask: mask})
		}
		levels[li].entries = append(levels[li].entries, int32(i))
	}
	slices.SortFunc(levels, func(a, b level) int { return b.prefix - a.prefix })
	s.index, s.indexed = newWordIndex(t.spec), true
	for _, lv := range levels {
		masks := slices.Clone(t.masks)
		if t.lpm >= 0 {
			masks[t.lpm] = lv.mask
		}
		vals := make([][]packet.Value, len(lv.entries))
		for k, i := range lv.entries {
			vals[k] = norm[int(i)*nk : int(i+1)*nk]
		}
		s.index.addLevel(es, masks, lv.entries, vals)
	}
	if t.mode == modeLPM && len(levels) > 1 {
		// Longest prefix first: the lpm order as a priority order.
		order := make([]int32, len(es))
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortStableFunc(order, func(a, b int32) int { return es[b].Keys[t.lpm].PrefixLen - es[a].Keys[t.lpm].PrefixLen })
		ms := make([]matcher, len(es)*nk)
		for i := range es {
			for j := range nk {
				ms[i*nk+j] = t.matcher(j, &es[i].Keys[j])
			}
		}
		if t.intervals(s, order, func(i int32, j int) *matcher { return &ms[int(i)*nk+j] }) {
			s.index, s.indexed = wordIndex{}, false
		}
	}
	if t.spec.Packable() {
		keys, entries := make([]uint64, len(es)), make([]int32, len(es))
		for i := range es {
			keys[i], entries[i] = t.spec.PackKeys(norm[i*nk:(i+1)*nk]), int32(i)
		}
		s.Packed = packIndex(es, keys, entries, 1<<t.keyWidth()-1)
	}
	s.setProbe()
	return s
}

// setProbe exports the index's level to generated code if it is the only
// one and its keys take at most MaxKeyWords words.
func (s *snapshot) setProbe() {
	if x := &s.index; s.indexed && len(x.levels) == 1 && x.stride == packet.MaxKeyWords {
		s.Words = x.levels[0]
	}
}

// maskGroups indexes a priority table's entries by their masks (s.index):
// one level per distinct tuple of masks (an lpm key's prefix, a ternary
// key's mask), each the best entry per masked key tuple, the levels in
// priority order of their best entries. A lookup probes the levels until
// none can beat what it found: a few probes instead of a scan of every
// entry. It declines a table with range keys, or with more than one mask
// tuple per four entries, which the scan serves as well. A table whose
// entries share one tuple of masks and whose keys fit a word gets the
// packed index too (s.Packed).
func (t *Table) maskGroups(s *snapshot) {
	nk := len(t.masks)
	es := s.entries
	type group struct {
		masks   []packet.Value
		entries []int32
		vals    [][]packet.Value
		seen    map[string]bool
	}
	var groups []*group
	byMasks := map[string]*group{}
	for _, i := range s.order {
		ms := s.match[int(i)*nk : int(i+1)*nk]
		masks, vals := make([]packet.Value, nk), make([]packet.Value, nk)
		for j := range ms {
			if !ms[j].lo.IsZero() || ms[j].hi != t.masks[j] {
				return // a range
			}
			masks[j], vals[j] = ms[j].mask, ms[j].val
		}
		mk := fmt.Sprint(masks)
		g := byMasks[mk]
		if g == nil {
			if len(groups) > 0 && 4*(len(groups)+1) > len(es) {
				return // a probe costs about four matcher tests
			}
			g = &group{masks: masks, seen: map[string]bool{}}
			byMasks[mk] = g
			groups = append(groups, g)
		}
		if vk := fmt.Sprint(vals); !g.seen[vk] { // else shadowed
			g.seen[vk] = true
			g.entries = append(g.entries, i)
			g.vals = append(g.vals, vals)
		}
	}
	x := newWordIndex(t.spec)
	if len(groups) > 1 {
		x.rank = make([]int32, len(es))
		for r, i := range s.order {
			x.rank[i] = int32(r)
		}
	}
	for _, g := range groups {
		x.addLevel(es, g.masks, g.entries, g.vals)
	}
	s.index, s.indexed = x, len(groups) > 0
	if g := groups; len(g) == 1 && t.keyWidth() <= 64 {
		keys := make([]uint64, len(g[0].entries))
		for k, vals := range g[0].vals {
			keys[k] = t.spec.PackKeys(vals)
		}
		s.Packed = packIndex(es, keys, g[0].entries, t.spec.PackKeys(g[0].masks))
	}
}

// keyWidth is the width of all keys together.
func (t *Table) keyWidth() int { return t.spec.KeyBits() }

// LookupWordAction is LookupWord for generated code: the entry's action
// and parameters, read from the probed slot where the table has a packed
// index (one dependent load less before the parameters are in hand); on a
// miss, hit is false and the rest means nothing.
func (t *Table) LookupWordAction(k uint64) (action int, params []packet.Value, hit bool) {
	s := t.snap.Load()
	if len(s.Packed.Slots) > 0 {
		if sl := s.wordSlot(k); sl != nil {
			return int(sl.Action), sl.Params, true
		}
		return 0, nil, false
	}
	e, hit := t.LookupWord(k)
	if !hit {
		return 0, nil, false
	}
	return e.Action, e.Params, true
}

// wordSlot probes the packed index, which the snapshot has, for k: the
// slot, nil on a miss.
func (s *snapshot) wordSlot(k uint64) *PackedSlot {
	k &= s.Packed.Mask
	m := uint64(len(s.Packed.Slots) - 1)
	for j := PackedHash(k) >> s.Packed.Shift; ; j = (j + 1) & m {
		sl := &s.Packed.Slots[j]
		if sl.Entry == 0 {
			return nil
		}
		if sl.Key == k {
			return sl
		}
	}
}

// packIndex indexes entries (indices into es) by their packed keys, cut
// by mask.
func packIndex(es []packet.Entry, keys []uint64, entries []int32, mask uint64) PackedIndex {
	n, shift := 4, uint8(62)
	for n < 2*len(entries) {
		n, shift = n*2, shift-1
	}
	slots := make([]PackedSlot, n)
	for k, i := range entries {
		j := PackedHash(keys[k]) >> shift
		for slots[j].Entry != 0 {
			j = (j + 1) & uint64(n-1)
		}
		slots[j] = PackedSlot{keys[k], i + 1, int32(es[i].Action), es[i].Params}
	}
	return PackedIndex{slots, mask, shift}
}

// LookupWord is Lookup with the keys packed into one word by PackKeys, for
// a table whose spec says KeyWord. Exact tables and priority tables whose
// entries share their masks probe one hash slot; others unpack the word.
func (t *Table) LookupWord(k uint64) (e *packet.Entry, hit bool) {
	s := t.snap.Load()
	if len(s.Packed.Slots) > 0 {
		if sl := s.wordSlot(k); sl != nil {
			return &s.entries[sl.Entry-1], true
		}
		return t.def, false
	}
	if nk := len(t.shift); nk > 0 && nk <= packet.MaxKeyWords && (len(s.Scan.Rows) > 0 || s.indexed || s.Intervals != nil) {
		var ks [packet.MaxKeyWords]uint64
		for j := range nk {
			ks[j] = k >> t.shift[j] & t.masks[j].Lo
		}
		switch { // keys each a word
		case s.Intervals != nil:
			return s.found(t, s.Intervals.lookup(ks))
		case s.indexed:
			i, _ := s.index.lookup4(ks[0], ks[1], ks[2], ks[3])
			return s.found(t, i)
		}
		return s.found(t, s.scanWords(ks))
	}
	if len(s.entries) == 0 {
		return t.def, false
	}
	// The keys back as values, in an array no larger than most tables
	// need: Go zeroes all of it.
	if n := len(t.spec.Keys); n <= 8 {
		var keys [8]packet.Value
		return t.lookupUnpacked(s, k, keys[:n])
	}
	var keys [64]packet.Value
	if len(t.spec.Keys) > len(keys) {
		return t.def, false
	}
	return t.lookupUnpacked(s, k, keys[:len(t.spec.Keys)])
}

// lookupUnpacked looks up the keys packed in k (PackKeys) as values,
// unpacking them into keys, one per key of the table.
func (t *Table) lookupUnpacked(s *snapshot, k uint64, keys []packet.Value) (*packet.Entry, bool) {
	for i := len(keys) - 1; i >= 0; i-- {
		w := t.spec.Keys[i].Width
		keys[i] = packet.Value{Lo: k & (1<<w - 1)}
		if w < 64 {
			k >>= w
		} else {
			k = 0
		}
	}
	return t.lookup(s, keys)
}

// scanWords returns the first entry in priority order whose matchers the
// keys pass, one word each, cut to its width (zero past the keys); -1 if
// none.
func (s *snapshot) scanWords(ks [packet.MaxKeyWords]uint64) int32 {
scan:
	for oi := range s.Scan.Rows {
		for j, m := range &s.Scan.Rows[oi].Match {
			if v := ks[j]; v&m.Mask != m.Val || v-m.Lo > m.Span {
				continue scan
			}
		}
		return s.order[oi]
	}
	return -1
}

// found returns entry i, or the miss.
func (s *snapshot) found(t *Table, i int32) (*packet.Entry, bool) {
	if i < 0 {
		return t.def, false
	}
	return &s.entries[i], true
}

// LookupWordsAction is LookupWords for generated code: the entry's action
// and parameters, read beside the probed slot where the table has a word
// index; on a miss, hit is false and the rest means nothing.
func (t *Table) LookupWordsAction(k0, k1, k2, k3 uint64) (action int, params []packet.Value, hit bool) {
	e, a := t.lookupWords(t.snap.Load(), k0, k1, k2, k3)
	switch {
	case a != nil:
		return int(a.Action), a.Params, true
	case e != nil:
		return e.Action, e.Params, true
	}
	return 0, nil, false
}

// LookupWords is Lookup with the keys as words, KeyWords of them (at most
// MaxKeyWords; the rest zero), each cut to its key's width. Exact, lpm and
// uniform-mask tables probe their word index with them as they are; other
// tables take them back as Values.
func (t *Table) LookupWords(k0, k1, k2, k3 uint64) (e *packet.Entry, hit bool) {
	if e, _ := t.lookupWords(t.snap.Load(), k0, k1, k2, k3); e != nil {
		return e, true
	}
	return t.def, false
}

// lookupWords finds the entry of LookupWords in snapshot s, nil if none,
// and its action beside its slot if the word index found it.
func (t *Table) lookupWords(s *snapshot, k0, k1, k2, k3 uint64) (*packet.Entry, *WordSlot) {
	if len(s.entries) == 0 {
		return nil, nil
	}
	if s.indexed && s.index.words <= packet.MaxKeyWords {
		if i, a := s.index.lookup4(k0, k1, k2, k3); i >= 0 {
			return &s.entries[i], a
		}
		return nil, nil
	}
	if len(t.spec.Keys) > packet.MaxKeyWords {
		return nil, nil
	}
	ks := [packet.MaxKeyWords]uint64{k0, k1, k2, k3}
	if s.Intervals != nil {
		if i := s.Intervals.lookup(ks); i >= 0 {
			return &s.entries[i], nil
		}
		return nil, nil
	}
	if len(s.Scan.Rows) > 0 { // narrow keys: a word each
		if i := s.scanWords(ks); i >= 0 {
			return &s.entries[i], nil
		}
		return nil, nil
	}
	var vs [packet.MaxKeyWords]packet.Value
	w := 0
	for j, k := range t.spec.Keys {
		if k.Width > 64 && w < packet.MaxKeyWords {
			vs[j].Hi = ks[w]
			w++
		}
		if w < packet.MaxKeyWords {
			vs[j].Lo = ks[w]
			w++
		}
	}
	if e, hit := t.lookup(s, vs[:len(t.spec.Keys)]); hit {
		return e, nil
	}
	return nil, nil
}

// matcher turns key j's match into the uniform test of modePriority.
func (t *Table) matcher(j int, k *packet.KeyMatch) matcher {
	w := t.masks[j]
	m := matcher{mask: w, lo: packet.Value{}, hi: w}
	switch t.spec.Keys[j].Kind {
	case packet.Exact:
		m.val = k.Value
	case packet.LPM:
		m.mask = packet.PrefixMask(t.spec.Keys[j].Width, k.PrefixLen)
		m.val = k.Value.And(m.mask)
	case packet.Ternary:
		m.mask = k.Mask
		m.val = k.Value.And(k.Mask)
	case packet.Range:
		m.mask = packet.Value{}
		m.lo, m.hi = k.Lo, k.Hi
	}
	return m
}

// Lookup finds the entry matching keys, one value per key (bits above a key's
// width are ignored). On a miss it returns the default action's entry, nil if
// the spec has none, with hit false. The entry belongs to the table: read it,
// do not change it. Lookup does not allocate and takes no lock.
func (t *Table) Lookup(keys []packet.Value) (e *packet.Entry, hit bool) {
	return t.lookup(t.snap.Load(), keys)
}

// lookup is Lookup in snapshot s.
func (t *Table) lookup(s *snapshot, keys []packet.Value) (e *packet.Entry, hit bool) {
	if len(keys) != len(t.masks) {
		return t.def, false
	}
	if s.indexed {
		if i := s.index.lookup(keys); i >= 0 {
			return &s.entries[i], true
		}
		return t.def, false
	}
	if s.Intervals != nil { // narrow keys, at most MaxKeyWords
		var ks [packet.MaxKeyWords]uint64
		for j := range keys {
			ks[j] = keys[j].Lo & t.masks[j].Lo
		}
		return s.found(t, s.Intervals.lookup(ks))
	}
	if t.mode == modePriority {
		nk := len(keys)
		if len(s.Scan.Rows) > 0 {
			var ks [packet.MaxKeyWords]uint64
			for j := range nk {
				ks[j] = keys[j].Lo & t.masks[j].Lo
			}
			return s.found(t, s.scanWords(ks))
		}
	scan:
		for _, i := range s.order {
			ms := s.match[int(i)*nk : int(i+1)*nk]
			for j := range ms {
				m := &ms[j]
				k := keys[j].And(t.masks[j])
				if k.And(m.mask) != m.val || k.Cmp(m.lo) < 0 || k.Cmp(m.hi) > 0 {
					continue scan
				}
			}
			return &s.entries[i], true
		}
		return t.def, false
	}
	return t.def, false // modeExact and modeLPM tables have an index or Intervals
}

// PackedIndex is the index of a table whose keys fit one word together
// (exact tables, and priority tables whose entries share their masks):
// open addressing over the packed keys (PackKeys) cut by Mask, each slot
// with its entry's action and parameters. Generated code probes it inline
// (Probes.Packed): a key k's probe starts at PackedHash(k)>>Shift, the
// product's top bits, and steps by one, modulo the power-of-two length, to
// its slot or an empty one. Slots is empty when the table has no such
// index.
type PackedIndex struct {
	Slots []PackedSlot
	Mask  uint64
	Shift uint8 // 64 - log2(len(Slots)), below 64
}

// PackedSlot is one slot of a PackedIndex.
type PackedSlot struct {
	Key    uint64
	Entry  int32 // entry index + 1; 0 is an empty slot
	Action int32
	Params []packet.Value
}

// Probes are the structures of a table's entries that generated code
// probes inline (the accessor is small enough for Go to inline even into
// a large function, and one load of the snapshot serves every probe).
// Generated code tries them in this order, the first filled one answering:
//   - Packed indexes entries by their keys packed into one word
//     (PackKeys): exact tables whose keys fit 64 bits together, and
//     priority tables whose entries share one mask per key and no range
//     (field_mask and exact keys, as the EJFAT filters).
//   - Words is the word index's level if it has only one and keys of at
//     most MaxKeyWords words (exact tables, lpm tables of one prefix
//     length, priority tables whose entries share one tuple of masks).
//   - Scan holds the entries of a priority table of at most MaxKeyWords
//     narrow keys without an index, as rows of word matchers.
//   - Intervals indexes a priority or lpm table whose keys are exact but
//     one lpm or range key (intervals.go) instead of the word index of its
//     many levels; nil if none.
type Probes struct {
	Packed    PackedIndex
	Words     WordLevel
	Scan      WordScan
	Intervals *IntervalIndex
	// Len is the number of entries: a table without any misses, and
	// generated code need not call its lookup.
	Len int
}

// Probes returns the probes of the table's entries now: what one lookup
// reads (a later update makes new ones).
func (t *Table) Probes() *Probes { return &t.snap.Load().Probes }

// PackedHash is the Fibonacci hash of a packed key, whose top bits pick
// the slot its probe starts at (one product and one shift: a value the
// generated code needs once, not twice).
func PackedHash(k uint64) uint64 { return k * 0x9e3779b97f4a7c15 }
