package cp

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/packet"
)

// XDPProgram generates an LB model's XDP program.
func XDPProgram(model string) (*xdp.Program, error) {
	m, lpg, err := ejfat.LPG(model)
	if err != nil {
		return nil, err
	}
	prg, ok := m.Graph("XDP")
	if !ok {
		return nil, fmt.Errorf("%s has no prg XDP", ejfat.File(model))
	}
	em, err := embed.Embed(lpg, prg)
	if err != nil {
		return nil, err
	}
	return xdp.Generate(em.Graph, xdp.Options{Limits: prg.Limits, Command: "nsc cp"})
}

// BuildXDP generates an LB model's XDP program and compiles it (clang)
// into dir, returning the object's path.
func BuildXDP(model, dir string) (string, error) {
	prog, err := XDPProgram(model)
	if err != nil {
		return "", err
	}
	name := strings.ToLower(prog.Meta.Graph)
	src := filepath.Join(dir, name+".c")
	if err := os.WriteFile(src, prog.C, 0o644); err != nil {
		return "", err
	}
	obj := filepath.Join(dir, name+".o")
	return obj, xdp.Clang(src, obj)
}

// XDPTables is the XDP program's tables, for Programming.Tables.
func XDPTables(r *xdp.Runner) func(string) (*packet.TableSpec, bool) {
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
// its maps changed entry by entry (xdp.Live) so that a packet meets the
// state applied before or the one applied now, never a mix. It writes no
// entry a packet may look up: a calendar or member whose content changes
// goes in whole under a data-plane id no entry in force names (the epoch
// and member numbers the CP gives are renumbered here), then the
// instance's epoch entries, naming the new ids, replace the old ones in
// one update (xdp.Live.SetGroup), and only then are the entries nothing
// names any more deleted. Other entries (the source filters) are added
// before and deleted after that switch, one by one.
type XDPMaps struct {
	Live *xdp.Live

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
		lb = &xdpLB{members: map[uint16]xdpHeld{}, calendars: map[uint32]xdpHeld{}, other: map[string]packet.TableEntry{}}
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
	newMembers, err := place(x.Live, lb.members, members, 2, lb.freshMember, nil)
	if err != nil {
		return err
	}
	newCals, err := place(x.Live, lb.calendars, cals, 1, lb.freshEpoch, newMembers)
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
	oldMembers, oldCals, oldOther := lb.members, lb.calendars, lb.other
	lb.members, lb.calendars, lb.epochs, lb.other = newMembers, newCals, written, other
	// What nothing names any more.
	for _, held := range []map[uint64]xdpHeld{gone(oldCals, newCals), gone(oldMembers, newMembers)} {
		for _, id := range slices.Sorted(maps.Keys(held)) {
			for _, te := range held[id].entries {
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
// data-plane id: the one it holds if what it says is unchanged, else a
// fresh one, under which its entries (key idKey the id; a calendar's
// member parameter renamed by members) are written.
func place[K cmp.Ordered](live *xdp.Live, held map[K]xdpHeld, groups map[K][]packet.TableEntry, idKey int, fresh func() uint64, members map[uint16]xdpHeld) (map[K]xdpHeld, error) {
	inUse := map[uint64]bool{}
	for _, h := range held {
		inUse[h.id] = true
	}
	out := map[K]xdpHeld{}
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		es := groups[k]
		var b strings.Builder
		renamed := make([]packet.TableEntry, len(es))
		for i, te := range es {
			te.Entry.Keys = slices.Clone(te.Entry.Keys)
			te.Entry.Keys[idKey] = packet.KeyMatch{}
			if members != nil {
				m, ok := members[uint16(te.Entry.Params[0].Lo)]
				if !ok {
					return nil, fmt.Errorf("%s names member %d, which has no entry", te.Table, te.Entry.Params[0].Lo)
				}
				te.Entry.Params = []packet.Value{packet.V(m.id)}
			}
			fmt.Fprintln(&b, entryKey(te), te.Entry.Action, te.Entry.Params)
			renamed[i] = te
		}
		h, ok := held[k]
		if ok && h.content == b.String() {
			out[k] = h
			continue
		}
		h = xdpHeld{id: fresh(), content: b.String(), entries: renamed}
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

// gone are the held ids of old that new does not hold.
func gone[K comparable](old, new map[K]xdpHeld) map[uint64]xdpHeld {
	keep := map[uint64]bool{}
	for _, h := range new {
		keep[h.id] = true
	}
	out := map[uint64]xdpHeld{}
	for _, h := range old {
		if !keep[h.id] {
			out[h.id] = h
		}
	}
	return out
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
