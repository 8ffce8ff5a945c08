package embed

import (
	"fmt"
	"slices"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
	"github.com/dragonet-go/nsc/prg"
)

// PuntNode is the sink of a device's part (Embedding.Device) where a frame
// leaves the device for the host: an emit marked [host], so that the XDP
// target passes it to the kernel (XDP_PASS).
const PuntNode = "PuntToHost"

// hostReason is why the host re-runs what the device decided: a frame
// crosses unchanged, so the device's metadata need not.
const hostReason = "the host re-runs the device's decisions on the frame as the wire gave it"

// splitDevice divides the LPG behind a programmable device's sinks (P4's
// pipeline, the XDP hook) between the device and the host, when the
// device cannot run part of it. The nodes it cannot run (a table over its
// limits, keyed state, a read of the payload it cannot reach) go to the
// host; so does every node that writes the
// frame on the way to one, or to an emit marked [host]: every frame the
// device hands the host (at PuntNode or such an emit) is the frame as it
// came from the wire, and the host runs the whole embedded graph on it,
// re-running the device's decisions (the same tables, the same metadata)
// before it reaches the nodes only it can run. The device's
// part is em.Device: em.Graph with every edge into a host node led to
// PuntNode instead. em.Graph stays what the host runs.
func (b *builder) splitDevice(em *Embedding) error {
	if !b.programSinks(names(b.rxSinks)) {
		return nil
	}
	g := em.Graph
	order := g.Order()
	enodeOf := map[string]*enode{}
	for _, e := range b.nodes {
		if !e.removed {
			enodeOf[e.name] = e
		}
	}
	lpg := func(n *dataflow.Node) *enode {
		if e := enodeOf[n.Name]; e != nil && e.lpg && n.Kind == dataflow.FNode {
			return e
		}
		return nil
	}
	var ps *dataflow.Predicates
	preds := func() *dataflow.Predicates {
		if ps == nil {
			ps = g.PredicatesIn(b.space)
		}
		return ps
	}
	why := map[*enode]string{}
	for _, n := range order {
		if e := lpg(n); e != nil {
			if r := b.deviceCannot(e, n, preds); r != "" {
				why[e] = r
			}
		}
	}
	b.overTables(order, lpg, why)
	if len(why) == 0 {
		return nil
	}
	for changed := true; changed; {
		changed = false
		for _, n := range order {
			e := lpg(n)
			if e == nil || why[e] != "" {
				continue
			}
			what := "writes the frame"
			if e.op.Kind == packet.OpStore {
				// The host shares the device's registers (a BPF map, an
				// FPGA's register file): its re-run must not store twice.
				what = "stores into register " + g.Schema.Registers[e.op.Register].Name
			} else if !writesFrame(g.Schema, e.op) {
				continue
			}
			reach := dataflow.Reachable(n)
			for _, m := range order {
				x := enodeOf[m.Name]
				if m == n || !reach[m] || x == nil {
					continue
				}
				if why[x] != "" || x.lpg && m.Host {
					why[e] = fmt.Sprintf("%s on the way to %s, and %s", what, x.display(), hostReason)
					changed = true
					break
				}
			}
		}
	}
	dev, kept, err := b.deviceGraph(g, why)
	if err != nil {
		return err
	}
	em.Device = dev
	preds()
	// What the device ends itself: against these, a host node's class.
	ended := b.space.False()
	for _, n := range dev.Nodes {
		if x := g.Node(n.Name); x != nil && n.Kind == dataflow.FNode && (n.Op.Terminal() || n.Sink) {
			ended = ended.Or(ps.Reaching(x))
		}
	}
	for i, p := range em.Placements {
		n := b.lpg.Node(p.Node)
		var cut, on []*enode
		for _, e := range b.copies[n] {
			switch {
			case e.removed:
			case why[e] != "":
				cut = append(cut, e)
			case kept[e]:
				on = append(on, e)
			}
		}
		switch {
		case len(cut) > 0:
			p.Kind, p.Reason = Host, why[cut[0]]
			// Frames that reach it and that the device does not end, by
			// what sets them apart.
			reach := ps.Reaching(g.Node(cut[0].name))
			if c, ok := predicate.Counterexample(reach, ended); ok {
				p.Counterexample = c.Relative(reach.Or(ended)).String()
			}
		case len(on) == 0 && slices.ContainsFunc(b.copies[n], func(e *enode) bool { return !e.removed }):
			p.Kind, p.Reason = Host, "only frames the device hands to the host reach it"
		default:
			continue
		}
		em.Placements[i] = p
	}
	return nil
}

// deviceCannot says why the device cannot run an LPG node (n in the
// embedded graph), or "".
func (b *builder) deviceCannot(e *enode, n *dataflow.Node, ps func() *dataflow.Predicates) string {
	switch e.op.Kind {
	case packet.OpLookup:
		if r := b.overLimits(e); r != "" {
			return r
		}
	case packet.OpPlace:
		return "keyed state (event buffers the data path creates) is not in " + b.prg.Name + "'s program"
	case packet.OpLoad, packet.OpStore:
		if r := prg.RegisterFits(b.prg, b.lpg.Schema, b.lpg.Schema.Registers[e.op.Register]); r != "" {
			return r
		}
	}
	most, ok := b.prg.Limits["payload_bytes"]
	if !ok {
		return ""
	}
	what := readsPayload(b.lpg.Schema, e.op, func() bool { return ipLengthFixed(b.lpg.Schema, ps(), n) })
	if what == "" {
		return ""
	}
	reach := "none of the payload"
	if most > 0 {
		reach = fmt.Sprintf("at most %d bytes of the payload", most)
	}
	return fmt.Sprintf("%s; %s reads %s (limit payload_bytes)", what, b.prg.Name, reach)
}

// readsPayload says how an operation reads the payload, the bytes after
// the headers the frame's parse found, or "" when it does not: a
// checksum that covers everything after its header (UDP, ICMP) verified,
// or computed unless fixed says the frame's IP length leaves no payload
// to cover; len(h), which is where the frame ends. (place copies the
// payload too; keyed state sends it to the host first.) A header the LPG
// extracts is a header, not payload, whatever node extracts it.
func readsPayload(s *packet.Schema, op *packet.Op, fixed func() bool) string {
	switch op.Kind {
	case packet.OpChecksumVerify, packet.OpChecksumCompute:
		if s.Headers[op.Header].ChecksumKind == packet.ChecksumHeader || op.Kind == packet.OpChecksumCompute && fixed() {
			return ""
		}
		return fmt.Sprintf("%s reads the payload, which the checksum covers", op.Describe(s))
	case packet.OpICRCVerify, packet.OpICRCCompute:
		return fmt.Sprintf("%s reads the payload, which the ICRC covers", op.Describe(s))
	}
	exprs := []*packet.Expr{op.Cond, op.Expr}
	for _, a := range op.Assign {
		exprs = append(exprs, a.Src)
	}
	if op.Kind == packet.OpLookup {
		t := s.Tables[op.Table]
		exprs = append(exprs, t.Keys...)
		for _, ai := range t.Actions {
			for _, a := range s.Actions[ai].Body {
				exprs = append(exprs, a.Src)
			}
		}
	}
	h := -1
	for _, x := range exprs {
		walkExprs(x, func(y *packet.Expr) {
			if y.Kind == packet.ELen && h < 0 {
				h = y.Header
			}
		})
	}
	if h < 0 {
		return ""
	}
	return fmt.Sprintf("len(%s) reads where the frame ends, past its payload", s.Headers[h].Name)
}

// ipLengthFixed reports whether the frames reaching n carry an IP length
// field (ipv4.total_len, ipv6.payload_len) that is one constant on all of
// them: the LPG built the frame (lb-2026's neighbor advertisement sets
// ipv6.payload_len = 32), so a checksum that covers the bytes from its
// header to the end of the IP payload covers what the LPG put there. The
// P4 backend checks, on the frame's layouts, that those bytes are exactly
// the headers from the checksum's header on, and refuses it otherwise.
func ipLengthFixed(s *packet.Schema, ps *dataflow.Predicates, n *dataflow.Node) bool {
	reach := ps.Reaching(n)
	c, ok := predicate.Counterexample(reach, ps.Space.False())
	if !ok {
		return false
	}
	for _, ip := range [][2]string{{"ipv4", "total_len"}, {"ipv6", "payload_len"}} {
		spec, ok := s.Header(ip[0])
		if !ok {
			continue
		}
		if fi, ok := spec.Field(ip[1]); ok {
			f := predicate.Field{Name: s.FieldName(packet.FieldRef{Header: spec.ID, Field: fi}), Width: spec.Fields[fi].Width}
			if predicate.Implies(reach, ps.Space.Eq(f, c.FieldValue(f.Name))) {
				return true
			}
		}
	}
	return false
}

// overTables leaves to the host, when the device's lookups use more
// tables than its limit tables, the lookups of the tables that the frames
// meet last (in the graph's order).
func (b *builder) overTables(order []*dataflow.Node, lpg func(*dataflow.Node) *enode, why map[*enode]string) {
	most, ok := b.prg.Limits["tables"]
	if !ok {
		return
	}
	var tables []int
	for _, n := range order {
		e := lpg(n)
		if e == nil || why[e] != "" || e.op.Kind != packet.OpLookup {
			continue
		}
		if !slices.Contains(tables, e.op.Table) {
			tables = append(tables, e.op.Table)
		}
		if i := slices.Index(tables, e.op.Table); i >= most {
			why[e] = fmt.Sprintf("table %s would be table %d of %s, which holds %d (limit tables; the device keeps those the frames meet first)", b.lpg.Schema.Tables[e.op.Table].Spec.Name, i+1, b.prg.Name, most)
		}
	}
}

// writesFrame reports whether an operation changes the frame's bytes (not
// only metadata).
func writesFrame(s *packet.Schema, op *packet.Op) bool {
	if op.Kind == packet.OpCut { // shortens it (seed 20261210, model 5033)
		return true
	}
	w, patched := writes(s, op)
	return slices.ContainsFunc(append(w, patched...), func(f packet.FieldRef) bool { return !s.Headers[f.Header].Metadata })
}

// deviceGraph is g with every edge into a host node (why) led to a new
// PuntNode instead, without what the device then no longer reaches. It
// returns the enodes the device runs.
func (b *builder) deviceGraph(g *dataflow.Graph, why map[*enode]string) (*dataflow.Graph, map[*enode]bool, error) {
	if g.Node(PuntNode) != nil {
		return nil, nil, fmt.Errorf("embedded graph %s: a node is named %s, the device's punt to the host", g.Name, PuntNode)
	}
	punt := &enode{name: PuntNode, isSink: true,
		tmpl: &dataflow.Node{Name: PuntNode, Kind: dataflow.FNode, Host: true},
		op:   &packet.Op{Kind: packet.OpEmit, Header: -1, After: -1, Table: -1}}
	clones := map[*enode]*enode{}
	var live []*enode
	for _, e := range b.nodes {
		if !e.removed && why[e] == "" {
			c := *e
			clones[e] = &c
			live = append(live, e)
		}
	}
	to := func(ts []*enode) []*enode {
		var out []*enode
		for _, t := range ts {
			x := clones[t]
			if x == nil {
				x = punt
			}
			if !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
		return out
	}
	var src *enode
	for _, e := range live {
		c := clones[e]
		c.ports = nil
		for _, p := range e.ports {
			c.ports = append(c.ports, &eport{name: p.name, pred: p.pred, out: to(p.out), spawn: to(p.spawn)})
		}
		if e.source && src == nil {
			src = c
		}
	}
	// What the device still reaches from its source.
	kept := map[*enode]bool{}
	var walk func(c *enode)
	walk = func(c *enode) {
		if c == nil || kept[c] {
			return
		}
		kept[c] = true
		for _, p := range c.ports {
			for _, t := range slices.Concat(p.out, p.spawn) {
				walk(t)
			}
		}
	}
	walk(src)
	ns := []*enode{}
	in := map[*enode]bool{}
	for _, e := range live {
		c := clones[e]
		c.removed = !kept[c]
		in[e] = kept[c]
		ns = append(ns, c)
	}
	ns = append(ns, punt)
	d, _, err := materialize(g.Name, g.Kind, g.Schema, ns)
	if err != nil {
		return nil, nil, err
	}
	return d, in, nil
}
