package cp

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/packet"
)

// XDPTables is the XDP program's tables, for Programming.Tables.
func XDPTables(r *xdprun.Runner) func(string) (*packet.TableSpec, bool) {
	return func(name string) (*packet.TableSpec, bool) {
		for _, t := range r.Meta.Tables {
			if t.Spec.Name == name {
				return t.Spec, true
			}
		}
		return nil, false
	}
}

// XDPMaps is the XDP data plane: an LB model's XDP program in the kernel,
// its maps changed entry by entry (xdprun.Live) so that a packet meets the
// state applied before or the one applied now, never a mix. It writes no
// entry a packet may look up: a calendar or member whose content changes
// goes in whole under a data-plane id no entry in force names (the epoch
// and member numbers the CP gives are renumbered here), then the
// instance's epoch entries, naming the new ids, replace the old ones in
// one update (xdprun.Live.SetGroup), and only then are the entries nothing
// names any more deleted. Other entries (the source filters) are added
// before and deleted after that switch, one by one.
//
// The first Apply to an instance takes over what its maps hold (a CP
// before this one, killed at any point, wrote them): the calendars and
// members under every data-plane id found there are kept where they say
// what the new state says (so a restarted CP with the same epochs writes
// no calendar again) and deleted after the switch where not, and no
// fresh id is one of theirs. A killed CP leaves no other state behind:
// every write is one map update and each region or id it was writing is
// one no entry in force names, found here, and so adopted or deleted
// (but a source filter it was deleting stays: see takeOver).
type XDPMaps struct {
	Live *xdprun.Live

	mu  sync.Mutex
	lbs map[int]*xdpLB
}

// xdpLB is what one instance's maps hold.
type xdpLB struct {
	members    map[uint16]xdpHeld // by the CP's member id
	calendars  map[uint32]xdpHeld // by the CP's epoch id
	epochs     []packet.Entry     // as written, naming data-plane ids
	other      map[string]packet.TableEntry
	nextEpoch  uint32
	nextMember uint16
	// What the maps held at the first Apply, by data-plane id, until an
	// Apply succeeds: adopted where the state says the same, else deleted.
	foundMembers, foundCals []xdpHeld
}

// xdpHeld is a calendar or member under its data-plane id: its entries
// as written, and what they say (without that id) to tell a change.
type xdpHeld struct {
	id      uint64
	content string
	entries []packet.TableEntry
}

// Apply implements DataPlane; it moves the maps to state whatever they
// held, so an Apply that failed is made good by the next.
func (x *XDPMaps) Apply(instance int, state []packet.TableEntry, _ calendar.Diff) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lbs == nil {
		x.lbs = map[int]*xdpLB{}
	}
	lb := x.lbs[instance]
	if lb == nil {
		var err error
		if lb, err = x.takeOver(instance); err != nil {
			return fmt.Errorf("read what the maps hold: %w", err)
		}
		x.lbs[instance] = lb
	}
	var epochs []packet.Entry
	cals := map[uint32][]packet.TableEntry{}
	members := map[uint16][]packet.TableEntry{}
	other := map[string]packet.TableEntry{}
	for _, te := range state {
		switch te.Table {
		case calendar.EpochTable:
			epochs = append(epochs, te.Entry)
		case calendar.CalendarTable:
			e := uint32(te.Entry.Keys[1].Value.Lo)
			cals[e] = append(cals[e], te)
		case calendar.MemberTable:
			m := uint16(te.Entry.Keys[2].Value.Lo)
			members[m] = append(members[m], te)
		default:
			other[entryKey(te)] = te
		}
	}
	// New and changed entries of other tables, then new members and
	// calendars under fresh ids.
	for _, k := range slices.Sorted(maps.Keys(other)) {
		if o, ok := lb.other[k]; !ok || !sameAction(o, other[k]) {
			if err := x.Live.Put(other[k].Table, other[k].Entry); err != nil {
				return err
			}
		}
	}
	newMembers, err := place(x.Live, lb.members, lb.foundMembers, members, 2, lb.freshMember, nil)
	if err != nil {
		return err
	}
	newCals, err := place(x.Live, lb.calendars, lb.foundCals, cals, 1, lb.freshEpoch, newMembers)
	if err != nil {
		return err
	}
	// The switch: the epoch entries naming the new calendars (0 for one
	// without entries).
	written := make([]packet.Entry, len(epochs))
	for i, e := range epochs {
		e.Params = slices.Clone(e.Params)
		e.Params[0] = packet.V(newCals[uint32(e.Params[0].Lo)].id)
		written[i] = e
	}
	if !slices.EqualFunc(written, lb.epochs, func(a, b packet.Entry) bool { return sameEntry(&a, &b) }) {
		if err := x.Live.SetGroup(calendar.EpochTable, []packet.Value{packet.V(uint64(instance)), {}}, written); err != nil {
			return err
		}
	}
	oldMembers := append(slices.Collect(maps.Values(lb.members)), lb.foundMembers...)
	oldCals := append(slices.Collect(maps.Values(lb.calendars)), lb.foundCals...)
	oldOther := lb.other
	lb.members, lb.calendars, lb.epochs, lb.other = newMembers, newCals, written, other
	lb.foundMembers, lb.foundCals = nil, nil
	// What nothing names any more.
	for _, held := range [][]xdpHeld{gone(oldCals, newCals), gone(oldMembers, newMembers)} {
		for _, h := range held {
			for _, te := range h.entries {
				if err := x.Live.Delete(te.Table, te.Entry); err != nil {
					return err
				}
			}
		}
	}
	for k, te := range oldOther {
		if _, ok := other[k]; !ok {
			if err := x.Live.Delete(te.Table, te.Entry); err != nil {
				return err
			}
		}
	}
	return nil
}

// place gives each of groups (the entries of one CP id, keyed by it) a
// data-plane id: the one it holds if what it says is unchanged, else one
// of found saying the same, else a fresh one, under which its entries (key
// idKey the id; a calendar's member parameter renamed by members) are
// written.
func place[K cmp.Ordered](live *xdprun.Live, held map[K]xdpHeld, found []xdpHeld, groups map[K][]packet.TableEntry, idKey int, fresh func() uint64, members map[uint16]xdpHeld) (map[K]xdpHeld, error) {
	inUse := map[uint64]bool{}
	for _, h := range held {
		inUse[h.id] = true
	}
	adopt := map[string]xdpHeld{}
	for _, h := range found {
		inUse[h.id] = true
		if _, ok := adopt[h.content]; !ok {
			adopt[h.content] = h
		}
	}
	out := map[K]xdpHeld{}
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		es := groups[k]
		renamed := make([]packet.TableEntry, len(es))
		for i, te := range es {
			te.Entry.Keys = slices.Clone(te.Entry.Keys)
			if members != nil {
				m, ok := members[uint16(te.Entry.Params[0].Lo)]
				if !ok {
					return nil, fmt.Errorf("%s names member %d, which has no entry", te.Table, te.Entry.Params[0].Lo)
				}
				te.Entry.Params = []packet.Value{packet.V(m.id)}
			}
			renamed[i] = te
		}
		c := content(renamed, idKey)
		if h, ok := held[k]; ok && h.content == c {
			out[k] = h
			continue
		}
		if h, ok := adopt[c]; ok {
			delete(adopt, c)
			out[k] = h
			continue
		}
		h := xdpHeld{id: fresh(), content: c, entries: renamed}
		for inUse[h.id] {
			h.id = fresh()
		}
		inUse[h.id] = true
		for i := range h.entries {
			h.entries[i].Entry.Keys[idKey].Value = packet.V(h.id)
			if err := live.Put(h.entries[i].Table, h.entries[i].Entry); err != nil {
				return nil, err
			}
		}
		out[k] = h
	}
	return out, nil
}

// content is what a calendar's or member's entries say without their id
// (key idKey), whatever their order.
func content(es []packet.TableEntry, idKey int) string {
	lines := make([]string, len(es))
	for i, te := range es {
		te.Entry.Keys = slices.Clone(te.Entry.Keys)
		te.Entry.Keys[idKey] = packet.KeyMatch{}
		lines[i] = fmt.Sprintln(entryKey(te), te.Entry.Action, te.Entry.Params)
	}
	slices.Sort(lines)
	return strings.Join(lines, "")
}

// gone are the held of old whose ids new does not hold, by id.
func gone[K comparable](old []xdpHeld, new map[K]xdpHeld) []xdpHeld {
	keep := map[uint64]bool{}
	for _, h := range new {
		keep[h.id] = true
	}
	var out []xdpHeld
	for _, h := range old {
		if !keep[h.id] {
			keep[h.id] = true
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b xdpHeld) int { return cmp.Compare(a.id, b.id) })
	return out
}

// takeOver reads what instance's maps hold: its calendars and members by
// data-plane id (found, for Apply to adopt or delete), and starts the id
// counters above the ids found. Source filters found are not the CP's
// alone (--lb-tables may allow sources): Apply writes the state's again
// (the same value, where unchanged) and deletes none it did not write.
func (x *XDPMaps) takeOver(instance int) (*xdpLB, error) {
	lb := &xdpLB{members: map[uint16]xdpHeld{}, calendars: map[uint32]xdpHeld{}, other: map[string]packet.TableEntry{}}
	found := func(table string, idKey int) ([]xdpHeld, uint64, error) {
		es, err := x.Live.Entries(table)
		if err != nil {
			return nil, 0, err
		}
		byID := map[uint64][]packet.TableEntry{}
		for _, e := range es {
			if e.Keys[0].Value.Lo == uint64(instance) {
				id := e.Keys[idKey].Value.Lo
				byID[id] = append(byID[id], packet.TableEntry{Table: table, Entry: e})
			}
		}
		var out []xdpHeld
		var top uint64
		for _, id := range slices.Sorted(maps.Keys(byID)) {
			out = append(out, xdpHeld{id: id, content: content(byID[id], idKey), entries: byID[id]})
			top = id
		}
		return out, top, nil
	}
	var top uint64
	var err error
	if lb.foundCals, top, err = found(calendar.CalendarTable, 1); err != nil {
		return nil, err
	}
	lb.nextEpoch = uint32(top)
	if lb.foundMembers, top, err = found(calendar.MemberTable, 2); err != nil {
		return nil, err
	}
	lb.nextMember = uint16(top)
	return lb, nil
}

// freshEpoch and freshMember count the data-plane ids round (within the
// model's epoch and member widths): an id comes back only after every
// other one, long after the packets that met it. Epoch id 0 is never
// given: an epoch whose calendar has no entry (every session gone)
// names it, and misses as the interpreter's empty calendar does.
func (lb *xdpLB) freshEpoch() uint64 {
	if lb.nextEpoch++; lb.nextEpoch == 0 {
		lb.nextEpoch++
	}
	return uint64(lb.nextEpoch)
}

func (lb *xdpLB) freshMember() uint64 { lb.nextMember++; return uint64(lb.nextMember) }

func sameAction(a, b packet.TableEntry) bool {
	return a.Entry.Action == b.Entry.Action && slices.Equal(a.Entry.Params, b.Entry.Params)
}

func sameEntry(a, b *packet.Entry) bool {
	return entryKey(packet.TableEntry{Entry: *a}) == entryKey(packet.TableEntry{Entry: *b}) &&
		a.Action == b.Action && slices.Equal(a.Params, b.Params)
}

// XDPEntries reads back instance's entries from an XDP program's maps:
// its source filters, members and calendars (under data-plane ids) and
// epoch entries (naming them; without priorities, which the maps do not
// keep).
func XDPEntries(live *xdprun.Live, instance int) ([]packet.TableEntry, error) {
	var out []packet.TableEntry
	for _, table := range []string{srcFilterIPv4, srcFilterIPv6, calendar.MemberTable, calendar.CalendarTable} {
		es, err := live.Entries(table)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if e.Keys[0].Value.Lo == uint64(instance) {
				out = append(out, packet.TableEntry{Table: table, Entry: e})
			}
		}
	}
	es, err := live.Group(calendar.EpochTable, []packet.Value{packet.V(uint64(instance)), {}})
	for _, e := range es {
		out = append(out, packet.TableEntry{Table: calendar.EpochTable, Entry: e})
	}
	return out, err
}

// Resolved is what one instance's entries (a CP's state, or XDPEntries')
// do, whatever ids name the calendars and members: per epoch entry and
// calendar slot the member entries it leads to, the members no calendar
// names, and the other entries; sorted lines, equal for two sets of
// entries that route every packet alike.
func Resolved(es []packet.TableEntry) []string {
	cals := map[uint64][]packet.Entry{}
	members := map[uint64][]packet.Entry{}
	named := map[uint64]bool{}
	var lines []string
	for _, te := range es {
		switch te.Table {
		case calendar.CalendarTable:
			cals[te.Entry.Keys[1].Value.Lo] = append(cals[te.Entry.Keys[1].Value.Lo], te.Entry)
		case calendar.MemberTable:
			members[te.Entry.Keys[2].Value.Lo] = append(members[te.Entry.Keys[2].Value.Lo], te.Entry)
		case calendar.EpochTable:
		default:
			lines = append(lines, fmt.Sprint(te.Table, te.Entry.Keys, te.Entry.Action, te.Entry.Params))
		}
	}
	member := func(id uint64) string {
		var b strings.Builder
		for _, e := range members[id] {
			fmt.Fprint(&b, " ", e.Keys[1].Value, e.Action, e.Params)
		}
		return b.String()
	}
	for _, te := range es {
		if te.Table != calendar.EpochTable {
			continue
		}
		k := te.Entry.Keys[1]
		head := fmt.Sprintf("epoch %v %v/%d %d", te.Entry.Keys[0].Value, k.Value, k.PrefixLen, te.Entry.Action)
		lines = append(lines, head)
		for _, c := range cals[te.Entry.Params[0].Lo] {
			named[c.Params[0].Lo] = true
			lines = append(lines, fmt.Sprint(head, " slot ", c.Keys[2].Value, " ->", member(c.Params[0].Lo)))
		}
	}
	for id := range members {
		if !named[id] {
			lines = append(lines, "member"+member(id))
		}
	}
	slices.Sort(lines)
	return lines
}
