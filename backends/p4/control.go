package p4

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
)

// The control. The graph after the parser is a DAG run along one path per
// frame. It becomes structured code: a node runs where its predecessor
// left off; a test or a switch becomes if/else (a side that only ends the
// frame becomes an early `if (…) { …; return; }`), a lookup a switch on
// action_run. A node more than one node leads to (a join) gets a bool,
// to_NODE: the ways in set it, and its code sits once, after all of them in
// topological order, under `if (to_NODE)`. A frame runs each node at most
// once and on one path, so this is exactly the interpreter's order.

// reread makes header y of what the parser took for x's fixed part, where
// x failed in its variable-length part (c.rereads).
func (b *ctl) reread(x, y *dataflow.Node) {
	c := b.c
	hx, hy := x.Op.Header, y.Op.Header
	b.line("// %s failed in %s's variable-length part: %s reads its fixed part again", c.nodeName[x], c.s.Headers[hx].Name, c.nodeName[y])
	b.line("hdr.%s.setValid();", c.hdrName[hy])
	for i := range c.s.Headers[hy].Fields {
		b.line("%s = %s;", c.field(packet.FieldRef{Header: hy, Field: i}), c.field(packet.FieldRef{Header: hx, Field: i}))
	}
	b.line("hdr.%s.setInvalid();", c.hdrName[hx])
	b.invalidated[hx] = true
}

// findControl finds the join nodes of the control.
func (c *gen) findControl() error {
	c.heads = map[*dataflow.Node]bool{}
	c.termMemo = map[*dataflow.Node]int8{}
	entries := map[*dataflow.Node]int{}
	for _, d := range c.exits {
		if d.node != nil {
			entries[d.node]++
		}
	}
	if !c.region[c.start] {
		entries[c.start]++
	}
	c.findDiamonds()
	for _, n := range c.order {
		if !c.reached[n] || c.region[n] || n.Kind != dataflow.FNode {
			continue
		}
		ins := entries[n]
		for _, d := range c.diamonds {
			if d.join == n {
				ins-- // the test and its arm's end meet here: one way in
			}
		}
		for _, p := range c.preds[n] {
			if !c.region[p] {
				ins++
			}
		}
		if ins > 1 && !terminal(n) { // a drop or an emit is written where it is reached
			c.heads[n] = true
		}
	}
	return nil
}

// diamond is a test one of whose ports (arm) runs a straight chain of
// nodes into join, where its other port leads too: `if (…) { chain }`,
// then join, with no flag.
type diamond struct {
	arm  int
	join *dataflow.Node
}

// findDiamonds finds the tests that are diamonds.
func (c *gen) findDiamonds() {
	c.diamonds = map[*dataflow.Node]diamond{}
	for _, b := range c.order {
		if !c.reached[b] || c.region[b] || b.Kind != dataflow.FNode || c.nports(b) != 2 {
			continue
		}
		if k := b.Op.Kind; k != packet.OpTest && k != packet.OpChecksumVerify {
			continue
		}
		for arm := range 2 {
			a, o := c.succ(b, arm), c.succ(b, 1-arm)
			if a.node == nil || o.node == nil || a.node == o.node {
				continue
			}
			last, x := b, a.node
			for x != nil && x != o.node {
				if terminal(x) || c.nports(x) != 1 || len(c.preds[x]) != 1 {
					x = nil
					break
				}
				last, x = x, c.succ(x, 0).node
			}
			j := o.node
			if x == j && last != b && slices.Contains(c.preds[j], b) && slices.Contains(c.preds[j], last) {
				c.diamonds[b] = diamond{arm, j}
				break
			}
		}
	}
}

// flag is the bool that says a frame is on its way to join node n.
func (c *gen) flag(n *dataflow.Node) string {
	if f, ok := c.flags[n]; ok {
		return f
	}
	if c.flags == nil {
		c.flags = map[*dataflow.Node]string{}
	}
	c.flags[n] = c.ctlNames.take("to_" + c.nodeName[n])
	return c.flags[n]
}

// terminates reports whether going to d ends the frame without reaching a
// join node (so code after it never runs).
func (c *gen) terminates(d dest) bool {
	if d.node == nil {
		return true
	}
	n := d.node
	if c.heads[n] {
		return false
	}
	switch c.termMemo[n] {
	case 1:
		return true
	case 2:
		return false
	}
	t := true
	if !terminal(n) {
		for _, s := range c.succs(n) {
			t = t && c.terminates(s)
		}
	}
	c.termMemo[n] = 2
	if t {
		c.termMemo[n] = 1
	}
	return t
}

// ctl is the state of the control body being written.
type ctl struct {
	out
	c     *gen
	stops []*dataflow.Node // where the diamond arms being written end
	// What p4c's header validity check knows where code is being written
	// (p4test warns about a field of a header that may be invalid): the
	// headers a setInvalid was written for above, maybe invalid from there
	// on as it goes, since it cannot tell the frames' paths apart; and the
	// conditions of the ifs around, in which h.isValid() makes h valid.
	invalidated map[int]bool
	within      []string
}

// control writes the match-action control.
func (c *gen) control() ([]byte, error) {
	b := &ctl{c: c, invalidated: map[int]bool{}}
	b.ind = 2
	// Body first: it decides which tables, actions and counters exist.
	if len(c.prefix) > 0 {
		for _, n := range c.prefix {
			if n.Op.Kind == packet.OpCount {
				b.line("// %s: %s (in the parser; every frame passes it)", c.nodeName[n], n.Op.Describe(c.s))
				b.count(n.Op.Label)
			}
		}
	}
	switch {
	case c.fail != nil && len(c.altFail) > 0:
		b.line("if (%s.parser_error != error.NoError && %s == %d) {", c.stdMeta, c.exitField, noExit)
	case c.fail != nil:
		b.line("if (%s.parser_error != error.NoError) {", c.stdMeta)
	}
	if c.fail != nil {
		if err := b.goTo(*c.fail); err != nil {
			return nil, err
		}
		b.line("return;")
		b.line("}")
	}
	switch {
	case !c.region[c.start]:
		if err := b.goTo(dest{node: c.start}); err != nil {
			return nil, err
		}
	case len(c.exits) == 1:
		if err := b.goTo(c.exits[0]); err != nil {
			return nil, err
		}
	case c.exitField != "":
		var xs []*dataflow.Node // the rereads, in exit order
		for _, n := range c.order {
			if _, ok := c.rereads[n]; ok {
				xs = append(xs, n)
			}
		}
		last := len(c.exits) + len(xs) - 1
		for i := 0; i <= last; i++ {
			switch {
			case i == 0:
				b.line("if (%s == %d) {", c.exitField, i)
			case i < last:
				b.line("} else if (%s == %d) {", c.exitField, i)
			default:
				b.line("} else {")
			}
			d := dest{}
			if i < len(c.exits) {
				d = c.exits[i]
			} else {
				x := xs[i-len(c.exits)]
				d = c.rereads[x].to
				b.reread(x, c.rereads[x].y)
			}
			if err := b.goTo(d); err != nil {
				return nil, err
			}
		}
		b.line("}")
	}
	var heads []*dataflow.Node
	for _, n := range c.order {
		if c.heads[n] {
			heads = append(heads, n)
		}
	}
	for _, n := range heads {
		b.line("")
		b.line("if (%s) {", c.flag(n))
		if err := b.chain(n); err != nil {
			return nil, err
		}
		b.line("}")
	}
	body := b.b.Bytes()

	var w out
	w.ind = 0
	name := c.controlName()
	if c.opt.Arch == V1Model {
		w.line("control %s(inout headers_t hdr, inout %s %s, inout standard_metadata_t standard_metadata) {", name, c.metaType, c.metaParam)
	} else {
		w.line("control %s(inout headers_t hdr, inout %s %s, inout standard_metadata_t smeta) {", name, c.metaType, c.metaParam)
	}
	if c.opt.Arch == V1Model && len(c.ctrOrder) > 0 {
		w.line("// Counters, by the model's count labels and drop reasons.")
		for _, l := range c.ctrOrder {
			w.line("counter(1, CounterType.packets) %s; // %q", c.counters[l], l)
		}
		w.line("")
	}
	acts := out{ind: w.ind}
	if err := c.actionsAndTables(&acts); err != nil {
		return nil, err
	}
	// Declared where the code calls it: code made for a node that is then
	// left out may have, and p4c warns of an unused action.
	if call := []byte("csum_add("); bytes.Contains(body, call) || bytes.Contains(acts.b.Bytes(), call) {
		w.line("// One's-complement addition (RFC 1071): the carry out of the top bit")
		w.line("// comes back in at the bottom, so a sum is 0 only when every word is.")
		w.line("action csum_add(inout bit<16> sum, in bit<16> word) {")
		w.line("bit<17> s = (bit<17>)sum + (bit<17>)word;")
		w.line("sum = s[15:0] + (bit<16>)s[16:16];")
		w.line("}")
		w.line("")
	}
	w.b.Write(acts.b.Bytes())
	w.line("apply {")
	for _, n := range heads {
		w.line("bool %s = false;", c.flag(n))
	}
	if len(heads) > 0 {
		w.line("")
	}
	w.b.Write(body)
	w.line("}")
	w.line("}")
	w.line("")
	return w.b.Bytes(), nil
}

// goTo writes what happens when a frame goes to d.
func (b *ctl) goTo(d dest) error {
	c := b.c
	switch {
	case d.end == endLeave:
		b.leave(d.sink)
		return nil
	case d.end == endDrop:
		b.line("// %s: %s", c.where(d.drop.Node), d.drop.Reason)
		b.drop(d.drop)
		return nil
	case len(b.stops) > 0 && d.node == b.stops[len(b.stops)-1]:
		return nil // a diamond's arm ends where its test goes on
	case c.heads[d.node]:
		b.line("%s = true;", c.flag(d.node))
		return nil
	}
	return b.chain(d.node)
}

// leave writes a frame leaving by sink n.
func (b *ctl) leave(n *dataflow.Node) {
	b.line("// %s: the frame leaves", b.c.nodeName[n])
	if b.c.opt.Arch == V1Model {
		b.line("standard_metadata.egress_spec = standard_metadata.ingress_port;")
	}
}

// where names a drop key's node (NODE or NODE.port) for people.
func (c *gen) where(key string) string {
	node, port, _ := strings.Cut(key, ".")
	w := node
	if n := c.g.Node(node); n != nil {
		w = c.nodeName[n]
	}
	if port != "" {
		w += "." + port
	}
	return w
}

// drop writes a drop, counted under its reason.
func (b *ctl) drop(k sim.DropKey) {
	b.count(dropLabel(k))
	if b.c.opt.Arch == V1Model {
		b.line("mark_to_drop(standard_metadata);")
	} else {
		b.line("smeta.drop = 1;")
	}
}

// count counts a frame under a label (v1model; xsa has no counters here).
func (b *ctl) count(label string) {
	if b.c.opt.Arch == V1Model {
		b.line("%s.count(0);", b.c.counter(label))
	}
}

// malCond is the condition under which n's operation is malformed: it
// touches a header the frame lacks. "" when the analysis knows it cannot.
func (c *gen) malCond(n *dataflow.Node) string {
	in := c.info[n]
	known := map[int]bool{}
	if in != nil {
		known = in.always
	}
	o := n.Op
	sc := &scope{}
	var terms []string
	need := func(h int) {
		if !c.s.Headers[h].Metadata && !known[h] {
			terms = append(terms, "!"+c.valid(h))
		}
	}
	for _, e := range c.exprs(n) {
		if o.Kind == packet.OpLookup && !slices.Contains(c.s.Tables[o.Table].Keys, e) {
			continue // action bodies: checked after the lookup (refused for now)
		}
		terms = append(terms, c.malformed(e, known, sc))
	}
	switch o.Kind {
	case packet.OpSet:
		for _, a := range o.Assign {
			need(a.Dst.Header)
		}
	case packet.OpPop, packet.OpChecksumCompute:
		need(o.Header)
	case packet.OpPush:
		if in == nil || in.ever[o.Header] {
			terms = append(terms, c.valid(o.Header))
		}
		if o.After >= 0 {
			need(o.After)
		}
	}
	return anyOf(terms...)
}

// accessed lists the wire headers whose fields node n's code reads or
// writes without testing them valid first in that code (the checksum sums
// test a header that may be missing before they read it).
func (c *gen) accessed(n *dataflow.Node) []int {
	o := n.Op
	in := c.info[n]
	var hs []int
	add := func(h int) {
		if !c.s.Headers[h].Metadata && !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	for _, e := range c.exprs(n) {
		readsBeforeValid(e, map[int]bool{}, add)
	}
	always := func(us []int) {
		for _, u := range us {
			if in.always[u] {
				add(u)
			}
		}
	}
	switch o.Kind {
	case packet.OpSet:
		for _, a := range o.Assign {
			add(a.Dst.Header)
		}
		always(o.Update)
	case packet.OpPop:
		if len(o.Update) > 0 {
			add(o.Header)
			always(o.Update)
		}
	case packet.OpChecksumCompute, packet.OpChecksumVerify:
		if o.Kind == packet.OpChecksumCompute {
			add(o.Header) // else the sum tests it valid first
		}
		if ip, _, ls, err := c.covered(n, o.Header); err == nil { // else refused when written
			if ip != nil {
				always([]int{ip.H})
			}
			for _, l := range ls {
				always(l)
			}
		}
	case packet.OpLookup:
		for _, ai := range c.s.Tables[o.Table].Actions {
			for _, a := range c.s.Actions[ai].Body {
				add(a.Dst.Header)
			}
		}
	}
	return hs
}

// readsBeforeValid calls add for each header a field of which e reads
// before e has called valid() on it, in the order P4 evaluates e (p4c's
// check goes the same way).
func readsBeforeValid(e *packet.Expr, seen map[int]bool, add func(int)) {
	if e == nil {
		return
	}
	switch e.Kind {
	case packet.EValid:
		seen[e.Header] = true
	case packet.EField:
		if !seen[e.Field.Header] {
			add(e.Field.Header)
		}
	}
	readsBeforeValid(e.A, seen, add)
	readsBeforeValid(e.B, seen, add)
}

// tested reports whether an if around the code being written tests h
// valid in its condition.
func (b *ctl) tested(h int) bool {
	v := b.c.valid(h)
	return slices.ContainsFunc(b.within, func(cond string) bool { return strings.Contains(cond, v) })
}

// inside writes body inside an if on cond.
func (b *ctl) inside(cond string, body func() error) error {
	b.within = append(b.within, cond)
	defer func() { b.within = b.within[:len(b.within)-1] }()
	return body()
}

// compilerGuard is the condition node n and what follows it are written
// under when n touches a field of a header p4c's check takes as maybe
// invalid there (a setInvalid above, no isValid() around), though the
// analysis knows better: true for the headers the analysis knows are
// there, and the malformed condition m taken out (the guard's else is the
// malformed drop). "" when there is no such header.
func (b *ctl) compilerGuard(n *dataflow.Node, m string) string {
	c := b.c
	var terms []string
	if m != "" {
		terms = append(terms, negate(m))
	}
	need := false
	for _, h := range c.accessed(n) {
		if !b.invalidated[h] || b.tested(h) {
			continue
		}
		need = true
		if c.info[n].always[h] {
			terms = append(terms, c.valid(h))
		}
	}
	if !need {
		return ""
	}
	return strings.Join(terms, " && ")
}

// negate is !cond, without a double negation.
func negate(cond string) string {
	if s, ok := strings.CutPrefix(cond, "!"); ok && atomic(s) {
		return s
	}
	return "!" + paren(cond)
}

// chain writes node n and what follows it, up to the ends and joins.
func (b *ctl) chain(n *dataflow.Node) error {
	c := b.c
	b.line("// %s: %s", c.nodeName[n], n.Op.Describe(c.s))
	m := c.malCond(n)
	if g := b.compilerGuard(n, m); g != "" {
		b.line("// tested for p4c, which takes a header set invalid above as maybe invalid")
		b.line("if (%s) {", g)
		err := b.inside(g, func() error { return b.node(n) })
		b.line("} else {")
		b.malformed(n)
		b.line("}")
		return err
	}
	if m != "" {
		b.line("if (%s) {", bare(m))
		b.malformed(n)
		b.line("}")
	}
	return b.node(n)
}

// malformed writes node n's malformed drop.
func (b *ctl) malformed(n *dataflow.Node) {
	b.line("// malformed: a header it needs is not there")
	b.drop(sim.DropKey{Node: n.Name, Reason: sim.ReasonMalformed})
	b.line("return;")
}

// node writes node n's operation and what follows it.
func (b *ctl) node(n *dataflow.Node) error {
	c := b.c
	o := n.Op
	sc := &scope{}
	switch o.Kind {
	case packet.OpInput, packet.OpNop, packet.OpContext:
	case packet.OpCount:
		b.count(o.Label)
	case packet.OpSet:
		if err := b.set(n); err != nil {
			return err
		}
	case packet.OpPush:
		h := o.Header
		b.line("hdr.%s.setValid();", c.hdrName[h])
		for i, f := range c.s.Headers[h].Fields {
			if !f.Variable() {
				b.line("%s = 0;", c.field(packet.FieldRef{Header: h, Field: i}))
			}
		}
	case packet.OpPop:
		if err := b.pop(n); err != nil {
			return err
		}
	case packet.OpChecksumCompute:
		if err := b.compute(n); err != nil {
			return err
		}
	case packet.OpChecksumVerify:
		cond, err := b.verify(n)
		if err != nil {
			return err
		}
		return b.branch2(n, cond, c.succ(n, 0), c.succ(n, 1))
	case packet.OpTest:
		return b.branch2(n, c.cond(o.Cond, sc), c.succ(n, 0), c.succ(n, 1))
	case packet.OpSwitch:
		return b.switchOp(n)
	case packet.OpLookup:
		return b.lookup(n)
	case packet.OpEmit:
		switch {
		case n.Name == embed.PuntNode && b.c.opt.Arch != V1Model:
			return b.c.refuse(n, "the punt to the host needs a port to the host CPU; the backend sets one for v1model only (egress port %d)", PuntPort)
		case n.Name == embed.PuntNode:
			b.line("standard_metadata.egress_spec = 9w%d; // to the host CPU", PuntPort)
		case b.c.opt.Arch == V1Model:
			b.line("standard_metadata.egress_spec = standard_metadata.ingress_port;")
		}
		return nil
	case packet.OpDrop:
		label := o.Label
		if label == "" {
			label = "drop"
		}
		b.drop(sim.DropKey{Node: n.Name, Reason: label})
		return nil
	default:
		return c.refuse(n, "%s has no P4 translation", o.Describe(c.s))
	}
	return b.goTo(c.succ(n, 0))
}

// branch2 writes test n's two-way branch on cond.
func (b *ctl) branch2(n *dataflow.Node, cond string, t, f dest) error {
	c := b.c
	if sameDest(t, f) {
		return b.goTo(t)
	}
	if d, ok := c.diamonds[n]; ok {
		arm := t
		if d.arm == 1 {
			cond, arm = "!"+paren(cond), f
		}
		b.line("if (%s) {", bare(cond))
		b.stops = append(b.stops, d.join)
		err := b.inside(cond, func() error { return b.goTo(arm) })
		b.stops = b.stops[:len(b.stops)-1]
		if err != nil {
			return err
		}
		b.line("}")
		return b.goTo(dest{node: d.join})
	}
	tt, ft := c.terminates(t), c.terminates(f)
	switch {
	case ft && !tt:
		b.line("if (%s) {", bare("!"+paren(cond)))
		if err := b.inside(cond, func() error { return b.goTo(f) }); err != nil {
			return err
		}
		b.line("return;")
		b.line("}")
		return b.goTo(t)
	case tt && !ft:
		b.line("if (%s) {", bare(cond))
		if err := b.inside(cond, func() error { return b.goTo(t) }); err != nil {
			return err
		}
		b.line("return;")
		b.line("}")
		return b.goTo(f)
	}
	b.line("if (%s) {", bare(cond))
	err := b.inside(cond, func() error {
		if err := b.goTo(t); err != nil {
			return err
		}
		b.line("} else {")
		return b.goTo(f)
	})
	if err != nil {
		return err
	}
	b.line("}")
	return nil
}

// arm is one way out of a branch: a condition (or the labels of a
// switch case) and where it leads.
type arm struct {
	conds  []string
	to     dest
	others bool // the default: none of the other arms
}

// arms groups ports by destination, in port order.
func (c *gen) arms(n *dataflow.Node, cond func(port string) []string) []*arm {
	var out []*arm
	for k, p := range n.Op.Ports(c.s) {
		d := c.succ(n, k)
		i := slices.IndexFunc(out, func(a *arm) bool { return sameDest(a.to, d) })
		if i < 0 {
			out = append(out, &arm{to: d})
			i = len(out) - 1
		}
		out[i].conds = append(out[i].conds, cond(p)...)
	}
	return out
}

// switchOp writes a switch on a value as if/else on its cases.
func (b *ctl) switchOp(n *dataflow.Node) error {
	c := b.c
	o := n.Op
	sc := &scope{}
	v := c.value(o.Expr, sc)
	if !atomic(v) || strings.Contains(v, "(") {
		name := c.ctlNames.take("v_" + c.nodeName[n])
		b.line("bit<%d> %s = %s;", o.Expr.Width, name, bare(v))
		v = name
	}
	as := c.arms(n, func(port string) []string {
		var cs []string
		for _, k := range o.Cases {
			if k.Port == port {
				cs = append(cs, fmt.Sprintf("%s == %s", v, lit(k.Value, o.Expr.Width)))
			}
		}
		return cs
	})
	for _, a := range as {
		if sameDest(a.to, c.succ(n, slices.Index(o.Ports(c.s), o.Default))) {
			a.others = true
		}
	}
	return b.branchN(as)
}

// branchN writes a many-way branch: arms that only end the frame first, as
// early returns, then the others as if/else.
func (b *ctl) branchN(as []*arm) error {
	c := b.c
	if len(as) == 1 {
		return b.goTo(as[0].to)
	}
	condOf := func(a *arm) string {
		if a.others {
			var all []string
			for _, x := range as {
				if x != a {
					all = append(all, x.conds...)
				}
			}
			return "!(" + strings.Join(all, " || ") + ")"
		}
		return strings.Join(a.conds, " || ")
	}
	var rest []*arm
	for _, a := range as {
		if !c.terminates(a.to) {
			rest = append(rest, a)
		}
	}
	if len(rest) == 1 {
		for _, a := range as {
			if slices.Contains(rest, a) {
				continue
			}
			b.line("if (%s) {", condOf(a))
			if err := b.goTo(a.to); err != nil {
				return err
			}
			b.line("return;")
			b.line("}")
		}
		return b.goTo(rest[0].to)
	}
	// Several ways on, or none: if/else, the default arm last.
	slices.SortStableFunc(as, func(x, y *arm) int {
		switch {
		case x.others && !y.others:
			return 1
		case y.others && !x.others:
			return -1
		}
		return 0
	})
	for i, a := range as {
		switch {
		case i == 0:
			b.line("if (%s) {", condOf(a))
		case i == len(as)-1:
			b.line("} else {")
		default:
			b.line("} else if (%s) {", condOf(a))
		}
		if err := b.goTo(a.to); err != nil {
			return err
		}
	}
	b.line("}")
	return nil
}

// lookup writes a table lookup and the switch on the action it ran.
func (b *ctl) lookup(n *dataflow.Node) error {
	c := b.c
	o := n.Op
	t := c.tableOf(o.Table)
	if err := c.checkActions(n); err != nil {
		return err
	}
	for i, k := range c.s.Tables[o.Table].Keys {
		if t.keyVars[i] != "" {
			b.line("%s = %s;", t.keyVars[i], bare(c.as(k, t.Spec.Keys[i].Width, &scope{})))
		}
	}
	def := c.s.Tables[o.Table]
	as := c.arms(n, func(port string) []string {
		i, _ := def.Spec.ActionIndex(port)
		return []string{c.actName[def.Actions[i]]}
	})
	if len(as) == 1 {
		b.line("%s.apply();", t.ident)
		return b.goTo(as[0].to)
	}
	var rest []*arm
	for _, a := range as {
		if !c.terminates(a.to) {
			rest = append(rest, a)
		}
	}
	b.line("switch (%s.apply().action_run) {", t.ident)
	for _, a := range as {
		if len(rest) == 1 && a == rest[0] {
			continue
		}
		for _, l := range a.conds[:len(a.conds)-1] {
			b.line("%s:", l)
		}
		b.line("%s: {", a.conds[len(a.conds)-1])
		if err := b.goTo(a.to); err != nil {
			return err
		}
		if len(rest) == 1 {
			b.line("return;")
		}
		b.line("}")
	}
	b.line("}")
	if len(rest) == 1 {
		return b.goTo(rest[0].to)
	}
	return nil
}

// checkActions refuses a lookup whose actions may touch a header the frame
// lacks: the interpreter makes that a malformed drop after the lookup, and
// the backend does not generate that check yet.
func (c *gen) checkActions(n *dataflow.Node) error {
	def := c.s.Tables[n.Op.Table]
	known := c.info[n].always
	for _, ai := range def.Actions {
		a := c.s.Actions[ai]
		for _, as := range a.Body {
			if h := as.Dst.Header; !c.s.Headers[h].Metadata && !known[h] {
				return c.refuse(n, "action %s writes %s, which may not be there when %s is looked up", a.Name, c.s.FieldName(as.Dst), def.Spec.Name)
			}
			if m := c.malformed(as.Src, known, &scope{params: paramNames(a)}); m != "" {
				return c.refuse(n, "action %s reads a header that may not be there when %s is looked up (%s)", a.Name, def.Spec.Name, m)
			}
		}
	}
	return nil
}

func paramNames(a *packet.Action) []string {
	var out []string
	for _, p := range a.Params {
		out = append(out, ident(p.Name))
	}
	return out
}
