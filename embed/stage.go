package embed

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
)

// A stage is a region of LPG nodes that the PRG's hardware may do instead,
// as a whole: one node, a lookup and the rewrite its action feeds, a pop
// and the checksum patch that goes with it. It has one way in (its entry:
// no edge from outside leads to another of its nodes) and one way on (its
// exit, which every packet not dropped inside reaches next); packets end
// inside it at drop nodes only.
type stage struct {
	entry, exit *enode
	nodes       []*enode // topological order
	// hw maps a work node of the stage to the hardware node doing the
	// same work downstream of the exit.
	hw map[*enode]*enode
}

// isWork reports whether an operation changes the packet or its state.
func isWork(op *packet.Op) bool {
	switch op.Kind {
	case packet.OpSet, packet.OpPop, packet.OpPush, packet.OpChecksumCompute, packet.OpLookup:
		return true
	}
	return false
}

// inStage reports whether an operation may be part of a stage: work, the
// tests that route between it, and drops.
func inStage(op *packet.Op) bool {
	return isWork(op) || op.Kind == packet.OpTest || op.Kind == packet.OpSwitch || op.Kind == packet.OpDrop
}

func (s *stage) String() string {
	if len(s.nodes) == 1 {
		return s.entry.display()
	}
	return fmt.Sprintf("%s..%s (%d nodes)", s.entry.display(), s.nodes[len(s.nodes)-1].display(), len(s.nodes))
}

// hwNames lists the hardware nodes doing the stage's work, in the stage's
// order, once each.
func (s *stage) hwNames() string {
	var out []string
	for _, n := range s.nodes {
		if h := s.hw[n]; h != nil && !slices.Contains(out, h.name) {
			out = append(out, h.name)
		}
	}
	return strings.Join(out, ", ")
}

// offloadTx tries, for every LPG node in topological order, the stages it
// enters, smallest first, against the PRG's hardware: a stage moves when
// hardware nodes downstream do all its work (every packet class its work
// nodes see reaches the matching hardware node), no node left between
// them reads or writes what the move changes, its tables fit the PRG's
// limits, and the predicates where packets end are BDD-equivalent without
// it (drops compared as one end, what the stage writes forgotten there:
// a dropped packet's bytes do not matter). Failing that it moves behind a
// residual guard; failing that it stays, with the reason.
func (b *builder) offloadTx() error {
	taken := map[*enode]bool{}  // hardware nodes doing a moved stage's work
	done := map[*enode]bool{}   // LPG nodes placed by a stage
	refused := map[*enode]int{} // size of the stage a refusal came from
	defer b.freshFrames()()
	order, err := b.lpgOrder()
	if err != nil {
		return err
	}
	// Only a stage with work some hardware node does can move.
	var cands []*enode
	for _, e := range order {
		if isWork(e.op) && slices.ContainsFunc(b.nodes, func(x *enode) bool {
			return !x.removed && !x.lpg && x.hardware && x.op != nil && sameWork(e.op, x.op)
		}) {
			cands = append(cands, e)
		}
	}
	var cur *current
	for _, e := range order {
		if done[e] || e.removed {
			continue
		}
		reach := b.reach(e)
		if !slices.ContainsFunc(cands, func(c *enode) bool { return reach[c] && !done[c] }) {
			continue
		}
		for _, y := range b.exits(e, order, reach) {
			nodes, ok := b.region(e, y, order)
			if !ok || slices.ContainsFunc(nodes, func(n *enode) bool { return done[n] }) {
				continue
			}
			st := &stage{entry: e, exit: y, nodes: nodes, hw: b.match(nodes, y, taken)}
			if len(st.hw) == 0 || (len(nodes) == 1 && len(e.ports) == 1 && y != e.ports[0].out[0]) {
				continue
			}
			if cur == nil {
				if cur, err = b.current(); err != nil {
					return err
				}
			}
			o, err := b.tryStage(st, cur)
			if err != nil {
				return err
			}
			if o.hw == "" {
				b.refuse(st, o, done, refused)
				continue
			}
			for _, n := range nodes {
				done[n] = true
			}
			for _, h := range st.hw {
				taken[h] = true
			}
			b.placeStage(st, o)
			cur = nil
			break
		}
	}
	b.txTaken = taken
	return nil
}

// changes is the class of packets reaching e, a Tx hardware node working
// on every frame, that it changes: all, but for a checksum computed where
// the predicates show it good (and present) already, or its header absent.
func (b *builder) changes(cur *current, e *enode) predicate.Pred {
	reach := cur.ps.Reaching(cur.of[e])
	if e.op.Kind != packet.OpChecksumCompute {
		return reach
	}
	h := e.op.Header
	spec := b.lpg.Schema.Headers[h]
	good := cur.ps.CsumOK(h)
	if spec.ChecksumOptional {
		// A zero is an absent checksum, good as it is, which the
		// hardware would fill in.
		good = good.And(b.space.Eq(cur.ps.Field(packet.FieldRef{Header: h, Field: spec.Checksum}), packet.Value{}).Not())
	}
	return reach.And(b.space.Valid(spec.Name).Not().Or(good).Not())
}

// checkTxWrites refuses a PRG whose Tx hardware changes what the LPG
// sends where no LPG stage moved to it: a node that computes a checksum,
// rewrites, pushes or pops for every frame, not for the frames whose
// stage it took over, would make the embedded graph send other bytes than
// the LPG (a forwarded frame's checksum recomputed). A checksum
// computation is believed where the predicates say the checksum is good
// already, or the header absent: it changes nothing there. Hardware the
// driver enables frame by frame is a [hardware, rule] node, which works
// only where the embedder installs it. A node whose port claims what it
// did (pred "csum_ok(udp)") is believed, as every claim is: nsc verify
// tests it.
func (b *builder) checkTxWrites() error {
	taken := b.txTaken
	if b.txEntry == nil {
		return nil
	}
	var cur *current
	tx := b.reach(b.txEntry)
	for _, e := range b.nodes {
		if e.lpg || !e.hardware || !tx[e] || !e.live() || e.op == nil || taken[e] || !isWork(e.op) || e.op.Kind == packet.OpLookup ||
			slices.ContainsFunc(e.ports, func(p *eport) bool { return p.pred != "" }) {
			continue
		}
		if cur == nil {
			var err error
			if cur, err = b.current(); err != nil {
				return err
			}
		}
		if b.changes(cur, e).IsFalse() {
			continue
		}
		what := "rewrites"
		switch h := e.op.Header; e.op.Kind {
		case packet.OpChecksumCompute:
			what = "computes the " + b.lpg.Schema.Headers[h].Name + " checksum of"
		case packet.OpPush:
			what = "pushes " + b.lpg.Schema.Headers[h].Name + " into"
		case packet.OpPop:
			what = "pops " + b.lpg.Schema.Headers[h].Name + " from"
		}
		return fmt.Errorf("%s: prg %s: Tx node %s %s every frame it sees, and lpg %s sends frames it has not done that to: the embedded graph would send other bytes (mark the node [hardware, rule] if the driver asks for it frame by frame)", e.tmpl.Pos, b.prg.Name, e.name, what, b.lpg.Name)
	}
	return nil
}

// freshFrames lets the analysis know what the interpreter does: a frame
// entering at an input that parses nothing has no header yet. Without
// it, a header no path extracted may be valid in the predicates, and such
// phantom classes (an IPv4 LB frame that also has an ICMPv6 header) take
// the LPG's and the hardware's branches differently. It puts a test of
// that behind each such source, its false port to a drop no packet takes,
// and returns what takes them out again. (A parse behind such an input
// finds its headers afresh, dataflow's changedSinceParse: before it did,
// "no header yet" made every path through a PRG's Rx parse false, and
// any Tx stage equivalent there; seed 99, model 17.)
func (b *builder) freshFrames() func() {
	var fresh *packet.Expr
	for _, h := range b.lpg.Schema.Headers {
		if h.Metadata {
			continue
		}
		t := &packet.Expr{Kind: packet.ENot, Width: 1, A: &packet.Expr{Kind: packet.EValid, Width: 1, Header: h.ID, Text: "valid(" + h.Name + ")"}, Text: "!valid(" + h.Name + ")"}
		if fresh != nil {
			t = &packet.Expr{Kind: packet.EAnd, Width: 1, A: fresh, B: t, Text: fresh.Text + " && " + t.Text}
		}
		fresh = t
	}
	var added []*enode
	for _, e := range slices.Clone(b.nodes) {
		if fresh == nil || e.removed || !e.source || e.op == nil || e.op.Kind != packet.OpInput || e.op.Header >= 0 {
			continue
		}
		tmpl := &dataflow.Node{Name: e.name + "Fresh", Kind: dataflow.FNode, Pos: e.tmpl.Pos}
		test := &enode{name: tmpl.Name, tmpl: tmpl, op: &packet.Op{Kind: packet.OpTest, Cond: fresh, Header: -1, After: -1, Table: -1},
			ports: []*eport{{name: packet.PortTrue, out: e.ports[0].out}, {name: packet.PortFalse}}}
		dtmpl := &dataflow.Node{Name: e.name + "Stale", Kind: dataflow.FNode, Pos: e.tmpl.Pos}
		drop := &enode{name: dtmpl.Name, tmpl: dtmpl, op: &packet.Op{Kind: packet.OpDrop, Header: -1, After: -1, Table: -1}}
		test.ports[1].out = []*enode{drop}
		e.ports[0].out = []*enode{test}
		b.nodes = append(b.nodes, test, drop)
		added = append(added, test, drop)
	}
	return func() {
		for i := 0; i < len(added); i += 2 {
			redirect(b.nodes, added[i], added[i].ports[0].out)
			added[i].removed, added[i+1].removed = true, true
		}
	}
}

// current is the embedded graph as it stands, with its predicates.
type current struct {
	ps *dataflow.Predicates
	of map[*enode]*dataflow.Node
}

func (b *builder) current() (*current, error) {
	g, of, err := b.graph()
	if err != nil {
		return nil, err
	}
	if g.Order() == nil {
		return nil, fmt.Errorf("embedded graph %s has a cycle", g.Name)
	}
	return &current{g.PredicatesIn(b.space), of}, nil
}

// lpgOrder lists the live LPG F-nodes in topological order.
func (b *builder) lpgOrder() ([]*enode, error) {
	g, of, err := b.graph()
	if err != nil {
		return nil, err
	}
	at := map[*dataflow.Node]*enode{}
	for e, n := range of {
		at[n] = e
	}
	var out []*enode
	for _, n := range g.Order() {
		if e := at[n]; e.lpg && e.tmpl.Kind == dataflow.FNode && e.op != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// exits lists the nodes every packet from e that is not dropped passes
// (e's post-dominators), nearest first: LPG nodes, then the PRG's Tx
// entry where the LPG hands packets over. The nearest gives the smallest
// stage: a node alone before the stage it starts.
func (b *builder) exits(e *enode, order []*enode, reach map[*enode]bool) []*enode {
	var out []*enode
	for _, y := range order[slices.Index(order, e)+1:] {
		if reach[y] && !b.endsAvoiding(e, y) {
			out = append(out, y)
		}
	}
	if b.txEntry != nil && reach[b.txEntry] && !b.endsAvoiding(e, b.txEntry) {
		out = append(out, b.txEntry)
	}
	return out
}

// reach is the set of live nodes downstream of e, e included.
func (b *builder) reach(e *enode) map[*enode]bool {
	seen := map[*enode]bool{}
	var walk func(n *enode)
	walk = func(n *enode) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, p := range n.ports {
			for _, t := range p.out {
				if !t.removed {
					walk(t)
				}
			}
		}
	}
	walk(e)
	return seen
}

// endsAvoiding reports whether a packet from e can end somewhere other
// than a drop without passing y.
func (b *builder) endsAvoiding(e, y *enode) bool {
	seen := map[*enode]bool{}
	var walk func(n *enode) bool
	walk = func(n *enode) bool {
		if n == y || seen[n] {
			return false
		}
		seen[n] = true
		if n.op != nil && n.op.Kind == packet.OpDrop {
			return false
		}
		next := false
		for _, p := range n.ports {
			for _, t := range p.out {
				if !t.removed {
					next = true
					if walk(t) {
						return true
					}
				}
			}
		}
		return !next
	}
	return walk(e)
}

// region collects the stage from e up to (not including) y, in order; ok
// is false if it holds a node that cannot be part of a stage or has a
// second way in.
func (b *builder) region(e, y *enode, order []*enode) ([]*enode, bool) {
	in := map[*enode]bool{}
	var walk func(n *enode) bool
	walk = func(n *enode) bool {
		if n == y || in[n] {
			return true
		}
		if !n.lpg || n.removed || n.tmpl.Kind != dataflow.FNode || n.op == nil || !inStage(n.op) {
			return false
		}
		in[n] = true
		for _, p := range n.ports {
			if len(p.spawn) > 0 {
				return false
			}
			for _, t := range p.out {
				if !t.removed && !walk(t) {
					return false
				}
			}
		}
		return true
	}
	if !walk(e) {
		return nil, false
	}
	for _, x := range b.nodes {
		if x.removed || in[x] {
			continue
		}
		for _, p := range x.ports {
			for _, t := range slices.Concat(p.out, p.spawn) {
				if in[t] && t != e {
					return nil, false
				}
			}
		}
	}
	var out []*enode
	for _, n := range order {
		if in[n] {
			out = append(out, n)
		}
	}
	return out, true
}

// match finds, for each work node of the stage, a hardware node
// downstream of the exit doing the same work, not taken by another stage.
func (b *builder) match(nodes []*enode, y *enode, taken map[*enode]bool) map[*enode]*enode {
	hw := map[*enode]*enode{}
	used := map[*enode]bool{}
	for _, w := range nodes {
		if !isWork(w.op) {
			continue
		}
		for _, x := range b.nodes {
			if !x.removed && !x.lpg && x.hardware && x.op != nil && !taken[x] && !used[x] && sameWork(w.op, x.op) && b.downstream(y, x) {
				hw[w], used[x] = x, true
				break
			}
		}
	}
	return hw
}

// tryStage decides a stage: hardware, split behind a residual guard, or
// software with the reason and a counterexample.
func (b *builder) tryStage(st *stage, cur *current) (outcome, error) {
	first := st.hw[st.nodes[slices.IndexFunc(st.nodes, func(n *enode) bool { return st.hw[n] != nil })]]
	for _, n := range st.nodes {
		if h := st.hw[n]; h != nil && n.op.Kind == packet.OpLookup {
			if why := b.overLimits(n); why != "" {
				return outcome{reason: fmt.Sprintf("%s could do it, but %s", h.name, why)}, nil
			}
		}
	}
	if why := b.dependency(st); why != "" {
		return outcome{reason: why}, nil
	}
	ps := cur.ps
	in := b.stageIn(st, cur)
	// The conditions under which packets go on to the hardware doing a
	// work node's work (or to a node whose port claims the checksum it
	// computes), taken on the packets as they enter the stage: moved, the
	// stage no longer changes them on the way.
	conds := map[*enode]predicate.Pred{}
	for w, h := range st.hw {
		to := append([]*enode{h}, b.claimers(w.op)...)
		conds[w] = b.leadCond(ps, st.exit, func(p *eport) bool {
			return slices.ContainsFunc(to, func(x *enode) bool { return b.leadsTo(p, x) })
		})
	}
	none := b.space.False()
	// Whole: every class the work nodes see is served by the hardware.
	var class, where string
	if w, c, ok := b.uncovered(st, in, none, conds); ok {
		class = c
		where = fmt.Sprintf("without it, packets of class %s reach %s and no hardware node does its work", c, w.display())
	} else {
		at, c, err := b.trial(st, nil)
		if err != nil {
			return outcome{}, err
		}
		if at == "" {
			reason := fmt.Sprintf("%s does it for every packet class: the predicates where packets end are equivalent without %s", first.name, st.entry.display())
			if len(st.nodes) > 1 {
				reason = fmt.Sprintf("stage %s moves whole to %s: the predicates where packets end are equivalent without it", st, st.hwNames())
			}
			return outcome{hw: first.name, reason: reason}, nil
		}
		class = c
		where = fmt.Sprintf("without it, packets of class %s end at %s differently: %s does not do it for them", c, at, first.name)
	}
	// Behind the guard: the classes the hardware's own tests keep away
	// from its work nodes.
	guard, g, ok := b.stageGuard(st, ps, in[st.entry])
	if !ok {
		return outcome{reason: where, counterexample: class}, nil
	}
	if w, c, bad := b.uncovered(st, in, g, conds); bad {
		return outcome{counterexample: c, reason: fmt.Sprintf("even behind the guard %s, packets of class %s reach %s and no hardware node does its work", g, c, w.display())}, nil
	}
	at, _, err := b.trial(st, guard)
	if err != nil {
		return outcome{}, err
	}
	if at != "" {
		return outcome{reason: where, counterexample: class}, nil
	}
	return outcome{hw: first.name, guard: g.String(), counterexample: class,
		reason: fmt.Sprintf("%s %s it only when not (%s); e.g. %s", st.hwNames(), verb(len(st.hw)), g, where)}, nil
}

// stageIn gives, for each node of the stage, the classes of packets
// entering the stage that reach it: the predicate at the entry, narrowed
// by the conditions of the ports on the way (not by the stage's writes:
// the hardware sees the packets as they enter the stage).
func (b *builder) stageIn(st *stage, cur *current) map[*enode]predicate.Pred {
	in := map[*enode]predicate.Pred{st.entry: cur.ps.Reaching(cur.of[st.entry])}
	for _, n := range st.nodes {
		for i, p := range n.ports {
			out := in[n].And(b.portCond(cur.ps, n, i))
			for _, t := range p.out {
				if q, ok := in[t]; ok {
					in[t] = q.Or(out)
				} else {
					in[t] = out
				}
			}
		}
	}
	return in
}

// portCond is the condition of leaving n by its i-th port.
func (b *builder) portCond(ps *dataflow.Predicates, n *enode, i int) predicate.Pred {
	return ps.Condition(n.tmpl, n.tmpl.Ports[i])
}

// leadCond is the condition under which packets leaving from y go on to
// where lead says: every node downstream of y with a port that leads
// there and one that does not adds the OR of the leading ports'
// conditions. A port to drops only counts as leading: once a packet is
// dropped, the work no longer matters.
func (b *builder) leadCond(ps *dataflow.Predicates, y *enode, lead func(*eport) bool) predicate.Pred {
	c := b.space.True()
	for _, t := range b.nodes {
		if t.removed || t.guardOf != "" || t.tmpl.Kind != dataflow.FNode || len(t.ports) < 2 || !b.downstream(y, t) {
			continue
		}
		if !slices.ContainsFunc(t.ports, lead) {
			continue
		}
		var yes []predicate.Pred
		for i, p := range t.ports {
			if lead(p) || b.dropsOnly(p) {
				yes = append(yes, b.portCond(ps, t, i))
			}
		}
		if len(yes) < len(t.ports) {
			c = c.And(b.space.Or(yes...))
		}
	}
	return c
}

// dropsOnly reports whether every packet leaving by p is dropped.
func (b *builder) dropsOnly(p *eport) bool {
	for _, t := range p.out {
		if !t.removed && b.endsAvoiding(t, nil) {
			return false
		}
	}
	return len(p.out) > 0
}

// uncovered finds a work node of the stage and a class of packets that
// reach it, are not under guard g, and do not reach the hardware node
// doing its work (or there is none). Only work the predicates cannot see
// is checked so: an assignment of a computed value (a lookup's action, a
// set from metadata) only forgets what was known of its fields, so
// without it the predicates where packets end may be the same. So is a
// checksum computed: its csum_ok is forgotten by whatever later writes a
// byte it covers (a push), while the checksum's bytes differ (seed
// 20261129, models 5429 and 9990). Pops, pushes and constants show in
// the predicates.
func (b *builder) uncovered(st *stage, in map[*enode]predicate.Pred, g predicate.Pred, conds map[*enode]predicate.Pred) (*enode, string, bool) {
	for _, w := range st.nodes {
		if !b.blind(w.op) && w.op.Kind != packet.OpChecksumCompute {
			continue
		}
		served := b.space.False()
		if st.hw[w] != nil {
			served = conds[w]
		}
		need := in[w].And(g.Not())
		if c, ok := predicate.Counterexample(need, served); ok {
			return w, c.Relative(in[st.entry]).String(), true
		}
	}
	return nil, "", false
}

// claimers are the PRG's nodes with a port that claims the checksum op
// computes: a claim is believed (nsc verify tests it).
func (b *builder) claimers(op *packet.Op) []*enode {
	if op.Kind != packet.OpChecksumCompute {
		return nil
	}
	claim := fmt.Sprintf("csum_ok(%s)", b.lpg.Schema.Headers[op.Header].Name)
	var out []*enode
	for _, x := range b.nodes {
		if !x.removed && !x.lpg && slices.ContainsFunc(x.ports, func(p *eport) bool { return strings.Contains(p.pred, claim) }) {
			out = append(out, x)
		}
	}
	return out
}

// stageGuard is the residual guard: the conditions of the PRG's tests
// downstream of the exit whose one port leads to none of the stage's
// hardware nodes and the other to some, kept if packets entering the
// stage meet them. A guard every such packet meets moves nothing.
func (b *builder) stageGuard(st *stage, ps *dataflow.Predicates, reach predicate.Pred) (*packet.Expr, predicate.Pred, bool) {
	leads := func(p *eport) bool {
		for _, h := range st.hw {
			if b.leadsTo(p, h) {
				return true
			}
		}
		return false
	}
	var terms []*packet.Expr
	for _, x := range b.nodes {
		if x.removed || x.lpg || x.op == nil || x.op.Kind != packet.OpTest || !b.downstream(st.exit, x) {
			continue
		}
		yes, no := leads(x.ports[0]), leads(x.ports[1])
		switch {
		case yes && !no:
			// Packets that fail the test: those that fail one of its
			// conjuncts, keeping only the conjuncts packets entering the
			// stage can fail once they meet the ones before.
			met := reach
			for _, c := range conjuncts(x.op.Cond) {
				cp := ps.Cond(c)
				if predicate.Satisfiable(met.And(cp.Not())) {
					terms = append(terms, &packet.Expr{Kind: packet.ENot, Width: 1, A: c, Text: "!(" + c.Text + ")"})
				}
				met = met.And(cp)
			}
		case no && !yes:
			if predicate.Satisfiable(reach.And(ps.Cond(x.op.Cond))) {
				terms = append(terms, x.op.Cond)
			}
		}
	}
	if len(terms) == 0 {
		return nil, predicate.Pred{}, false
	}
	guard := terms[0]
	for _, t := range terms[1:] {
		guard = &packet.Expr{Kind: packet.EOr, Width: 1, A: guard, B: t, Text: guard.Text + " || " + t.Text}
	}
	g := ps.Cond(guard)
	return guard, g, !predicate.Implies(reach, g)
}

// trial moves the stage (behind guard, if not nil) and installs its
// hardware nodes, and compares the predicates where packets end with
// those before. Equivalent: the move stays and where is "". Otherwise
// the graph is restored and where and class say what differs.
func (b *builder) trial(st *stage, guard *packet.Expr) (where, class string, err error) {
	forget := b.forgetter(st)
	with, err := b.stageEnds(forget)
	if err != nil {
		return "", "", err
	}
	restore := b.snapshot()
	for _, h := range st.hw {
		h.installed = true
	}
	if guard == nil {
		redirect(b.nodes, st.entry, []*enode{st.exit})
		for _, n := range st.nodes {
			n.removed = true
		}
	} else {
		gn := b.guardNode(st.entry, guard)
		b.nodes = append(b.nodes, gn)
		redirect(b.nodes, st.entry, []*enode{gn})
		gn.ports[0].out = []*enode{st.entry}
		gn.ports[1].out = []*enode{st.exit}
	}
	without, err := b.stageEnds(forget)
	if err != nil {
		return "", "", err
	}
	for k, p := range with {
		if _, ok := without[k]; !ok {
			without[k] = p.And(p.Not())
		}
	}
	for k, p := range without {
		if _, ok := with[k]; !ok {
			with[k] = p.And(p.Not())
		}
	}
	if where, class = differ(with, without); where != "" {
		restore()
	}
	return where, class, nil
}

// dropped is the one end all drops are compared as.
const dropped = "(dropped)"

// stageEnds are the predicates where packets end, by name; drops are one
// end, with forget applied.
func (b *builder) stageEnds(forget func(predicate.Pred) predicate.Pred) (map[string]predicate.Pred, error) {
	cur, err := b.current()
	if err != nil {
		return nil, err
	}
	out := map[string]predicate.Pred{}
	for _, n := range cur.of {
		if n.Kind != dataflow.FNode || !(n.Op.Terminal() || n.Sink) {
			continue
		}
		p := cur.ps.Reaching(n)
		if n.Op.Kind != packet.OpDrop {
			out[n.Name] = p
			continue
		}
		p = forget(p)
		if q, ok := out[dropped]; ok {
			p = q.Or(p)
		}
		out[dropped] = p
	}
	return out, nil
}

// forgetter forgets what the stage writes: fields, the headers it pops
// or pushes, the tables' action fields, every checksum's validity, and
// the atoms of the PRG's driver nodes.
func (b *builder) forgetter(st *stage) func(predicate.Pred) predicate.Pred {
	s := b.lpg.Schema
	return func(p predicate.Pred) predicate.Pred {
		for _, n := range st.nodes {
			w, patched := writes(s, n.op)
			for _, f := range slices.Concat(w, patched) {
				p = p.ForgetField(predicate.Field{Name: s.FieldName(f), Width: s.FieldSpec(f).Width})
			}
			switch n.op.Kind {
			case packet.OpPop, packet.OpPush:
				p = p.ForgetValid(s.Headers[n.op.Header].Name)
			case packet.OpLookup:
				p = p.ForgetField(dataflow.ActionField(s.Tables[n.op.Table].Spec))
			}
		}
		for _, h := range s.Headers {
			if h.Checksum >= 0 {
				p = p.ForgetSymbol(fmt.Sprintf("csum_ok(%s)", h.Name))
			}
		}
		// A packet the hardware drops has passed the driver, the LPG's
		// drop not: what the driver's nodes say does not matter either.
		for _, x := range b.nodes {
			if !x.lpg && x.op != nil && (x.op.Kind == packet.OpInput || x.op.Kind == packet.OpContext) {
				for _, port := range x.ports {
					p = p.ForgetSymbol(fmt.Sprintf("pred(%s,%s)", x.name, port.name))
				}
			}
		}
		return p
	}
}

// dependency says why a node left between the stage and the hardware
// would see or leave a different packet if the stage moved ("" if none):
// it reads what the stage writes (the hardware writes it later), writes
// what the stage reads (the hardware would read the new value), or writes
// what the stage writes (the hardware would overwrite it). Two incremental
// patches of one checksum commute, so they do not conflict.
func (b *builder) dependency(st *stage) string {
	s := b.lpg.Schema
	var hws []*enode
	for _, h := range st.hw {
		hws = append(hws, h)
	}
	before := func(x *enode) bool {
		for _, h := range hws {
			if x != h && b.downstream(x, h) {
				return true
			}
		}
		return false
	}
	for _, x := range b.nodes {
		if x.removed || x.op == nil || (!x.lpg && x.hardware) || slices.Contains(st.nodes, x) || !b.downstream(st.exit, x) || !before(x) {
			continue
		}
		if x.op.Kind == packet.OpPlace {
			// Its complete port sends the event, not the frame the
			// hardware would write (seed 20261129, model 3924).
			return fmt.Sprintf("%s may send its event in place of the frame before the hardware (%s) sees it", x.display(), st.hwNames())
		}
		xw, xp := writes(s, x.op)
		for _, n := range st.nodes {
			nw, np := writes(s, n.op)
			for _, f := range slices.Concat(nw, np) {
				if reads(s, x.op, f) {
					return fmt.Sprintf("%s reads %s, which %s writes, before the hardware (%s) does", x.display(), s.FieldName(f), n.display(), st.hwNames())
				}
			}
			for _, f := range slices.Concat(xw, xp) {
				if reads(s, n.op, f) {
					return fmt.Sprintf("%s writes %s after %s reads it: the hardware (%s) would read the new value", x.display(), s.FieldName(f), n.display(), st.hwNames())
				}
			}
			for _, f := range nw {
				if slices.Contains(xw, f) || slices.Contains(xp, f) {
					return fmt.Sprintf("%s writes %s, which %s writes too: the hardware (%s) would overwrite it", x.display(), s.FieldName(f), n.display(), st.hwNames())
				}
			}
			for _, f := range np {
				if slices.Contains(xw, f) {
					return fmt.Sprintf("%s writes %s, which %s patches: the hardware (%s) would patch the new value", x.display(), s.FieldName(f), n.display(), st.hwNames())
				}
			}
		}
	}
	return ""
}

// refuse records why a stage stays in software on its nodes that the
// hardware could have done and that no stage placed; the smallest stage
// says it most precisely and wins.
func (b *builder) refuse(st *stage, o outcome, done map[*enode]bool, refused map[*enode]int) {
	for _, n := range st.nodes {
		if st.hw[n] == nil || done[n] {
			continue
		}
		if k, ok := refused[n]; ok && k <= len(st.nodes) {
			continue
		}
		refused[n] = len(st.nodes)
		p := b.placeOf(n.tmpl)
		reason := o.reason
		if len(st.nodes) > 1 {
			reason = fmt.Sprintf("stage %s: %s", st, o.reason)
		}
		p.Kind, p.Reason, p.Counterexample = Software, reason, o.counterexample
	}
}

// placeStage records a moved stage on its nodes.
func (b *builder) placeStage(st *stage, o outcome) {
	for _, n := range st.nodes {
		p := b.placeOf(n.tmpl)
		hw := st.hwNames()
		if h := st.hw[n]; h != nil {
			hw = h.name
		}
		reason := o.reason
		if len(st.nodes) > 1 {
			reason = fmt.Sprintf("with stage %s: %s", st, o.reason)
		}
		p.Kind, p.Hardware, p.Reason, p.Guard, p.Counterexample = Hardware, hw, reason, "", ""
		if o.guard != "" {
			p.Kind, p.Guard, p.Counterexample = Split, o.guard, o.counterexample
		}
	}
}

// conjuncts splits an AND into its operands.
func conjuncts(e *packet.Expr) []*packet.Expr {
	if e.Kind == packet.EAnd {
		return append(conjuncts(e.A), conjuncts(e.B)...)
	}
	return []*packet.Expr{e}
}

// blind reports whether an operation writes a value the predicates do not
// know: an assignment from anything but a constant, a lookup whose actions
// assign their parameters.
func (b *builder) blind(op *packet.Op) bool {
	var as []packet.Assign
	switch op.Kind {
	case packet.OpSet:
		as = op.Assign
	case packet.OpLookup:
		s := b.lpg.Schema
		for _, a := range s.Tables[op.Table].Actions {
			as = append(as, s.Actions[a].Body...)
		}
	}
	return slices.ContainsFunc(as, func(a packet.Assign) bool { return a.Src.Kind != packet.EConst })
}

// verb agrees "does" with how many hardware nodes do the work.
func verb(n int) string {
	if n > 1 {
		return "do"
	}
	return "does"
}
