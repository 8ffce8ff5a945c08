package wireshark

import (
	"slices"

	"github.com/dragonet-go/nsc/packet"
)

// The headers of the shipped library that Wireshark dissects itself, by
// name: their fields that select what follows (a dissector table), and the
// dissector a generated header hands them to.
var (
	nativeTables = map[string]map[string]string{
		"ethernet": {"type": "ethertype"},
		"vlan":     {"type": "ethertype"},
		"ipv4":     {"proto": "ip.proto"},
		"ipv6":     {"next_hdr": "ip.proto"},
		"udp":      {"sport": "udp.port", "dport": "udp.port"},
		"tcp":      {"sport": "tcp.port", "dport": "tcp.port"},
	}
	// heuristicLists take a header after UDP or TCP the model tests no
	// port for.
	heuristicLists = map[string]string{"udp": "udp", "tcp": "tcp"}
	// transportTables bind a header by default (Options.Headers).
	transportTables  = map[string]bool{"udp.port": true, "tcp.port": true}
	nativeDissectors = map[string]string{
		"ethernet": "eth_withoutfcs", "vlan": "vlan", "arp": "arp", "ipv4": "ip", "ipv6": "ipv6",
		"icmp": "icmp", "icmpv6": "icmpv6", "udp": "udp", "tcp": "tcp",
	}
)

// native reports whether Wireshark dissects header h itself.
func native(h *packet.HeaderSpec) bool {
	_, ok := nativeDissectors[h.Name]
	return ok || h.Name == "icmp_echo" // part of Wireshark's ICMP
}

// binding registers a generated header in a Wireshark dissector table, or
// as a heuristic dissector of a transport protocol.
type binding struct {
	table string          // a dissector table; for a heuristic, "udp" or "tcp"
	field packet.FieldRef // the native field whose values bind
	set   valueSet
	// heuristic: the model tests no port on the way to the header.
	heuristic bool
}

// bindings finds, for every header that follows a native one, the values
// of the native header's table field on the paths that lead to it: udp.dport
// in 0x4000..0x7fff gives udp.port 16384-32767.
func bindings(s *packet.Schema, tr map[int][]*step) map[int][]binding {
	out := map[int][]binding{}
	for _, h := range s.Headers {
		fields := nativeTables[h.Name]
		if fields == nil {
			continue
		}
		for _, st := range tr[h.ID] {
			paths(s, st, map[packet.FieldRef]valueSet{}, func(to int, cons map[packet.FieldRef]valueSet) {
				if native(s.Headers[to]) {
					return
				}
				var best *binding // the field with the fewest values: dport 4000 over sport >= 1024
				for _, f := range tableFields(h, fields) {
					set, ok := cons[f]
					if ok && len(set) > 0 && !set.isFull(s.FieldSpec(f).Width) && (best == nil || set.size() < best.set.size()) {
						best = &binding{table: fields[h.Fields[f.Field].Name], field: f, set: set}
					}
				}
				switch {
				case best != nil:
					out[to] = addBinding(out[to], *best)
				case heuristicLists[h.Name] != "":
					out[to] = addBinding(out[to], binding{table: heuristicLists[h.Name], field: tableFields(h, fields)[0], heuristic: true})
				}
			})
		}
	}
	return out
}

// tableFields are header h's fields that have a dissector table, in the
// header's order.
func tableFields(h *packet.HeaderSpec, fields map[string]string) []packet.FieldRef {
	var out []packet.FieldRef
	for i, f := range h.Fields {
		if _, ok := fields[f.Name]; ok {
			out = append(out, packet.FieldRef{Header: h.ID, Field: i})
		}
	}
	return out
}

func addBinding(bs []binding, b binding) []binding {
	i := slices.IndexFunc(bs, func(x binding) bool {
		return x.table == b.table && x.field == b.field && x.heuristic == b.heuristic
	})
	if i < 0 {
		return append(bs, b)
	}
	bs[i].set = bs[i].set.union(b.set)
	return bs
}

// paths calls leaf for every stepNext of st with the values each field is
// known to have on the way: a test or switch on a single field narrows it,
// any other test leaves it as it is.
func paths(s *packet.Schema, st *step, cons map[packet.FieldRef]valueSet, leaf func(int, map[packet.FieldRef]valueSet)) {
	switch st.kind {
	case stepNext:
		leaf(st.header, cons)
	case stepIf:
		then, els := cons, cons
		for _, c := range conjuncts(st.cond) { // the true branch: each on its own
			if f, set, ok := single(s, c); ok {
				then = narrow(then, f, set)
			}
		}
		if f, set, ok := single(s, st.cond); ok { // the false branch: only a test of one field
			els = narrow(els, f, set.complement(s.FieldSpec(f).Width))
		}
		paths(s, st.then, then, leaf)
		paths(s, st.els, els, leaf)
	case stepSwitch:
		var all valueSet
		for _, a := range st.arms {
			set := valuesSet(a.values)
			all = all.union(set)
			paths(s, a.body, narrow(cons, st.field, set), leaf)
		}
		paths(s, st.els, narrow(cons, st.field, all.complement(s.FieldSpec(st.field).Width)), leaf)
	}
}

// narrow returns cons with field f known to be in set as well.
func narrow(cons map[packet.FieldRef]valueSet, f packet.FieldRef, set valueSet) map[packet.FieldRef]valueSet {
	c := make(map[packet.FieldRef]valueSet, len(cons)+1)
	for k, v := range cons {
		c[k] = v
	}
	if old, ok := c[f]; ok {
		set = old.intersect(set)
	}
	c[f] = set
	return c
}

// conjuncts splits a && b && … into its terms.
func conjuncts(e *packet.Expr) []*packet.Expr {
	if e.Kind == packet.EAnd {
		return append(conjuncts(e.A), conjuncts(e.B)...)
	}
	return []*packet.Expr{e}
}

// single places a condition on one field.
func single(s *packet.Schema, e *packet.Expr) (packet.FieldRef, valueSet, bool) {
	fs, ok := reads(e)
	if !ok || len(fs) != 1 {
		return packet.FieldRef{}, nil, false
	}
	set, ok := condSet(s, e, fs[0])
	return fs[0], set, ok
}

func valuesSet(vs []uint64) valueSet {
	var out valueSet
	for _, v := range vs {
		out = append(out, span{v, v})
	}
	return out.normal()
}
