package xdprun

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"sort"
	"sync"

	"github.com/cilium/ebpf"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

// Live changes a loaded program's tables entry by entry while frames run
// through it (SetTables rewrites whole maps): a Put or Delete is one map
// update, a SetGroup writes aside and switches with one, and a lookup of
// any other key meets the same entry before, during and after. A lookup
// of the key being written may meet it half written (an array map's
// value is copied in place); a caller that needs atomic changes writes
// entries under keys no packet looks up yet and then switches to them
// with one Put or SetGroup (ejfat/cp's XDP data plane does). That a
// lookup meets a slot's used flag after its key, and a group's two bounds
// together (one aligned 8-byte word), holds on x86-64's store order and
// copy; other architectures are not tested. Exact tables may hold
// SetTables' entries (Live reads their slots); a priority table must be
// empty until Live writes it.
type Live struct {
	r      *Runner
	mu     sync.Mutex
	slots  map[string]*liveSlots
	groups map[string]*liveGroups
}

// Live returns r's live editor.
func (r *Runner) Live() *Live {
	return &Live{r: r, slots: map[string]*liveSlots{}, groups: map[string]*liveGroups{}}
}

// tombstone is the key of a deleted open-addressing slot: above every
// packed key (their width is under 64 bits, checked), so no lookup stops
// at it and the probe chains through it stay whole.
const tombstone = ^uint64(0)

// liveSlots mirrors an open-addressing table's slots.
type liveSlots struct {
	m     *ebpf.Map
	keys  []uint64 // per slot; tombstone for a free used slot
	used  []bool
	where map[uint64]int // packed key → slot
}

// table finds a used table of the program by name.
func (l *Live) table(name string) (TableMeta, error) {
	for _, tm := range l.r.Meta.Tables {
		if tm.Spec.Name == name {
			if !tm.Used {
				return tm, fmt.Errorf("no lookup reads table %s", name)
			}
			return tm, nil
		}
	}
	return TableMeta{}, fmt.Errorf("the program has no table %s", name)
}

// Put adds entry e to an exact or lpm table, or replaces the entry with
// its keys.
func (l *Live) Put(table string, e packet.Entry) error {
	return l.edit(table, e, true)
}

// Delete removes the entry with e's keys from an exact or lpm table;
// deleting an entry not there is no error.
func (l *Live) Delete(table string, e packet.Entry) error {
	return l.edit(table, e, false)
}

func (l *Live) edit(table string, e packet.Entry, put bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	tm, err := l.table(table)
	if err != nil {
		return err
	}
	spec := tm.Spec
	if len(e.Keys) != len(spec.Keys) {
		return fmt.Errorf("table %s: %d keys, want %d", table, len(e.Keys), len(spec.Keys))
	}
	lay := LayoutOf(spec)
	m := l.r.coll.Maps[tm.Map]
	switch tm.Mode {
	case ModeSlots:
		s, err := l.slotsOf(tm, m)
		if err != nil {
			return err
		}
		return s.edit(&lay, spec, e, put)
	case ModeHash, ModeLPM:
		k := lay.hashKey(&e, spec)
		if tm.Mode == ModeLPM {
			k = lay.lpmKey(&e, spec)
		}
		if put {
			return m.Put(k, lay.Value(e.Action, e.Params, spec))
		}
		if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
		return nil
	}
	return fmt.Errorf("table %s takes priorities: change it by SetGroup", table)
}

// slotsOf reads an open-addressing table's slots the first time.
func (l *Live) slotsOf(tm TableMeta, m *ebpf.Map) (*liveSlots, error) {
	if s := l.slots[tm.Spec.Name]; s != nil {
		return s, nil
	}
	if tm.Spec.KeyBits() >= 64 {
		return nil, fmt.Errorf("table %s: its keys fill 64 bits, no room for a deleted slot's mark", tm.Spec.Name)
	}
	n := int(m.MaxEntries())
	s := &liveSlots{m: m, keys: make([]uint64, n), used: make([]bool, n), where: map[uint64]int{}}
	v := make([]byte, m.ValueSize())
	for i := range n {
		if err := m.Lookup(uint32(i), v); err != nil {
			return nil, err
		}
		k := binary.NativeEndian.Uint64(v)
		s.keys[i], s.used[i] = k, binary.NativeEndian.Uint32(v[12:]) != 0
		if s.used[i] && k != tombstone {
			s.where[k] = i
		}
	}
	l.slots[tm.Spec.Name] = s
	return s, nil
}

// edit writes one slot: the entry's own slot if it has one, else the
// first free slot (empty or deleted) of its probe sequence, before which
// every slot is used, so that a lookup of it gets there.
func (s *liveSlots) edit(lay *Layout, spec *packet.TableSpec, e packet.Entry, put bool) error {
	k := binary.NativeEndian.Uint64(lay.hashKey(&e, spec))
	j, ok := s.where[k]
	switch {
	case !put && !ok:
		return nil
	case !put:
		v := make([]byte, 16+8*lay.ParamWords)
		binary.NativeEndian.PutUint64(v, tombstone)
		binary.NativeEndian.PutUint32(v[12:], 1)
		if err := s.m.Put(uint32(j), v); err != nil {
			return err
		}
		s.keys[j] = tombstone
		delete(s.where, k)
		return nil
	case !ok:
		n := uint64(len(s.keys))
		h := slotHash(k)
		d := 0
		for ; d < MaxProbe; d++ {
			if i := int((h + uint64(d)) & (n - 1)); !s.used[i] || s.keys[i] == tombstone {
				break
			}
		}
		if d == MaxProbe {
			return fmt.Errorf("table %s: more than %d entries collide in the table's slots", spec.Name, MaxProbe)
		}
		j = int((h + uint64(d)) & (n - 1))
	}
	v := lay.Value(e.Action, e.Params, spec)
	binary.NativeEndian.PutUint32(v[4:], 1) // used
	if err := s.m.Put(uint32(j), append(binary.NativeEndian.AppendUint64(nil, k), v...)); err != nil {
		return err
	}
	s.keys[j], s.used[j], s.where[k] = k, true, j
	return nil
}

// liveGroups is a priority table found by its interval index (fillIntervals)
// whose groups Live writes: each group's segments and entries in regions
// of their maps that no group in force uses, then the group's slot (its
// segments' bounds in one word) in one update.
type liveGroups struct {
	tm            TableMeta
	ents, segs, g *ebpf.Map
	mask          uint64
	shift         uint
	slot          map[[4]uint64]int // group keys → slot
	held          map[[4]uint64][2]region
	retired       []region // what the last SetGroup's group held before
}

// region is a run of map indices [lo, hi) of the entries (seg false) or
// segments map.
type region struct {
	lo, hi int
	seg    bool
}

// SetGroup makes es the entries of table (a priority table of exact keys
// and one lpm or range key, found by its interval index) whose exact keys
// are those of es (exact, in the table's key order, the other key's value
// ignored), replacing the group's entries before: a lookup meets either
// all of the old ones or all of the new ones. Regions a group left are
// written again only after a later SetGroup, so that a lookup still
// reading the old group finds it as it was.
func (l *Live) SetGroup(table string, exact []packet.Value, es []packet.Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	tm, err := l.table(table)
	if err != nil {
		return err
	}
	spec := tm.Spec
	at := spec.IntervalKey()
	if tm.Mode != ModeScan || at < 0 {
		return fmt.Errorf("table %s has no interval index", table)
	}
	if len(exact) != len(spec.Keys) {
		return fmt.Errorf("table %s: %d keys, want %d", table, len(exact), len(spec.Keys))
	}
	gs, err := l.groupsOf(tm)
	if err != nil {
		return err
	}
	var keys [4]uint64
	for j := range spec.Keys {
		if j != at {
			keys[j] = exact[j].Lo & packet.Mask(spec.Keys[j].Width).Lo
		}
	}
	for i := range es {
		for j := range spec.Keys {
			if j != at && es[i].Keys[j].Value.Lo != keys[j] {
				return fmt.Errorf("table %s: entry %d is not of the group", table, i)
			}
		}
	}
	starts, ents, err := segments(spec, at, keys, es)
	if err != nil {
		return err
	}
	return gs.set(keys, es, starts, ents)
}

// Own makes the groups of table (a priority table found by its interval
// index) this Live's to write, as its first SetGroup would. It takes over
// the groups an earlier Live wrote (a pinned program's driver before a
// restart or crash; see groupsOf) and refuses a table holding entries or
// groups another writer wrote (SetTables'). Only one Live may write a
// program's maps at a time: pinned, LockPinned keeps a second process out.
func (l *Live) Own(table string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	tm, err := l.table(table)
	if err != nil {
		return err
	}
	if tm.Mode != ModeScan || tm.Spec.IntervalKey() < 0 {
		return fmt.Errorf("table %s has no interval index", table)
	}
	_, err = l.groupsOf(tm)
	return err
}

// groupsOf turns a table's interval index on, with no group, the first
// time: the table must be empty, of SetTables' entries and of another
// writer's groups. If the index is on as a Live turns it on, the groups
// in the maps are an earlier Live's and are taken over (readGroups).
func (l *Live) groupsOf(tm TableMeta) (*liveGroups, error) {
	gs, on, err := l.readGroups(tm)
	if on || err != nil {
		return gs, err
	}
	empty := make([]byte, gs.g.ValueSize())
	g := make([]byte, gs.g.ValueSize())
	for i := range int(gs.mask) + 1 {
		if err := gs.g.Lookup(uint32(i), g); err != nil {
			return nil, err
		}
		if lo, hi := groupBounds(g); lo < hi {
			return nil, fmt.Errorf("table %s holds groups another writer wrote", tm.Spec.Name)
		}
	}
	for i := range int(gs.mask) + 1 {
		if err := gs.g.Put(uint32(i), empty); err != nil {
			return nil, err
		}
	}
	if err := l.r.coll.Maps[tm.Map+"_ivl"].Put(uint32(0), gs.indexOn()); err != nil {
		return nil, err
	}
	l.groups[tm.Spec.Name] = gs
	return gs, nil
}

// readGroups is groupsOf without writing: the groups this Live holds, or
// an earlier Live's, taken over (takeOver), if the table's interval index
// is on as a Live turns it on (its shift and mask; on true); else, with
// on false, no group yet. The table must have no SetTables entries.
func (l *Live) readGroups(tm TableMeta) (gs *liveGroups, on bool, err error) {
	if gs := l.groups[tm.Spec.Name]; gs != nil {
		return gs, true, nil
	}
	c := l.r.coll
	gs = &liveGroups{tm: tm, ents: c.Maps[tm.Map], segs: c.Maps[tm.Map+"_s"], g: c.Maps[tm.Map+"_g"],
		slot: map[[4]uint64]int{}, held: map[[4]uint64][2]region{}}
	ivl := c.Maps[tm.Map+"_ivl"]
	if gs.ents == nil || gs.segs == nil || gs.g == nil || ivl == nil {
		return nil, false, fmt.Errorf("the program has no interval maps for table %s", tm.Spec.Name)
	}
	var n uint32
	if err := l.r.lens.Lookup(uint32(tm.Index), &n); err != nil {
		return nil, false, err
	}
	if n != 0 {
		return nil, false, fmt.Errorf("table %s has %d entries Live did not write", tm.Spec.Name, n)
	}
	slots := 1 << (bits.Len32(gs.g.MaxEntries()) - 1) // a power of two
	gs.mask, gs.shift = uint64(slots-1), uint(64-bits.TrailingZeros(uint(slots)))
	cur := make([]byte, ivl.ValueSize())
	if err := ivl.Lookup(uint32(0), cur); err != nil || !bytes.Equal(cur, gs.indexOn()) {
		return gs, false, err
	}
	if err := gs.takeOver(slots); err != nil {
		return nil, false, err
	}
	l.groups[tm.Spec.Name] = gs
	return gs, true, nil
}

// indexOn is the interval index's switch as a Live sets it: on, with the
// group slots' shift and mask.
func (gs *liveGroups) indexOn() []byte {
	v := binary.NativeEndian.AppendUint32(nil, 1)
	v = binary.NativeEndian.AppendUint32(v, uint32(gs.shift))
	v = binary.NativeEndian.AppendUint32(v, uint32(gs.mask))
	return binary.NativeEndian.AppendUint32(v, 0)
}

// groupBounds are a group slot's segment bounds (lo ≥ hi: no group).
func groupBounds(g []byte) (lo, hi int) {
	n := len(g)
	return int(binary.NativeEndian.Uint32(g[n-8:])), int(binary.NativeEndian.Uint32(g[n-4:]))
}

// takeOver rebuilds an earlier Live's groups from the maps: each used
// slot's keys and segments, and as its entries the run from the lowest
// to the highest one its segments name (an entry no segment names is
// never read, so it may be written over). Every crash point of that Live
// leaves the maps so: a SetGroup writes entries and segments where no
// slot points and then the slot in one update, so the regions of a group
// half written are free here. What it retired is free too: the lookups
// that may still have read it ended long before this Live started.
func (gs *liveGroups) takeOver(slots int) error {
	g := make([]byte, gs.g.ValueSize())
	seg := make([]byte, gs.segs.ValueSize())
	for i := range slots {
		if err := gs.g.Lookup(uint32(i), g); err != nil {
			return err
		}
		lo, hi := groupBounds(g)
		if lo >= hi {
			continue
		}
		if hi > int(gs.segs.MaxEntries()) {
			return fmt.Errorf("table %s: group slot %d names segments %d-%d of %d", gs.tm.Spec.Name, i, lo, hi, gs.segs.MaxEntries())
		}
		var keys [4]uint64
		for j := range (len(g) - 8) / 8 {
			keys[j] = binary.NativeEndian.Uint64(g[8*j:])
		}
		er := region{lo: -1}
		for s := lo; s < hi; s++ {
			if err := gs.segs.Lookup(uint32(s), seg); err != nil {
				return err
			}
			if e := int32(binary.NativeEndian.Uint32(seg[8:])); e >= 0 {
				if er.lo < 0 || int(e) < er.lo {
					er.lo = int(e)
				}
				er.hi = max(er.hi, int(e)+1)
			}
		}
		er.lo = max(er.lo, 0)
		gs.slot[keys] = i
		gs.held[keys] = [2]region{er, {lo, hi, true}}
	}
	return nil
}

// Group reads back the entries of table's group of the given exact keys
// (as SetGroup takes them) that a lookup may meet, in the order written;
// the maps keep no priorities (their order is in the segments), so the
// entries have priority 0. No group: none.
func (l *Live) Group(table string, exact []packet.Value) ([]packet.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tm, err := l.table(table)
	if err != nil {
		return nil, err
	}
	at := tm.Spec.IntervalKey()
	if tm.Mode != ModeScan || at < 0 || len(exact) != len(tm.Spec.Keys) {
		return nil, fmt.Errorf("table %s has no interval index or other keys", table)
	}
	gs, on, err := l.readGroups(tm)
	if !on || err != nil {
		return nil, err
	}
	var keys [4]uint64
	for j := range tm.Spec.Keys {
		if j != at {
			keys[j] = exact[j].Lo & packet.Mask(tm.Spec.Keys[j].Width).Lo
		}
	}
	h, ok := gs.held[keys]
	if !ok {
		return nil, nil
	}
	lay := LayoutOf(tm.Spec)
	var out []packet.Entry
	v := make([]byte, gs.ents.ValueSize())
	seg := make([]byte, gs.segs.ValueSize())
	named := map[int]bool{}
	for s := h[1].lo; s < h[1].hi; s++ {
		if err := gs.segs.Lookup(uint32(s), seg); err != nil {
			return nil, err
		}
		if e := int32(binary.NativeEndian.Uint32(seg[8:])); e >= 0 {
			named[int(e)] = true
		}
	}
	for _, i := range slices.Sorted(maps.Keys(named)) {
		if err := gs.ents.Lookup(uint32(i), v); err != nil {
			return nil, err
		}
		out = append(out, lay.readScanEntry(v, tm.Spec))
	}
	return out, nil
}

// Entries reads back the entries of an exact table (open addressing or
// hash), by key.
func (l *Live) Entries(table string) ([]packet.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tm, err := l.table(table)
	if err != nil {
		return nil, err
	}
	spec, lay, m := tm.Spec, LayoutOf(tm.Spec), l.r.coll.Maps[tm.Map]
	var out []packet.Entry
	switch tm.Mode {
	case ModeSlots:
		s, err := l.slotsOf(tm, m)
		if err != nil {
			return nil, err
		}
		v := make([]byte, m.ValueSize())
		for _, j := range s.where {
			if err := m.Lookup(uint32(j), v); err != nil {
				return nil, err
			}
			e := lay.readValue(v[8:], spec)
			e.Keys = unpackKeys(spec, s.keys[j])
			out = append(out, e)
		}
	case ModeHash:
		k, v := make([]byte, m.KeySize()), make([]byte, m.ValueSize())
		it := m.Iterate()
		for it.Next(&k, &v) {
			e := lay.readValue(v, spec)
			rest := k
			for _, kw := range lay.Words {
				e.Keys = append(e.Keys, packet.KeyMatch{Value: readValue(rest[:8*kw])})
				rest = rest[8*kw:]
			}
			out = append(out, e)
		}
		if err := it.Err(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("table %s is not an exact table Live reads back", table)
	}
	slices.SortFunc(out, func(a, b packet.Entry) int { return cmp.Compare(fmt.Sprint(a.Keys), fmt.Sprint(b.Keys)) })
	return out, nil
}

// segments cuts the values of key at into segments by the entry that wins
// there (table.Table's lookup decides), by start; ents are indices into
// es, -1 for none.
func segments(spec *packet.TableSpec, at int, keys [4]uint64, es []packet.Entry) ([]uint64, []int32, error) {
	t := table.New(spec)
	tagged := slices.Clone(es)
	points := []uint64{0}
	for i := range tagged {
		tagged[i].Line = i + 1
		k := tagged[i].Keys[at]
		lo, hi := k.Lo.Lo, k.Hi.Lo
		if spec.Keys[at].Kind == packet.LPM {
			m := packet.PrefixMask(spec.Keys[at].Width, k.PrefixLen).Lo
			lo = k.Value.Lo & m
			hi = lo | ^m&packet.Mask(spec.Keys[at].Width).Lo
		}
		points = append(points, lo)
		if hi != ^uint64(0) {
			points = append(points, hi+1)
		}
	}
	if err := t.Replace(tagged); err != nil {
		return nil, nil, err
	}
	slices.Sort(points)
	var starts []uint64
	var ents []int32
	vs := make([]packet.Value, len(spec.Keys))
	for j := range vs {
		vs[j] = packet.V(keys[j])
	}
	for _, p := range slices.Compact(points) {
		vs[at] = packet.V(p)
		ent := int32(-1)
		if e, ok := t.Lookup(vs); ok {
			ent = int32(e.Line - 1)
		}
		if len(ents) == 0 || ents[len(ents)-1] != ent {
			starts, ents = append(starts, p), append(ents, ent)
		}
	}
	return starts, ents, nil
}

// set writes a group's entries and segments into free regions, then its
// slot.
func (gs *liveGroups) set(keys [4]uint64, es []packet.Entry, starts []uint64, ents []int32) error {
	spec := gs.tm.Spec
	lay := LayoutOf(spec)
	er, err := gs.alloc(len(es), false)
	if err != nil {
		return err
	}
	sr, err := gs.alloc(len(starts), true)
	if err != nil {
		return err
	}
	if sr.hi-sr.lo > 1<<12 {
		return fmt.Errorf("table %s: %d segments in one group, a lookup searches %d", spec.Name, len(starts), 1<<12)
	}
	for i := range es {
		if err := gs.ents.Put(uint32(er.lo+i), lay.scanEntry(&es[i], spec)); err != nil {
			return err
		}
	}
	for i, start := range starts {
		ent := ents[i]
		if ent >= 0 {
			ent += int32(er.lo)
		}
		v := binary.NativeEndian.AppendUint64(nil, start)
		v = binary.NativeEndian.AppendUint32(v, uint32(ent))
		if err := gs.segs.Put(uint32(sr.lo+i), binary.NativeEndian.AppendUint32(v, 0)); err != nil {
			return err
		}
	}
	j, ok := gs.slot[keys]
	if !ok {
		h := table.WordsHash(keys[0], keys[1], keys[2], keys[3])
		taken := map[int]bool{}
		for _, s := range gs.slot {
			taken[s] = true
		}
		d := 0
		for ; d < MaxProbe && taken[int((h>>gs.shift+uint64(d))&gs.mask)]; d++ {
		}
		if d == MaxProbe {
			return fmt.Errorf("table %s: more than %d groups collide", spec.Name, MaxProbe)
		}
		j = int((h>>gs.shift + uint64(d)) & gs.mask)
	}
	var v []byte
	for _, w := range keys[:lay.KeyWords] {
		v = binary.NativeEndian.AppendUint64(v, w)
	}
	v = binary.NativeEndian.AppendUint32(binary.NativeEndian.AppendUint32(v, uint32(sr.lo)), uint32(sr.hi))
	if err := gs.g.Put(uint32(j), v); err != nil {
		return err
	}
	gs.slot[keys] = j
	// What the group held before is free after the next SetGroup.
	gs.retired = nil
	if old, ok := gs.held[keys]; ok {
		gs.retired = old[:]
	}
	gs.held[keys] = [2]region{er, sr}
	return nil
}

// alloc finds the lowest run of n free indices (n at least 1: a group
// has a segment) of the entries or segments map.
func (gs *liveGroups) alloc(n int, seg bool) (region, error) {
	size, what := int(gs.ents.MaxEntries()), "entries"
	if seg {
		size, what = int(gs.segs.MaxEntries()), "segments"
	}
	n = max(n, 1)
	var busy []region
	for _, h := range gs.held {
		busy = append(busy, h[:]...)
	}
	busy = append(busy, gs.retired...)
	busy = slices.DeleteFunc(busy, func(r region) bool { return r.seg != seg })
	sort.Slice(busy, func(a, b int) bool { return busy[a].lo < busy[b].lo })
	lo := 0
	for _, r := range busy {
		if r.lo-lo >= n {
			break
		}
		lo = max(lo, r.hi)
	}
	if lo+n > size {
		return region{}, fmt.Errorf("table %s: no room for %d more %s", gs.tm.Spec.Name, n, what)
	}
	return region{lo, lo + n, seg}, nil
}
