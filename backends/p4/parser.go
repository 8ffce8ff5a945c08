package p4

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// The parser. The models parse with explicit extract, switch and test
// nodes; the P4 parser is the part of the graph from the start up to the
// last extract on every path: nodes a parser can run (extract, test,
// switch, set, and nop/count before the first branch) whose predecessors
// are all in it and from which an extract can still be reached. Extract
// nodes become packet.extract, tests become verify when one port leads to
// the parse failure and select otherwise, switches select. A P4 parser
// that fails stops and hands over to the control with a parser error, so
// every way the model's parse can fail — a header that does not fit, and
// the checks and selections that lead where the failed extracts lead —
// must end in one place, a drop: the control drops there when the
// parser_error is set.

// parserOp reports whether a parser can run n.
func (c *gen) parserOp(n *dataflow.Node) bool {
	o := n.Op
	switch o.Kind {
	case packet.OpInput:
		return o.Header < 0
	case packet.OpNop, packet.OpContext, packet.OpCount, packet.OpExtract, packet.OpTest, packet.OpSwitch:
		return true
	case packet.OpSet:
		return len(o.Update) == 0
	}
	return false
}

// findParser works out the parser region, its failure and its exits.
func (c *gen) findParser() error {
	reaches := map[*dataflow.Node]bool{}
	for i := len(c.order) - 1; i >= 0; i-- {
		n := c.order[i]
		if !c.reached[n] || n.Kind != dataflow.FNode || !c.parserOp(n) {
			continue
		}
		if n.Op.Kind == packet.OpExtract {
			reaches[n] = true
			continue
		}
		for _, d := range c.succs(n) {
			if d.node != nil && reaches[d.node] {
				reaches[n] = true
			}
		}
	}
	c.region = map[*dataflow.Node]bool{}
	for _, n := range c.order {
		if !reaches[n] {
			continue
		}
		in := n == c.start
		if !in {
			in = len(c.preds[n]) > 0
			for _, p := range c.preds[n] {
				in = in && c.region[p]
			}
		}
		c.region[n] = in
	}
	for _, n := range c.order {
		if c.reached[n] && n.Kind == dataflow.FNode && n.Op.Kind == packet.OpExtract && !c.region[n] {
			var from *dataflow.Node
			for _, p := range c.preds[n] {
				if !c.region[p] {
					from = p
					break
				}
			}
			why := "the parser does not reach it"
			if from != nil {
				why = fmt.Sprintf("it follows %s, which the parser cannot run (%s)", display(from), from.Op.Describe(c.s))
			}
			return c.refuse(n, "extract %s after the parser: %s; a P4 program extracts headers only while parsing, before any table", c.s.Headers[n.Op.Header].Name, why)
		}
	}
	// The prefix: what every frame runs before the parser branches.
	for n := c.start; c.region[n]; {
		k := n.Op.Kind
		if k != packet.OpInput && k != packet.OpNop && k != packet.OpContext && k != packet.OpCount && k != packet.OpSet {
			break
		}
		c.prefix = append(c.prefix, n)
		d := c.succ(n, 0)
		if d.node == nil || len(c.preds[d.node]) != 1 {
			break
		}
		n = d.node
	}
	for _, n := range c.order { // the first in order: the refusal is the same each run
		if c.region[n] && n.Op.Kind == packet.OpCount && !slices.Contains(c.prefix, n) {
			return c.refuse(n, "count %q in the middle of the parser: P4 counts in the control, and only what every frame passes before the parser branches can be counted there", n.Op.Label)
		}
	}
	// The failures: where failed extracts go. The first drop they go to is
	// the parse failure, which every check may fail into (verify); an
	// extract that fails elsewhere says so in the exit field before it
	// runs, and the control goes there when the parser stopped with it.
	var extracts []*dataflow.Node
	for _, n := range c.order {
		if !c.region[n] || n.Op.Kind != packet.OpExtract {
			continue
		}
		h := n.Op.Header
		in := c.info[n]
		if in.always[h] {
			continue // already there: extract does nothing
		}
		extracts = append(extracts, n)
		if d := c.succ(n, 1); c.fail == nil && c.drops(d) {
			c.fail = &d
		}
	}
	c.altFail, c.rereads = map[*dataflow.Node]dest{}, map[*dataflow.Node]reread{}
	for _, n := range extracts {
		d := c.succ(n, 1)
		if c.isFail(d) {
			continue
		}
		h := c.s.Headers[n.Op.Header]
		switch {
		case d.node != nil && c.region[d.node]:
			alt, err := c.reread(n, d.node)
			if err != nil {
				return err
			}
			d = alt
		case !c.drops(d) && h.Fields[len(h.Fields)-1].Variable():
			return c.refuse(n, "when extract %s fails the frame goes on to %s (%s); a P4 parser that fails in %s's variable-length part has taken its fixed part, which the model's frame still has as payload", h.Name, display(d.node), d.node.Op.Describe(c.s), h.Name)
		}
		c.altFail[n] = d
	}
	// Checks that fail into the same place are the parser's too, however
	// late (ARP's field checks after the last extract): verify.
	for changed := c.fail != nil; changed; {
		changed = false
		for _, n := range c.order {
			if c.region[n] || !c.reached[n] || n.Kind != dataflow.FNode || !c.parserOp(n) || len(c.preds[n]) == 0 {
				continue
			}
			if k := n.Op.Kind; k != packet.OpTest && k != packet.OpSwitch {
				continue
			}
			in := true
			for _, p := range c.preds[n] {
				in = in && c.region[p]
			}
			if in && slices.ContainsFunc(c.succs(n), c.isFail) {
				c.region[n] = true
				changed = true
			}
		}
	}
	// The exits: where the parser hands over to the control.
	for _, n := range c.order {
		if !c.region[n] {
			continue
		}
		for _, d := range c.succs(n) {
			if c.isFail(d) || d.node != nil && c.region[d.node] {
				continue
			}
			if !slices.ContainsFunc(c.exits, func(e dest) bool { return sameDest(e, d) }) {
				c.exits = append(c.exits, d)
			}
		}
	}
	if len(c.exits) > 1 || len(c.altFail) > 0 {
		c.exitField = c.metaParam + ".nsc_parser_exit"
	}
	// Checks the parser cannot make a malformed drop.
	for _, n := range c.order {
		if !c.region[n] {
			continue
		}
		if m := c.malCond(n); m != "" {
			return c.refuse(n, "%s may read a header that is not there (%s); in the parser that cannot be made the model's malformed drop", n.Op.Describe(c.s), m)
		}
	}
	return nil
}

// noMatch is the parser state a select's default goes to when no case
// takes the value and the model fails the parse there. P4_16 makes a
// select without a default fail with error.NoMatch by itself, but
// p4c-bm2-ss leaves that transition out and BMv2 then accepts the frame
// with the headers parsed so far, so every select has an explicit default.
const noMatch = "noMatch"

// reread handles an extract x whose failure goes on to extract y at the
// same place in the frame (lb-2021's ipv4, then its 20-byte base): when
// x's fixed part does not fit, neither does y, which is no shorter, and
// the frame goes where y's failure leads; when x fails in its variable
// part, y is x's fixed part, field for field, so the control makes y of
// what the parser took for x and goes where y leads (c.rereads). It
// returns where x's fixed part failing leads.
func (c *gen) reread(x, y *dataflow.Node) (dest, error) {
	hx := c.s.Headers[x.Op.Header]
	stops := c.refuse(x, "when extract %s fails the frame goes on to %s in the parser; a P4 parser stops at the first header that does not fit", hx.Name, display(y))
	if y.Op.Kind != packet.OpExtract {
		return dest{}, stops
	}
	hy := c.s.Headers[y.Op.Header]
	if hy.Fields[len(hy.Fields)-1].Variable() || hy.FixedBytes() < hx.FixedBytes() {
		return dest{}, stops
	}
	fail, ok := c.succ(y, 1), c.succ(y, 0)
	for _, d := range []dest{fail, ok} {
		if d.node != nil && c.region[d.node] {
			return dest{}, stops
		}
	}
	if !hx.Fields[len(hx.Fields)-1].Variable() {
		return fail, nil
	}
	same := len(hy.Fields) == len(hx.Fields)-1
	for i := range hy.Fields {
		same = same && hy.Fields[i].Width == hx.Fields[i].Width
	}
	if !same {
		return dest{}, c.refuse(x, "when extract %s fails in its variable-length part the frame goes on to extract %s, whose fields are not %s's fixed part; a P4 parser has taken that part and cannot read it again", hx.Name, hy.Name, hx.Name)
	}
	c.rereads[x] = reread{y: y, to: ok}
	return fail, nil
}

// A reread is an extract y that reads again what a failed extract took.
type reread struct {
	y  *dataflow.Node
	to dest // where y leads
}

// exitIndex is d's number among the parser's exits.
func (c *gen) exitIndex(d dest) int {
	return slices.IndexFunc(c.exits, func(e dest) bool { return sameDest(e, d) })
}

// rereadIndex is the exit number of extract x's reread: after the exits.
func (c *gen) rereadIndex(x *dataflow.Node) int {
	i := 0
	for _, n := range c.order {
		if n == x {
			break
		}
		if _, ok := c.rereads[n]; ok {
			i++
		}
	}
	return len(c.exits) + i
}

// noExit is the exit field's value while no extract that fails elsewhere
// than the parse failure runs: a parser error then is the parse failure.
const noExit = 255

// drops reports whether d drops the frame at once.
func (c *gen) drops(d dest) bool {
	return d.end == endDrop || d.node != nil && d.node.Op.Kind == packet.OpDrop
}

// isFail reports whether d is the parse failure.
func (c *gen) isFail(d dest) bool { return c.fail != nil && sameDest(*c.fail, d) }

// parser writes the parser block.
func (c *gen) parser() ([]byte, error) {
	var w out
	states := map[*dataflow.Node]string{}
	var todo []*dataflow.Node
	state := func(n *dataflow.Node) string {
		if s, ok := states[n]; ok {
			return s
		}
		s := c.nodeName[n]
		if n == c.start {
			s = "start"
		}
		states[n] = s
		todo = append(todo, n)
		return s
	}
	var exitStates []string
	failStates := map[*dataflow.Node]string{}
	target := func(from *dataflow.Node, d dest) string {
		switch {
		case c.isFail(d):
			s, ok := failStates[from]
			if !ok {
				s = c.nodeName[from] + "_fail"
				failStates[from] = s
			}
			return s
		case d.node != nil && c.region[d.node]:
			return state(d.node)
		case c.exitField == "":
			return "accept"
		}
		return exitStates[c.exitIndex(d)]
	}
	for _, d := range c.exits {
		name := "to_control"
		if d.node != nil {
			name = "to_" + c.nodeName[d.node]
		}
		exitStates = append(exitStates, name)
	}
	var body out
	body.ind = 1
	if c.region[c.start] {
		state(c.start)
	}
	c.taking = map[*dataflow.Node]bool{}
	for len(todo) > 0 || len(c.takes) > 0 {
		var n *dataflow.Node
		name := ""
		if len(todo) > 0 {
			n, todo = todo[0], todo[1:]
			name = states[n]
		} else {
			n, c.takes = c.takes[0], c.takes[1:]
			c.taking[n] = true
			name = c.nodeName[n] + "_take"
		}
		body.line("state %s {", name)
		if name == "start" {
			c.zeroMeta(&body)
			if len(c.altFail) > 0 {
				body.line("%s = %d;", c.exitField, noExit)
			}
		}
		for {
			next, ok, err := c.parseNode(&body, n, target)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			// A successor only this node leads to goes on in the same state.
			if next.node != nil && c.region[next.node] && len(c.preds[next.node]) == 1 {
				if _, done := states[next.node]; !done {
					n = next.node
					continue
				}
			}
			body.line("transition %s;", target(n, next))
			break
		}
		body.line("}")
		body.line("")
	}
	if !c.region[c.start] {
		body.line("state start {")
		c.zeroMeta(&body)
		body.line("transition accept;")
		body.line("}")
		body.line("")
	}
	for _, n := range c.order {
		s, ok := failStates[n]
		if !ok {
			continue
		}
		body.line("state %s {", s)
		body.line("verify(false, error.%s);", c.errorName(n))
		body.line("transition reject;")
		body.line("}")
		body.line("")
	}
	if c.noMatch {
		body.line("state %s {", noMatch)
		body.line("verify(false, error.NoMatch);")
		body.line("transition reject;")
		body.line("}")
		body.line("")
	}
	for i, d := range c.exits {
		if c.exitField == "" {
			break
		}
		body.line("state %s {", exitStates[i])
		body.line("%s = %d; // %s", c.exitField, i, d)
		body.line("transition accept;")
		body.line("}")
		body.line("")
	}
	if c.opt.Arch == V1Model {
		w.line("parser ParserImpl(packet_in packet, out headers_t hdr, inout %s %s, inout standard_metadata_t standard_metadata) {", c.metaType, c.metaParam)
	} else {
		w.line("parser ParserImpl(packet_in packet, out headers_t hdr, inout %s %s, inout standard_metadata_t smeta) {", c.metaType, c.metaParam)
	}
	out := w.b.Bytes()
	out = append(out, bytesTrimBlank(body.b.Bytes())...)
	out = append(out, "}\n\n"...)
	return out, nil
}

func bytesTrimBlank(b []byte) []byte {
	for len(b) >= 2 && b[len(b)-1] == '\n' && b[len(b)-2] == '\n' {
		b = b[:len(b)-1]
	}
	return b
}

// zeroMeta sets the model's metadata to zero, as every frame starts.
func (c *gen) zeroMeta(w *out) {
	first := true
	for _, h := range c.s.Headers {
		if !h.Metadata {
			continue
		}
		for i := range h.Fields {
			if first {
				w.line("// The model's metadata starts at zero.")
				first = false
			}
			w.line("%s = 0;", c.field(packet.FieldRef{Header: h.ID, Field: i}))
		}
	}
}

// errorName is the parser error a failed check at n raises.
func (c *gen) errorName(n *dataflow.Node) string {
	name := c.nodeName[n]
	if !slices.Contains(c.errors, name) {
		c.errors = append(c.errors, name)
	}
	return name
}

// parseNode writes node n's statements. When the state goes on (ok), next
// is where; otherwise n ended the state with a transition.
func (c *gen) parseNode(w *out, n *dataflow.Node, target func(*dataflow.Node, dest) string) (next dest, ok bool, err error) {
	o := n.Op
	sc := &scope{}
	switch o.Kind {
	case packet.OpInput, packet.OpNop, packet.OpContext:
		return c.succ(n, 0), true, nil
	case packet.OpCount:
		w.line("// %s: count %q (counted in the control)", c.nodeName[n], o.Label)
		return c.succ(n, 0), true, nil
	case packet.OpSet:
		w.line("// %s", c.nodeName[n])
		for _, a := range o.Assign {
			w.line("%s = %s;", c.field(a.Dst), bare(c.as(a.Src, c.s.FieldSpec(a.Dst).Width, sc)))
		}
		return c.succ(n, 0), true, nil
	case packet.OpExtract:
		h := o.Header
		if c.info[n].always[h] {
			w.line("// %s: %s is there already", c.nodeName[n], c.s.Headers[h].Name)
			return c.succ(n, 0), true, nil
		}
		if c.info[n].ever[h] && !c.taking[n] {
			// Valid on some paths here (the analysis cannot tell them
			// apart): extract does nothing then.
			w.line("transition select(hdr.%s.isValid()) {", c.hdrName[h])
			w.line("true: %s;", target(n, c.succ(n, 0)))
			w.line("default: %s_take;", c.nodeName[n])
			w.line("}")
			c.takes = append(c.takes, n)
			return dest{}, false, nil
		}
		alt, isAlt := c.altFail[n]
		if isAlt {
			code := noExit // the parse failure
			if !c.isFail(alt) {
				code = c.exitIndex(alt)
			}
			w.line("%s = %d; // if it does not fit: %s", c.exitField, code, alt)
		}
		w.line("packet.extract(hdr.%s); // %s", c.hdrName[h], c.nodeName[n])
		if isAlt {
			defer w.line("%s = %d;", c.exitField, noExit)
		}
		if v, ok := c.varName[h]; ok {
			spec := c.s.Headers[h]
			size := spec.Fields[len(spec.Fields)-1].Length
			m, err := c.varMax(h)
			if err != nil {
				return dest{}, false, err
			}
			if r, ok := c.rereads[n]; ok {
				w.line("%s = %d; // if the rest does not fit: %s, read as %s", c.exitField, c.rereadIndex(n), r.to, c.s.Headers[r.y.Op.Header].Name)
			}
			sc := &scope{}
			check := c.varCheck(h)
			if check == "" {
				check = fmt.Sprintf("%s <= %s", paren(c.value(size, sc)), lit(packet.V(uint64(m)), size.Width))
			}
			w.line("verify(%s, error.%s);", check, c.errorName(n))
			w.line("packet.extract(hdr.%s, %s);", v, bare(fmt.Sprintf("(%s * 8)", paren(c.as(size, 32, sc)))))
		}
		return c.succ(n, 0), true, nil
	case packet.OpTest:
		t, f := c.succ(n, 0), c.succ(n, 1)
		cond := c.cond(o.Cond, sc)
		switch {
		case sameDest(t, f):
			return t, true, nil
		case c.isFail(f):
			w.line("verify(%s, error.%s);", bare(cond), c.errorName(n))
			return t, true, nil
		case c.isFail(t):
			w.line("verify(!%s, error.%s);", paren(cond), c.errorName(n))
			return f, true, nil
		}
		w.line("transition select(%s) {", bare(cond))
		w.line("true: %s;", target(n, t))
		w.line("default: %s;", target(n, f))
		w.line("}")
		return dest{}, false, nil
	case packet.OpSwitch:
		ds := c.succs(n)
		if slices.IndexFunc(ds, func(d dest) bool { return !sameDest(d, ds[0]) }) < 0 {
			return ds[0], true, nil
		}
		ports := o.Ports(c.s)
		port := func(name string) dest { return ds[slices.Index(ports, name)] }
		w.line("transition select(%s) {", bare(c.value(o.Expr, sc)))
		dflt := port(o.Default)
		for _, cs := range o.Cases {
			d := port(cs.Port)
			if c.isFail(d) && c.isFail(dflt) {
				continue // the default's
			}
			w.line("%s: %s;", lit(cs.Value, o.Expr.Width), target(n, d))
		}
		if c.isFail(dflt) {
			w.line("default: %s;", noMatch)
			c.noMatch = true
		} else {
			w.line("default: %s;", target(n, dflt))
		}
		w.line("}")
		return dest{}, false, nil
	}
	return dest{}, false, c.refuse(n, "%s cannot run in a P4 parser", o.Describe(c.s))
}

// varCheck is the condition under which header h's variable-length size
// is one a frame can have (the model fails the extraction otherwise, as a
// "negative" size is huge), written as a range of the one field it
// depends on when it is one (ipv4: ihl >= 5); "" when it is not.
func (c *gen) varCheck(h int) string {
	spec := c.s.Headers[h]
	f := spec.Fields[len(spec.Fields)-1]
	reads := lengthReads(spec)
	if len(reads) != 1 || spec.Fields[reads[0]].Width > 16 {
		return ""
	}
	ref := packet.FieldRef{Header: h, Field: reads[0]}
	w := spec.Fields[reads[0]].Width
	p := packet.NewPacket(c.s)
	p.Reset(make([]byte, spec.FixedBytes()))
	p.Hdr[h] = packet.HeaderState{Off: 0, Len: spec.FixedBytes(), Valid: true}
	lo, hi := -1, -1
	for v := 0; v < 1<<w; v++ {
		p.Set(ref, packet.V(uint64(v)))
		size, ok := f.Length.Eval(p, nil)
		good := ok && size.Hi == 0 && size.Lo <= 1<<16
		switch {
		case good && lo < 0:
			lo, hi = v, v
		case good && hi == v-1:
			hi = v
		case good:
			return "" // not one range
		}
	}
	if lo < 0 {
		return "false"
	}
	var terms []string
	if lo > 0 {
		terms = append(terms, fmt.Sprintf("%s >= %s", c.field(ref), lit(packet.V(uint64(lo)), w)))
	}
	if hi < 1<<w-1 {
		terms = append(terms, fmt.Sprintf("%s <= %s", c.field(ref), lit(packet.V(uint64(hi)), w)))
	}
	if len(terms) == 0 {
		return "true"
	}
	return strings.Join(terms, " && ")
}
