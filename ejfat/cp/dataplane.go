package cp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"

	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

// DataPlane programs the LB instances' epoch, calendar and member tables.
type DataPlane interface {
	// Apply moves instance's entries to state (in calendar.Writer.Entries
	// order); diff is the change from the state applied before (at first,
	// from none). A packet must meet either the old state or the new one,
	// or, for a diff applied in order, one that routes every tick of the
	// epochs live in both as before (calendar.Diff). On an error the CP
	// applies the whole change again next time.
	Apply(instance int, state []packet.TableEntry, diff calendar.Diff) error
}

// Programming is how the CP turns its reservations, epochs and sessions
// into table entries for a DataPlane.
type Programming struct {
	DataPlane DataPlane
	Tables    func(string) (*packet.TableSpec, bool) // the LB model's tables
	MemberMAC [6]byte                                // the Ethernet destination of every member
}

// The source filters (lb_id and source address exact) and the action that
// lets a sender through.
const (
	srcFilterIPv4 = "ipv4_src_filter_table"
	srcFilterIPv6 = "ipv6_src_filter_table"
	allowSource   = "allow_ip_src"
)

// programmer keeps what each instance's data plane holds.
type programmer struct {
	writer  *calendar.Writer
	applied map[int][]packet.TableEntry
	members map[int]map[int64]uint16 // per instance, session ID → member id
	// epochs is, per instance, the reservation and its newest epoch the
	// data plane holds: what the metrics read without c.mu.
	epochs *heldEpochs
}

type heldEpochs struct {
	sync.Mutex
	by map[int][2]uint64
}

// held is the newest epoch of reservation lb that instance's data plane
// holds, 0 for none.
func (p *programmer) held(instance int, lb int64) uint64 {
	p.epochs.Lock()
	defer p.epochs.Unlock()
	if e := p.epochs.by[instance]; e[0] == uint64(lb) {
		return e[1]
	}
	return 0
}

// newProgrammer checks p's tables: those calendar.Writer writes and the
// source filters.
func newProgrammer(p *Programming) (programmer, error) {
	pr := programmer{applied: map[int][]packet.TableEntry{}, members: map[int]map[int64]uint16{}, epochs: &heldEpochs{by: map[int][2]uint64{}}}
	switch {
	case p.DataPlane == nil:
		return pr, nil
	case p.Tables == nil:
		return pr, fmt.Errorf("a data plane without the model's tables")
	}
	var err error
	if pr.writer, err = calendar.NewWriter(p.Tables); err != nil {
		return pr, err
	}
	for _, name := range []string{srcFilterIPv4, srcFilterIPv6} {
		s, ok := p.Tables(name)
		if !ok || len(s.Keys) != 2 {
			return pr, fmt.Errorf("the model has no table %s with 2 keys", name)
		}
		if i, ok := s.ActionIndex(allowSource); !ok || len(s.Actions[i].Params) != 0 {
			return pr, fmt.Errorf("table %s has no action %s without parameters", name, allowSource)
		}
	}
	return pr, nil
}

// program brings every instance's data plane to its reservation's live
// epochs and sessions (no entries for a free instance). The caller holds
// c.mu.
func (c *CP) program() {
	p := &c.cfg.Programming
	if p.DataPlane == nil {
		return
	}
	byInstance := map[int]Reservation{}
	for _, r := range c.store.Reservations() {
		byInstance[r.Instance] = r
	}
	for i := range c.cfg.Instances {
		var state []packet.TableEntry
		var held [2]uint64
		if r, ok := byInstance[i]; ok {
			var err error
			if state, err = c.entries(i, r); err != nil {
				c.logErr(fmt.Sprintf("tables of LB %d", r.ID), err)
				continue
			}
			if es := c.store.Epochs(r.ID); len(es) > 0 {
				held = [2]uint64{uint64(r.ID), es[len(es)-1].Number}
			}
		}
		if d := calendar.Compare(c.prog.applied[i], state); d.Len() > 0 {
			if err := p.DataPlane.Apply(i, state, d); err != nil {
				c.logErr(fmt.Sprintf("program instance %d", i), err)
				continue
			}
			c.prog.applied[i] = state
		}
		c.prog.epochs.Lock()
		c.prog.epochs.by[i] = held
		c.prog.epochs.Unlock()
	}
	if c.cfg.Feed != nil {
		c.logErr("publish the tables", c.cfg.Feed.publish())
	}
}

// entries are the table entries of reservation r on instance i: its
// senders, its live epochs, whose slots of sessions gone are unassigned,
// and its sessions as members.
func (c *CP) entries(i int, r Reservation) ([]packet.TableEntry, error) {
	sessions := map[int64]Session{}
	for _, x := range c.store.Sessions(r.ID) {
		sessions[x.ID] = x
	}
	out := c.senderEntries(i, r)
	ids := c.memberIDs(i, sessions)
	var live []calendar.Epoch
	for _, e := range c.store.Epochs(r.ID) {
		ce := calendar.Epoch{Seq: e.Number, Boundary: e.Boundary, Calendar: *calendar.Empty()}
		for j, id := range e.Calendar {
			if m, ok := ids[id]; ok {
				ce.Calendar[j] = m
			}
		}
		live = append(live, ce)
	}
	var members []calendar.Member
	for id, m := range ids {
		mem, err := c.member(sessions[id], m)
		if err != nil {
			return nil, err
		}
		members = append(members, mem)
	}
	es, err := c.prog.writer.Entries(uint8(i), live, members)
	return append(out, es...), err
}

// senderEntries let r's senders through instance i's source filter (the
// server checked their addresses; an IPv4-mapped one is its IPv4 one).
func (c *CP) senderEntries(i int, r Reservation) []packet.TableEntry {
	var out []packet.TableEntry
	seen := map[netip.Addr]bool{}
	for _, s := range r.Senders {
		ip, err := netip.ParseAddr(s)
		if ip = ip.Unmap(); err != nil || seen[ip] {
			continue
		}
		seen[ip] = true
		table, v := srcFilterIPv4, packet.V(0)
		if ip.Is4() {
			a := ip.As4()
			v = packet.V(uint64(binary.BigEndian.Uint32(a[:])))
		} else {
			a := ip.As16()
			table, v = srcFilterIPv6, packet.Value{Hi: binary.BigEndian.Uint64(a[:8]), Lo: binary.BigEndian.Uint64(a[8:])}
		}
		spec, _ := c.cfg.Programming.Tables(table) // checked by newProgrammer
		allow, _ := spec.ActionIndex(allowSource)
		out = append(out, packet.TableEntry{Table: table, Entry: packet.Entry{
			Keys: []packet.KeyMatch{{Value: packet.V(uint64(i))}, {Value: v}}, Action: allow}})
	}
	return out
}

// memberIDs gives each of sessions a member id on instance i, keeping the
// ids already given (a session's member entry does not change while it
// lives) and giving new sessions the lowest free ones; the ids of
// sessions gone are free again.
func (c *CP) memberIDs(i int, sessions map[int64]Session) map[int64]uint16 {
	old := c.prog.members[i]
	ids := map[int64]uint16{}
	used := map[uint16]bool{}
	for id, m := range old {
		if _, ok := sessions[id]; ok {
			ids[id], used[m] = m, true
		}
	}
	next := uint16(0)
	for _, id := range slices.Sorted(maps.Keys(sessions)) {
		if _, ok := ids[id]; ok {
			continue
		}
		for used[next] {
			next++
		}
		ids[id], used[next] = next, true
	}
	c.prog.members[i] = ids
	return ids
}

// member is session x as member m of the member table.
func (c *CP) member(x Session, m uint16) (calendar.Member, error) {
	ip, err := netip.ParseAddr(x.IP)
	if err != nil {
		return calendar.Member{}, fmt.Errorf("session %d: IP %q: %v", x.ID, x.IP, err)
	}
	mem := calendar.Member{ID: m, MAC: c.cfg.Programming.MemberMAC, UDPBase: uint16(x.Port),
		PortBits: uint8(x.PortRange), KeepLBHeader: x.KeepLBHeader}
	if ip = ip.Unmap(); ip.Is4() {
		mem.IPv4 = ip
	} else {
		mem.IPv6 = ip
	}
	return mem, nil
}

// TableSet is the in-process Go data plane: it keeps every instance's
// entries over Base (the entries the CP does not write: the LB's MAC and
// address filters, the allowed sources) and, at each Apply, builds a
// whole new table set and hands it to Install (lbnet.LB.SetTables, say),
// so that a packet runs over either the old set or the new one.
type TableSet struct {
	Empty   func() ([]*table.Table, error) // the model's tables, empty
	Base    []packet.TableEntry
	Install func([]*table.Table) error

	mu    sync.Mutex
	state map[int][]packet.TableEntry
}

// Apply implements DataPlane.
func (s *TableSet) Apply(instance int, state []packet.TableEntry, _ calendar.Diff) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		s.state = map[int][]packet.TableEntry{}
	}
	ts, err := s.Empty()
	if err != nil {
		return err
	}
	updates := make([][]table.Update, len(ts))
	index := map[string]int{}
	for i, t := range ts {
		index[t.Spec().Name] = i
	}
	add := func(es []packet.TableEntry) error {
		for _, te := range es {
			i, ok := index[te.Table]
			if !ok {
				return fmt.Errorf("no table %s", te.Table)
			}
			updates[i] = append(updates[i], table.Update{Kind: table.InsertEntry, Entry: te.Entry})
		}
		return nil
	}
	if err := add(s.Base); err != nil {
		return err
	}
	for _, i := range slices.Sorted(maps.Keys(s.state)) {
		if i != instance {
			if err := add(s.state[i]); err != nil {
				return err
			}
		}
	}
	if err := add(state); err != nil {
		return err
	}
	for i, us := range updates {
		if err := ts[i].Apply(us); err != nil {
			return fmt.Errorf("table %s: %v", ts[i].Spec().Name, err)
		}
	}
	if err := s.Install(ts); err != nil {
		return err
	}
	s.state[instance] = state
	return nil
}

// DataPlanes programs several data planes with the same entries (the Go
// LB and BMv2, say; their models' tables must be the same), each from the
// state it holds: a plane whose Apply failed gets the whole change from
// what it last took at the next Apply, whatever the others took.
type DataPlanes struct {
	Planes []DataPlane

	mu      sync.Mutex
	applied []map[int][]packet.TableEntry // per plane, per instance
}

// Apply implements DataPlane.
func (d *DataPlanes) Apply(instance int, state []packet.TableEntry, _ calendar.Diff) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.applied) < len(d.Planes) {
		d.applied = append(d.applied, map[int][]packet.TableEntry{})
	}
	var errs []error
	for i, p := range d.Planes {
		diff := calendar.Compare(d.applied[i][instance], state)
		if diff.Len() == 0 {
			continue
		}
		if err := p.Apply(instance, state, diff); err != nil {
			errs = append(errs, err)
			continue
		}
		d.applied[i][instance] = state
	}
	return errors.Join(errs...)
}
