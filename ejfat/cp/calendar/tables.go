package calendar

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	"github.com/dragonet-go/nsc/packet"
)

// The tables an epoch change writes, as lb-2025 and lb-2026 name them.
const (
	EpochTable    = "epoch_assign_table"
	CalendarTable = "load_balance_calendar_table"
	MemberTable   = "member_info_lookup_table"
)

// EtherTypes of the member table's second key.
const (
	etherIPv4 = 0x0800
	etherIPv6 = 0x86dd
)

// Member is a session as the member table rewrites its events.
type Member struct {
	ID  uint16
	MAC [6]byte
	// IPv4 and IPv6 are its addresses, either or both valid: an event
	// that arrives over IPv4 reaches the member over IPv4 and needs IPv4.
	IPv4, IPv6   netip.Addr
	UDPBase      uint16
	PortBits     uint8 // it listens on 2^PortBits ports from UDPBase
	KeepLBHeader bool
}

// Writer makes table entries for one LB model's tables.
type Writer struct {
	epoch, cal, member        *packet.TableSpec
	assignEpoch, assignMember int
	rewriteIPv4, rewriteIPv6  int
	lbWidth                   int
	epochPriorities           bool
}

// NewWriter resolves the three tables in a model's schema (its
// Schema.TableSpec) and checks that they have the shape the entries need:
// epoch_assign_table (lb_id exact, tick 64 lpm) with do_assign_epoch,
// load_balance_calendar_table (lb_id, epoch, slot) with do_assign_member,
// member_info_lookup_table (lb_id, EtherType, member) with the IPv4 and
// IPv6 rewrites.
func NewWriter(tables func(string) (*packet.TableSpec, bool)) (*Writer, error) {
	w := &Writer{}
	var err error
	spec := func(name string, kinds ...packet.MatchKind) *packet.TableSpec {
		s, ok := tables(name)
		if err != nil {
			return nil
		}
		if !ok || s == nil {
			err = fmt.Errorf("the model has no table %s", name)
			return nil
		}
		if len(s.Keys) != len(kinds) {
			err = fmt.Errorf("table %s: %d keys, want %d", name, len(s.Keys), len(kinds))
			return nil
		}
		for i, k := range kinds {
			if s.Keys[i].Kind != k {
				err = fmt.Errorf("table %s: key %s is %s, want %s", name, s.Keys[i].Name, s.Keys[i].Kind, k)
				return nil
			}
		}
		return s
	}
	action := func(s *packet.TableSpec, name string, params int) int {
		if err != nil {
			return -1
		}
		i, ok := s.ActionIndex(name)
		if !ok || len(s.Actions[i].Params) != params {
			err = fmt.Errorf("table %s: no action %s with %d parameters", s.Name, name, params)
		}
		return i
	}
	w.epoch = spec(EpochTable, packet.Exact, packet.LPM)
	w.cal = spec(CalendarTable, packet.Exact, packet.Exact, packet.Exact)
	w.member = spec(MemberTable, packet.Exact, packet.Exact, packet.Exact)
	if err != nil {
		return nil, err
	}
	w.assignEpoch = action(w.epoch, "do_assign_epoch", 1)
	w.assignMember = action(w.cal, "do_assign_member", 1)
	w.rewriteIPv4 = action(w.member, "do_ipv4_member_rewrite", 5)
	w.rewriteIPv6 = action(w.member, "do_ipv6_member_rewrite", 5)
	if err != nil {
		return nil, err
	}
	if k := w.epoch.Keys[1]; k.Width != 64 {
		return nil, fmt.Errorf("table %s: key %s is %d bits, want 64", EpochTable, k.Name, k.Width)
	}
	w.lbWidth = w.epoch.Keys[0].Width
	w.epochPriorities = w.epoch.NeedsPriority()
	return w, nil
}

// Entries are the table entries of one LB instance's live epochs (oldest
// first) and of the members their calendars name: members by id (IPv4
// then IPv6), the calendars' assigned slots, then each epoch's tick range
// as its prefixes (Cover) at priority 64 − prefix length (the newest
// epoch's range is the /0 catch-all, at 64, which every other epoch's
// longer prefixes beat), each group in the order a data plane should add
// them. A calendar naming a member not in members is an error.
func (w *Writer) Entries(lb uint8, live []Epoch, members []Member) ([]packet.TableEntry, error) {
	if uint64(lb)>>w.lbWidth != 0 {
		return nil, fmt.Errorf("LB %d does not fit the model's %d-bit lb_id", lb, w.lbWidth)
	}
	known := map[uint16]bool{}
	var out []packet.TableEntry
	for _, m := range slices.SortedFunc(slices.Values(members), func(a, b Member) int { return int(a.ID) - int(b.ID) }) {
		if known[m.ID] || m.ID == Unassigned {
			return nil, fmt.Errorf("member %d twice or reserved", m.ID)
		}
		known[m.ID] = true
		out = append(out, w.memberEntries(lb, &m)...)
	}
	for i := range live {
		e := &live[i]
		for slot, m := range e.Calendar {
			if m == Unassigned {
				continue
			}
			if !known[m] {
				return nil, fmt.Errorf("epoch %d: slot %d: member %d has no member entry", e.Seq, slot, m)
			}
			out = append(out, w.entry(CalendarTable, w.assignMember, exact(uint64(lb), uint64(e.ID()), uint64(slot)), 0, packet.V(uint64(m))))
		}
	}
	for i := range live {
		e := &live[i]
		prefixes := []Prefix{{0, 0}}
		if i+1 < len(live) {
			prefixes = Cover(e.Boundary, live[i+1].Boundary-1)
		}
		for _, p := range prefixes {
			keys := []packet.KeyMatch{{Value: packet.V(uint64(lb))}, {Value: packet.V(p.Value), PrefixLen: p.Len}}
			prio := 0
			if w.epochPriorities {
				prio = 64 - p.Len
			}
			out = append(out, w.entry(EpochTable, w.assignEpoch, keys, prio, packet.V(uint64(e.ID()))))
		}
	}
	return out, nil
}

// memberEntries are m's rewrites, one per address family it has.
func (w *Writer) memberEntries(lb uint8, m *Member) []packet.TableEntry {
	var mac [8]byte
	copy(mac[2:], m.MAC[:])
	keep := uint64(0)
	if m.KeepLBHeader {
		keep = 1
	}
	rest := []packet.Value{packet.V(uint64(m.UDPBase)), packet.V(uint64(m.PortBits)), packet.V(keep)}
	var out []packet.TableEntry
	if m.IPv4.Is4() {
		a := m.IPv4.As4()
		params := append([]packet.Value{packet.V(binary.BigEndian.Uint64(mac[:])), packet.V(uint64(binary.BigEndian.Uint32(a[:])))}, rest...)
		out = append(out, w.entry(MemberTable, w.rewriteIPv4, exact(uint64(lb), etherIPv4, uint64(m.ID)), 0, params...))
	}
	if m.IPv6.Is6() {
		a := m.IPv6.As16()
		ip := packet.Value{Hi: binary.BigEndian.Uint64(a[:8]), Lo: binary.BigEndian.Uint64(a[8:])}
		params := append([]packet.Value{packet.V(binary.BigEndian.Uint64(mac[:])), ip}, rest...)
		out = append(out, w.entry(MemberTable, w.rewriteIPv6, exact(uint64(lb), etherIPv6, uint64(m.ID)), 0, params...))
	}
	return out
}

func exact(vs ...uint64) []packet.KeyMatch {
	keys := make([]packet.KeyMatch, len(vs))
	for i, v := range vs {
		keys[i].Value = packet.V(v)
	}
	return keys
}

func (w *Writer) entry(table string, action int, keys []packet.KeyMatch, prio int, params ...packet.Value) packet.TableEntry {
	return packet.TableEntry{Table: table, Entry: packet.Entry{Keys: keys, Action: action, Params: params, Priority: prio}}
}
