package embed

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
)

// Receive-side offload of a stateful stage: a PRG hardware node upstream
// of an Rx sink places segments into the LPG's keyed state (an RDMA NIC,
// seed 004), so the LPG's place in the copy behind that sink has already
// been done. The copy is then taken over: what reaches the sink goes on
// where the LPG's place sends the port the hardware took, and the copy's
// nodes from the sink to the place go. That is sound only if the LPG's
// place would have seen the very values the hardware's did and would have
// been reached by the same packets:
//
//   - the same state, the same offset and size expressions, and the sink
//     takes one port of the hardware's place (the host knows which);
//   - every LPG node between the sink and the place, on the packets the
//     hardware placed (predicates computed as if the hardware had not yet
//     placed them), only decides with one outcome, or writes what a
//     hardware node before the place wrote by the same operation (a set
//     of the same expression, a lookup of the same table) whose inputs no
//     node in between writes; no packet the hardware placed may end in the
//     LPG before the place;
//   - every hardware write of what the place reads (key, length, offset,
//     size) is one the LPG does too;
//   - the device's memory cannot run out before the state's caps evict.
//
// Otherwise the copy stays in software, with the reason and a class of
// the packets concerned.

// rxTakeover records what happened to one LPG place's copies.
type rxTakeover struct {
	hw      *enode            // the hardware place
	done    []string          // sinks behind which it was taken over
	refused map[string]string // sink -> reason
	class   map[string]string // sink -> class of the packets concerned
}

// takeOverRx takes over the LPG places behind sinks fed by a hardware place
// of the same state; an LPG place with no hardware place upstream of its
// sink may be folded by pruneRx when the sink's claims decide its outcome.
func (b *builder) takeOverRx() error {
	b.rxPlaces = map[*dataflow.Node]*rxTakeover{}
	var hws []*enode
	for _, x := range b.nodes {
		if !x.lpg && x.hardware && x.op != nil && x.op.Kind == packet.OpPlace {
			hws = append(hws, x)
		}
	}
	for _, s := range b.rxSinks {
		sinkE := b.prgOf[s]
		for _, e := range b.nodes {
			if e.sink != s.Name || e.removed || e.op == nil || e.op.Kind != packet.OpPlace {
				continue
			}
			i := slices.IndexFunc(hws, func(h *enode) bool { return h.op.State == e.op.State && b.downstream(h, sinkE) })
			if i < 0 {
				e.claimed = true
				continue
			}
			h := hws[i]
			t := b.rxPlaces[e.tmpl]
			if t == nil {
				t = &rxTakeover{hw: h, refused: map[string]string{}, class: map[string]string{}}
				b.rxPlaces[e.tmpl] = t
			}
			walked, k, why, class, err := b.canTakeOver(h, sinkE, e)
			if err != nil {
				return err
			}
			if why != "" {
				t.refused[s.Name], t.class[s.Name] = why, class
				continue
			}
			t.done = append(t.done, s.Name)
			sinkE.ports[0].out = slices.Clone(e.ports[k].out)
			for _, w := range walked {
				b.remove(w, "done by "+b.prg.Name+" before its "+h.name)
			}
			b.remove(e, "taken over by "+b.prg.Name+"'s "+h.name)
		}
	}
	return nil
}

// canTakeOver checks the LPG place e behind sink against the hardware
// place h. It returns the LPG nodes between the sink and e and the port of
// h the sink takes, or why not and a class of the packets concerned.
func (b *builder) canTakeOver(h, sink, e *enode) (walked []*enode, port int, why, class string, err error) {
	hwName := b.prg.Name + "'s " + h.name
	var ports []string
	for i, p := range h.ports {
		if slices.Contains(p.out, sink) {
			port = i
			ports = append(ports, p.name)
		}
	}
	// The packets as the hardware place saw them, on their way to sink.
	op := h.op
	h.op = &packet.Op{Kind: packet.OpNop, Header: -1, After: -1, Table: -1}
	g, of, err := b.graph()
	h.op = op
	if err != nil {
		return nil, 0, "", "", err
	}
	if g.Order() == nil {
		return nil, 0, "", "", fmt.Errorf("embedded graph %s has a cycle", g.Name)
	}
	ps := g.PredicatesIn(b.space)
	atSink := classOf(ps.Reaching(of[sink]))
	switch {
	case len(ports) != 1:
		return nil, 0, fmt.Sprintf("%s reaches %s by %d ports (%s): the host cannot tell how it placed a segment", hwName, sink.name, len(ports), strings.Join(ports, ", ")), atSink, nil
	case !sameExpr(h.op.Offset, e.op.Offset):
		return nil, 0, fmt.Sprintf("%s places at %s, %s at %s", hwName, h.op.Offset.Text, e.tmpl.Name, e.op.Offset.Text), atSink, nil
	case !sameExpr(h.op.Size, e.op.Size):
		return nil, 0, fmt.Sprintf("%s places %s bytes, %s %s", hwName, exprText(h.op.Size), e.tmpl.Name, exprText(e.op.Size)), atSink, nil
	}
	if why := b.placeCaps(e.op.State); why != "" {
		return nil, 0, why, atSink, nil
	}
	schema := b.lpg.Schema
	seen := map[*enode]bool{}
	reached := false
	var walk func(n *enode) (string, string)
	walk = func(n *enode) (string, string) {
		reached = reached || n == e
		if n == e || seen[n] {
			return "", ""
		}
		seen[n] = true
		dn := of[n]
		if !n.lpg || n.sink != e.sink || n.tmpl.Kind != dataflow.FNode || n.op.Terminal() {
			return fmt.Sprintf("a segment %s placed ends at %s in the LPG", hwName, n.display()), classOf(ps.Reaching(dn))
		}
		switch n.op.Kind {
		case packet.OpTest, packet.OpSwitch, packet.OpChecksumVerify, packet.OpICRCVerify, packet.OpParse, packet.OpNop:
		case packet.OpExtract:
			if h := schema.Headers[n.op.Header].Name; !predicate.Implies(ps.Reaching(dn), b.space.Valid(h)) {
				return fmt.Sprintf("%s extracts %s, which %s did not before placing", n.display(), h, b.prg.Name), classOf(ps.Reaching(dn).And(b.space.Valid(h).Not()))
			}
		case packet.OpSet, packet.OpLookup:
			if why := b.sameValues(n, h, walked); why != "" {
				return why, classOf(ps.Reaching(dn))
			}
		case packet.OpPop:
			// Gone with the copy: sound if no segment leaves the place by
			// the sink's port with the bytes the pop would have changed.
			if !b.bytesGone(e, e.ports[port]) {
				return fmt.Sprintf("%s pops %s, and segments leave %s by %s with their bytes", n.display(), schema.Headers[n.op.Header].Name, e.tmpl.Name, e.ports[port].name), classOf(ps.Reaching(dn))
			}
		default:
			return fmt.Sprintf("%s does %s, which %s did not do before placing", n.display(), n.op.Kind, b.prg.Name), classOf(ps.Reaching(dn))
		}
		walked = append(walked, n)
		for i, p := range n.ports {
			if !predicate.Satisfiable(ps.Port(dn.Ports[i])) {
				continue
			}
			if len(p.spawn) > 0 {
				return fmt.Sprintf("%s spawns a packet before the place", n.display()), classOf(ps.Port(dn.Ports[i]))
			}
			for _, t := range p.out {
				if why, class := walk(t); why != "" {
					return why, class
				}
			}
		}
		return "", ""
	}
	for _, t := range sink.ports[0].out {
		if why, class = walk(t); why != "" {
			return nil, 0, why, class, nil
		}
	}
	if !reached {
		return nil, 0, fmt.Sprintf("no segment %s placed reaches %s", hwName, e.tmpl.Name), "", nil
	}
	if why := b.hardwareWrites(h, e, walked); why != "" {
		return nil, 0, why, classOf(ps.Reaching(of[h])), nil
	}
	return walked, port, "", "", nil
}

// sameValues says why the LPG writer n might write other values than the
// hardware did before h, or "": a hardware node before h does the same
// work (the same expression into each field, a lookup of the same table),
// and no node between it and n writes what it reads.
func (b *builder) sameValues(n, h *enode, walkedBefore []*enode) string {
	schema := b.lpg.Schema
	for _, x := range b.nodes {
		if x.removed || x.lpg || !x.hardware || x.op == nil || !sameWork(n.op, x.op) || !sameSources(n.op, x.op) || !b.downstream(x, h) {
			continue
		}
		var between []*enode
		for _, y := range b.nodes {
			if !y.removed && !y.lpg && y != x && y != h && y.op != nil && b.downstream(x, y) && b.downstream(y, h) {
				between = append(between, y)
			}
		}
		// Walked sets and lookups have been shown to write what the
		// hardware wrote; a pop has not.
		for _, y := range walkedBefore {
			if y.op.Kind == packet.OpPop && b.downstream(y, n) {
				between = append(between, y)
			}
		}
		for _, y := range between {
			w, _ := writes(schema, y.op)
			for _, f := range w {
				if reads(schema, n.op, f) {
					return fmt.Sprintf("%s writes %s between %s and %s: %s may see another value", y.display(), schema.FieldName(f), x.name, n.display(), n.display())
				}
			}
		}
		return ""
	}
	w, _ := writes(schema, n.op)
	return fmt.Sprintf("%s writes %s, which %s reads, and no hardware node of %s computes it before placing", n.display(), fieldNames(schema, w), n.display(), b.prg.Name)
}

// hardwareWrites says which hardware write before h of what the place
// reads the LPG does not do on its way to e, or "".
func (b *builder) hardwareWrites(h, e *enode, walked []*enode) string {
	schema := b.lpg.Schema
	read := placeReads(schema, e.op)
	for _, x := range b.nodes {
		if x.removed || x.lpg || x.op == nil || !b.downstream(x, h) || x == h {
			continue
		}
		w, _ := writes(schema, x.op)
		for _, f := range w {
			if !slices.Contains(read, f) {
				continue
			}
			if !slices.ContainsFunc(walked, func(n *enode) bool { return sameWork(n.op, x.op) && sameSources(n.op, x.op) }) {
				return fmt.Sprintf("%s's %s writes %s, which its place reads, and the LPG does not on the way to %s: the keys or offsets could differ", b.prg.Name, x.name, schema.FieldName(f), e.tmpl.Name)
			}
		}
	}
	return ""
}

// placeCaps says why a device placing into state st could run out before
// the state's caps evict, or "". The device declares how long one buffer
// is (place_buffer), how many bytes all its buffers hold (place_memory)
// and how many events it tracks (place_events); it keeps the state's own
// caps and timeout, so it must never be the first to run out.
func (b *builder) placeCaps(st int) string {
	def := b.lpg.Schema.States[st]
	lim := b.prg.Limits
	if n, ok := lim["place_events"]; ok && uint64(n) < uint64(def.Events) {
		return fmt.Sprintf("%s tracks %d events and state %s keeps up to %d in progress: %s would drop events the LPG keeps (limit place_events)", b.prg.Name, n, def.Name, def.Events, b.prg.Name)
	}
	mem, ok := lim["place_memory"]
	if !ok {
		return ""
	}
	per := def.Max
	if buf, ok := lim["place_buffer"]; ok {
		per = min(per, uint64(buf))
	}
	need := def.Bytes
	if uint64(def.Events) <= need/max(per, 1) {
		need = uint64(def.Events) * per
	}
	if uint64(mem) < need {
		return fmt.Sprintf("%s holds %d bytes of event buffers and state %s may have %d in progress (min(bytes %d, events %d x %d)): %s would run out before the state's caps evict (limit place_memory)",
			b.prg.Name, mem, def.Name, need, def.Bytes, def.Events, per, b.prg.Name)
	}
	return ""
}

// placeReads lists the fields a place reads: the state's keys and length,
// the offset and the size.
func placeReads(s *packet.Schema, op *packet.Op) []packet.FieldRef {
	def := s.States[op.State]
	var out []packet.FieldRef
	for _, x := range append(slices.Clone(def.Keys), def.Length, op.Offset, op.Size) {
		out = appendFields(out, x)
	}
	return out
}

func appendFields(out []packet.FieldRef, x *packet.Expr) []packet.FieldRef {
	if x == nil {
		return out
	}
	if x.Kind == packet.EField && !slices.Contains(out, x.Field) {
		out = append(out, x.Field)
	}
	return appendFields(appendFields(out, x.A), x.B)
}

// sameSources: two sets assign the same expressions (sameWork has checked
// the fields); other operations have no sources of their own.
func sameSources(a, b *packet.Op) bool {
	if a.Kind != packet.OpSet {
		return true
	}
	for _, x := range a.Assign {
		i := slices.IndexFunc(b.Assign, func(y packet.Assign) bool { return y.Dst == x.Dst })
		if i < 0 || !sameExpr(x.Src, b.Assign[i].Src) {
			return false
		}
	}
	return len(a.Assign) == len(b.Assign)
}

// sameExpr compares expressions by their source text (both from one
// schema, so the same text names the same fields).
func sameExpr(a, b *packet.Expr) bool { return exprText(a) == exprText(b) }

func exprText(x *packet.Expr) string {
	if x == nil {
		return "the rest of the frame"
	}
	return x.Text
}

func fieldNames(s *packet.Schema, fs []packet.FieldRef) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = s.FieldName(f)
	}
	return strings.Join(names, ", ")
}

// placeRx sets the placements of the LPG places seen by takeOverRx, once
// pruning has said which software copies still run: hardware where every
// copy was taken over, split where copies behind sinks the hardware place
// does not feed still run (the PRG's tests on the way to it are the
// residual guard), software where a takeover was refused.
func (b *builder) placeRx() error {
	if len(b.rxPlaces) == 0 {
		return nil
	}
	// The guard speaks of the packets as the PRG saw them: the LPG's pops
	// on the way to its place are left out.
	nop := &packet.Op{Kind: packet.OpNop, Header: -1, After: -1, Table: -1}
	popped := map[*enode]*packet.Op{}
	for _, e := range b.nodes {
		if e.lpg && !e.removed && e.op != nil && e.op.Kind == packet.OpPop {
			popped[e], e.op = e.op, nop
		}
	}
	g, of, err := b.graph()
	for e, op := range popped {
		e.op = op
	}
	if err != nil {
		return err
	}
	ps := g.PredicatesIn(b.space)
	for _, n := range b.lpg.Nodes {
		t := b.rxPlaces[n]
		if t == nil {
			continue
		}
		p := b.placeOf(n)
		var alive []predicate.Pred
		for _, e := range b.copies[n] {
			if !e.removed && t.refused[e.sink] == "" {
				alive = append(alive, ps.Reaching(of[e]))
			}
		}
		hwReach := ps.Reaching(of[t.hw])
		switch {
		case len(t.refused) > 0:
			var sinks []string
			for s := range t.refused {
				sinks = append(sinks, s)
			}
			s := strings.Split(b.joinSinks(sinks), ", ")[0]
			p.Kind, p.Reason, p.Counterexample = Software, fmt.Sprintf("not taken over by %s's %s behind %s: %s", b.prg.Name, t.hw.name, b.joinSinks(sinks), t.refused[s]), t.class[s]
		case len(t.done) == 0:
		case len(alive) == 0:
			p.Kind, p.Hardware = Hardware, t.hw.name
			p.Reason = fmt.Sprintf("%s places every segment that reaches it as %s would, with the same key, offset and size; taken over behind %s", t.hw.name, n.Name, b.joinSinks(t.done))
		default:
			soft := b.space.Or(alive...)
			guard, text := b.placeGuard(t.hw, soft, ps, of)
			class := ""
			if c, ok := predicate.Counterexample(soft.And(guard), hwReach); ok {
				class = c.Relative(soft.Or(hwReach)).String()
			}
			p.Kind, p.Hardware, p.Guard, p.Counterexample = Split, t.hw.name, text, class
			p.Reason = fmt.Sprintf("%s places what reaches it, taken over behind %s; the segments it does not place reach %s in software", t.hw.name, b.joinSinks(t.done), n.Name)
		}
	}
	return nil
}

// placeGuard is the residual guard of a split place: the PRG's tests on
// the way to the hardware place whose other port some packet that still
// reaches the software place took.
func (b *builder) placeGuard(hw *enode, soft predicate.Pred, ps *dataflow.Predicates, of map[*enode]*dataflow.Node) (predicate.Pred, string) {
	var terms []predicate.Pred
	for _, x := range b.nodes {
		if x.removed || x.lpg || x.op == nil || x.op.Kind != packet.OpTest || !b.downstream(x, hw) {
			continue
		}
		for i, p := range x.ports {
			if b.leadsTo(p, hw) {
				continue
			}
			if c := ps.Port(of[x].Ports[i]); predicate.Satisfiable(c.And(soft)) {
				t := ps.Cond(x.op.Cond)
				if p.name == packet.PortFalse {
					t = t.Not()
				}
				terms = append(terms, t)
			}
		}
	}
	if len(terms) == 0 {
		return b.space.True(), "the PRG does not send it to " + hw.name
	}
	g := b.space.Or(terms...)
	return g, g.String()
}

// splitPop says whether the LPG pop e is done by a header split: the
// packets reaching it carry the PRG's claim split(h) (the NIC delivered
// header h and those before it in a buffer of their own, the payload past
// them), and the pop changes nothing the LPG shows afterwards: no node
// after it reads h, and every packet that leaves with its bytes has had
// them replaced by a place's completed event. If not, why.
func (b *builder) splitPop(e *enode, reach predicate.Pred) (string, bool) {
	h := b.lpg.Schema.Headers[e.op.Header].Name
	if !predicate.Implies(reach, b.space.Symbol("split("+h+")")) {
		if split := b.splitHeaders(); len(split) > 0 && !b.parsedByPRG(e.op.Header) {
			return fmt.Sprintf("%s splits headers after %s, never after %s, which it does not parse", b.prg.Name, strings.Join(split, ", "), h), false
		}
		return "", false
	}
	if !b.bytesGone(e, e.ports[0]) {
		return fmt.Sprintf("%s splits after %s, but packets leave with the bytes %s's pop would remove", b.prg.Name, h, e.tmpl.Name), false
	}
	return "", true
}

// parsedByPRG reports whether a PRG parse can find header h: the parse
// graph leads to it, or a parse starts at it. A split ends at a header
// the NIC parses, never after one it does not (EJFAT's LB and RE).
func (b *builder) parsedByPRG(h int) bool {
	s := b.lpg.Schema
	if slices.ContainsFunc(s.Next, func(e packet.ParseEdge) bool { return e.To == h }) {
		return true
	}
	return slices.ContainsFunc(b.prg.Nodes, func(n *dataflow.Node) bool {
		return n.Kind == dataflow.FNode && n.Op.Kind == packet.OpParse && n.Op.Header == h
	})
}

// splitHeaders lists the headers the PRG's ports claim it splits after.
func (b *builder) splitHeaders() []string {
	var out []string
	for _, n := range b.prg.Nodes {
		for _, p := range n.Ports {
			if h, ok := strings.CutPrefix(p.Pred, "split("); ok && !slices.Contains(out, strings.TrimSuffix(h, ")")) {
				out = append(out, strings.TrimSuffix(h, ")"))
			}
		}
	}
	return out
}

// bytesGone reports whether every packet that leaves by port p of e (a pop
// or a place) and goes on with its bytes to an end other than a drop has
// them replaced on the way (a place's complete port), and no node before
// that reads the header e pops.
func (b *builder) bytesGone(e *enode, p *eport) bool {
	schema := b.lpg.Schema
	seen := map[*enode]bool{}
	var walk func(n *enode, replaced bool) bool
	walk = func(n *enode, replaced bool) bool {
		if n.removed || seen[n] {
			return true
		}
		seen[n] = true
		if n.op == nil || n.tmpl.Kind != dataflow.FNode {
			return replaced
		}
		if e.op.Kind == packet.OpPop && !replaced && readsHeader(schema, n.op, e.op.Header) {
			return false
		}
		if n.op.Terminal() || n.isSink {
			return replaced || n.op.Kind == packet.OpDrop
		}
		for i, q := range n.ports {
			r := replaced || (n.op.Kind == packet.OpPlace && i == packet.PlaceComplete)
			for _, t := range append(slices.Clone(q.out), q.spawn...) {
				if !walk(t, r) {
					return false
				}
			}
		}
		return true
	}
	replaced := e.op.Kind == packet.OpPlace && slices.Index(e.ports, p) == packet.PlaceComplete
	for _, t := range p.out {
		if !walk(t, replaced) {
			return false
		}
	}
	return len(p.spawn) == 0
}

// readsHeader reports whether an operation reads header h: a field of it,
// its validity or its length.
func readsHeader(s *packet.Schema, op *packet.Op, h int) bool {
	for f := range s.Headers[h].Fields {
		if reads(s, op, packet.FieldRef{Header: h, Field: f}) {
			return true
		}
	}
	exprs := []*packet.Expr{op.Cond, op.Expr}
	if op.Kind == packet.OpPlace {
		def := s.States[op.State]
		exprs = append(append(exprs, def.Keys...), def.Length, op.Offset, op.Size)
	}
	found := false
	for _, x := range exprs {
		walkExprs(x, func(y *packet.Expr) {
			found = found || ((y.Kind == packet.EValid || y.Kind == packet.ELen) && y.Header == h) || (y.Kind == packet.EField && y.Field.Header == h)
		})
	}
	return found
}

func walkExprs(x *packet.Expr, f func(*packet.Expr)) {
	if x == nil {
		return
	}
	f(x)
	walkExprs(x.A, f)
	walkExprs(x.B, f)
}

// classOf is one packet class of p, the one with the fewest constraints.
func classOf(p predicate.Pred) string {
	c, _ := predicate.Counterexample(p, p.Not())
	return c.String()
}
