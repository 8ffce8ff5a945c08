package dataflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
)

// Predicates holds the predicate of every port of a graph: which packets
// leave by it, in the state they leave in. They are computed once, in
// topological order, from the operations: a `test ipv4.proto == 17` node's
// true port carries that atom, its false port the negation; an operation
// that writes (set, push, pop, checksum compute, a table's action) first
// forgets what it overwrites, then adds what it establishes (`set
// ipv4.ttl = 64` gives ∃ipv4.ttl. P ∧ ipv4.ttl == 64; `checksum compute
// udp` gives csum_ok(udp)). Symbolic atoms stand for what no field says:
// pred(Node,port) for what a source or a driver context delivers,
// parsed(h) for a frame that parses from header h, csum_ok(h) for a valid
// checksum. valid(h) and parsed(h) describe the frame as parsed from its
// start; parsing again does not change them.
type Predicates struct {
	Space   *predicate.Space
	g       *Graph
	port    map[*Port]predicate.Pred
	in      map[*Node]predicate.Pred
	spawned map[*Node]bool
	icrc    []string // the atoms icrc_ok(H) of every wire header H, made once
}

// Predicates computes (once) and returns the port predicates in a Space of
// their own. The graph must be valid.
func (g *Graph) Predicates() *Predicates {
	if g.preds == nil {
		g.preds = g.PredicatesIn(predicate.NewSpace())
	}
	return g.preds
}

// PredicatesIn computes the port predicates in space s, so that they can
// be compared with those of another graph over the same schema.
func (g *Graph) PredicatesIn(s *predicate.Space) *Predicates {
	return computePredicates(g, s)
}

// Port is the predicate of packets leaving by p.
func (ps *Predicates) Port(p *Port) predicate.Pred { return ps.port[p] }

// Reaching is the predicate of packets that reach n: for an F-node, those
// entering it; for an O-node, those leaving by either port.
func (ps *Predicates) Reaching(n *Node) predicate.Pred {
	if n.Kind == ONode {
		var out []predicate.Pred
		for _, p := range n.Ports {
			out = append(out, ps.port[p])
		}
		return ps.Space.Or(out...)
	}
	return ps.in[n]
}

func computePredicates(g *Graph, s *predicate.Space) *Predicates {
	ps := &Predicates{Space: s, g: g, port: map[*Port]predicate.Pred{}, in: map[*Node]predicate.Pred{}, spawned: spawnTargets(g)}
	for _, n := range g.Order() {
		switch n.Kind {
		case ONode:
			ps.logic(n)
		default:
			in := ps.input(n)
			ps.in[n] = in
			if n.Op.Kind == packet.OpPlace && ps.placedBefore(n) {
				// A place after another of the same state decides afresh
				// (seed 104, model 79: a segment placed, then found a
				// duplicate by a second place, had that port cut).
				in = in.ForgetField(PlaceField(g.Schema.States[n.Op.State]))
			}
			for _, p := range n.Ports {
				out := ps.effect(n, p, in.And(ps.Condition(n, p)))
				if p.Pred != "" {
					out = out.And(ps.Atom(p.Pred))
				}
				ps.port[p] = out
			}
		}
	}
	return ps
}

// input is the OR of the predicates of the edges into n. Sources admit
// everything their own port atom allows; a spawned task is a fresh packet
// known only by the symbol spawn(Node).
func (ps *Predicates) input(n *Node) predicate.Pred {
	s := ps.Space
	if n.Source {
		return s.True()
	}
	var terms []predicate.Pred
	for _, e := range n.In {
		terms = append(terms, ps.port[e.From])
	}
	if ps.spawned[n] {
		terms = append(terms, s.Symbol(fmt.Sprintf("spawn(%s)", n.Name)))
	}
	return s.Or(terms...)
}

// logic gives an O-node's ports their predicates; see Truthy for what each
// operand contributes.
func (ps *Predicates) logic(n *Node) {
	s := ps.Space
	var ts, fs []predicate.Pred
	for _, x := range Operands(n) {
		var t, f []predicate.Pred
		for _, e := range n.In {
			if e.From.Node != x {
				continue
			}
			if Truthy(e.From) {
				t = append(t, ps.port[e.From])
			} else {
				f = append(f, ps.port[e.From])
			}
		}
		ts, fs = append(ts, s.Or(t...)), append(fs, s.Or(f...))
	}
	var yes, no predicate.Pred
	switch n.Logic {
	case And, Nand:
		yes, no = s.And(ts...), s.Or(fs...)
	case Or, Nor:
		yes, no = s.Or(ts...), s.And(fs...)
	case Not:
		yes, no = s.Or(fs...), s.Or(ts...)
	}
	if n.Logic == Nand || n.Logic == Nor {
		yes, no = no, yes
	}
	for _, p := range n.Ports {
		c := no
		if p.Name == packet.PortTrue {
			c = yes
		}
		if p.Pred != "" {
			c = c.And(ps.Atom(p.Pred))
		}
		ps.port[p] = c
	}
}

// Condition is what leaving n by port p says about the packet, beyond
// having reached n (a test's condition, a lookup's action), before n's
// effect.
func (ps *Predicates) Condition(n *Node, p *Port) predicate.Pred {
	s := ps.Space
	if n.Kind != FNode {
		return s.Symbol(fmt.Sprintf("pred(%s,%s)", n.Name, p.Name))
	}
	op := n.Op
	schema := ps.g.Schema
	yes := p.Name == packet.PortTrue
	pick := func(c predicate.Pred) predicate.Pred {
		if yes {
			return c
		}
		return c.Not()
	}
	switch op.Kind {
	case packet.OpInput:
		c := s.Symbol(fmt.Sprintf("pred(%s,%s)", n.Name, p.Name))
		if op.Header >= 0 { // a parse that succeeds has its first header
			c = c.And(ps.parsed(op.Header)).And(s.Valid(schema.Headers[op.Header].Name))
		}
		return c
	case packet.OpContext:
		return s.Symbol(fmt.Sprintf("pred(%s,%s)", n.Name, p.Name))
	case packet.OpExtract:
		return s.True() // see effect: it depends on whether H was there
	case packet.OpParse:
		if yes {
			return ps.parsed(op.Header).And(s.Valid(schema.Headers[op.Header].Name))
		}
		return ps.parsed(op.Header).Not()
	case packet.OpChecksumVerify:
		return pick(ps.CsumOK(op.Header))
	case packet.OpICRCVerify:
		return pick(ps.ICRCOK(op.Header))
	case packet.OpTest:
		return pick(ps.Cond(op.Cond))
	case packet.OpSwitch:
		var hit []predicate.Pred
		for _, c := range op.Cases {
			eq := ps.equals(op.Expr, c.Value)
			if c.Port == p.Name {
				hit = append(hit, eq)
			}
		}
		if p.Name == op.Default {
			var none []predicate.Pred
			for _, c := range op.Cases {
				if c.Port != p.Name {
					none = append(none, ps.equals(op.Expr, c.Value).Not())
				}
			}
			hit = append(hit, s.And(none...))
		}
		return s.Or(hit...)
	case packet.OpLookup:
		t := schema.Tables[op.Table].Spec
		return s.Eq(ActionField(t), packet.V(uint64(p.Index)))
	case packet.OpPlace:
		return ps.PlaceOutcome(op.State, p.Index)
	case packet.OpLoad, packet.OpStore:
		// hit(R) on a load's hit port; full(R) on a store's full port.
		name := "hit("
		if op.Kind == packet.OpStore {
			name, yes = "full(", p.Index == 1
		} else {
			yes = p.Index == 0
		}
		return pick(s.Symbol(name + schema.Registers[op.Register].Name + ")"))
	}
	return s.True()
}

// PlaceOutcome is the atom "a place on state st left by port i"
// (placed(events), complete(events), …): one value of the synthetic field
// "st.place", so the ports of a place exclude each other, and a claim of
// it on a PRG sink decides the LPG's place behind it (embed/rxoffload.go);
// a place after another of the same state forgets the first's outcome.
func (ps *Predicates) PlaceOutcome(st, i int) predicate.Pred {
	return ps.Space.Eq(PlaceField(ps.g.Schema.States[st]), packet.V(uint64(i)))
}

// placedBefore says a place of n's state may run before place n: the
// outcome the predicates carry is then that place's, not n's. (A sink's
// claim with no place before n still decides n: it speaks of n.)
func (ps *Predicates) placedBefore(n *Node) bool {
	return upstream(n, func(e *Edge) (bool, bool) {
		from := e.From.Node
		return from.Kind == FNode && from.Op.Kind == packet.OpPlace && from.Op.State == n.Op.State, false
	})
}

// upstream walks the edges into n and, for each node it reaches the first
// time, the edges into that node, asking at of the edge it came by: found
// ends the walk with true, stop does not go on past that node.
func upstream(n *Node, at func(e *Edge) (found, stop bool)) bool {
	seen := map[*Node]bool{}
	todo := []*Node{n}
	for len(todo) > 0 {
		x := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, e := range x.In {
			from := e.From.Node
			if seen[from] {
				continue
			}
			seen[from] = true
			found, stop := at(e)
			if found {
				return true
			}
			if !stop {
				todo = append(todo, from)
			}
		}
	}
	return false
}

// PlaceField is the synthetic field naming how a place on st ended.
func PlaceField(st *packet.StateDef) predicate.Field {
	return predicate.Field{Name: st.Name + ".place", Width: 4}
}

// Atom is the predicate a port's `pred "…"` text stands for: a place
// outcome such as complete(events) when it names a place port and a
// state, else a symbol of that name.
func (ps *Predicates) Atom(text string) predicate.Pred {
	if st, i, ok := PlaceAtom(ps.g.Schema, text); ok {
		return ps.PlaceOutcome(st, i)
	}
	return ps.Space.Symbol(text)
}

// PlaceAtom parses "PORT(STATE)" into the state's index and the place
// port's index.
func PlaceAtom(s *packet.Schema, text string) (st, port int, ok bool) {
	name, rest, found := strings.Cut(text, "(")
	if !found || !strings.HasSuffix(rest, ")") {
		return 0, 0, false
	}
	port = slices.Index(packet.PlacePorts, name)
	st, ok = s.State(strings.TrimSuffix(rest, ")"))
	return st, port, ok && port >= 0
}

// Parsed is the atom "the frame parses from header h".
func (ps *Predicates) Parsed(h int) predicate.Pred { return ps.parsed(h) }

func (ps *Predicates) parsed(h int) predicate.Pred {
	return ps.Space.Symbol(fmt.Sprintf("parsed(%s)", ps.g.Schema.Headers[h].Name))
}

// CsumOK is the atom "header h's checksum is valid".
func (ps *Predicates) CsumOK(h int) predicate.Pred {
	return ps.Space.Symbol(fmt.Sprintf("csum_ok(%s)", ps.g.Schema.Headers[h].Name))
}

// ICRCOK is the atom "the RoCEv2 ICRC of the transport starting at header
// h is valid".
func (ps *Predicates) ICRCOK(h int) predicate.Pred {
	return ps.Space.Symbol(icrcOK(ps.g.Schema.Headers[h]))
}

func icrcOK(h *packet.HeaderSpec) string { return fmt.Sprintf("icrc_ok(%s)", h.Name) }

// forgetICRC forgets every ICRC's validity: an ICRC covers every wire byte
// from the IP header on, so any write to the wire may change it.
func (ps *Predicates) forgetICRC(p predicate.Pred) predicate.Pred {
	if ps.icrc == nil {
		ps.icrc = []string{}
		for _, h := range ps.g.Schema.Headers {
			if !h.Metadata {
				ps.icrc = append(ps.icrc, icrcOK(h))
			}
		}
	}
	for _, a := range ps.icrc {
		p = p.ForgetSymbol(a)
	}
	return p
}

// effect applies what an F-node writes to the predicate p of packets
// leaving by port.
func (ps *Predicates) effect(n *Node, port *Port, p predicate.Pred) predicate.Pred {
	if n.Kind != FNode {
		return p
	}
	return ps.forgetLookups(n, port, ps.writes(n, port, p))
}

// forgetLookups forgets which action a table ran once n may have changed
// what its key reads: a second lookup of the same table then decides
// afresh (seed 31337, model 276: a set of the key's field between two
// lookups kept the first's outcome, and the second's other port was cut);
// so does whether a register's load hits and its store finds it full.
func (ps *Predicates) forgetLookups(n *Node, port *Port, p predicate.Pred) predicate.Pred {
	schema := ps.g.Schema
	var w written
	switch op := n.Op; op.Kind {
	case packet.OpParse:
		w.all = ps.changedSinceParse(n)
	case packet.OpPlace:
		w.all = port.Name == packet.PlacePorts[packet.PlaceComplete]
	case packet.OpExtract:
		w.header(op.Header)
	case packet.OpPush, packet.OpPop:
		w.header(op.Header)
		w.lengths = true
	case packet.OpCut:
		w.lengths = true
	case packet.OpChecksumCompute:
		w.field(packet.FieldRef{Header: op.Header, Field: schema.Headers[op.Header].Checksum})
	case packet.OpSet:
		w.assigns(op.Assign)
	case packet.OpLookup:
		w.assigns(schema.Actions[schema.Tables[op.Table].Actions[port.Index]].Body)
	case packet.OpLoad:
		w.header(schema.Registers[op.Register].Value)
	case packet.OpStore:
		// The register holds what it did not: a later load or store of
		// it decides afresh (seed 20261210, model 5457).
		p = forgetRegister(p, schema.Registers[op.Register].Name)
	case packet.OpICRCCompute:
		for _, t := range schema.Headers {
			if schema.ICRCMayWrite(op.Header, t.ID) {
				w.header(t.ID)
			}
		}
	}
	if !w.all && !w.lengths && len(w.headers)+len(w.fields) == 0 {
		return p
	}
	for _, t := range schema.Tables {
		if w.all || slices.ContainsFunc(t.Keys, w.read) {
			p = p.ForgetField(ActionField(t.Spec))
		}
	}
	for _, r := range schema.Registers {
		if w.all || slices.ContainsFunc(r.Keys, w.read) {
			p = forgetRegister(p, r.Name)
		}
	}
	return p
}

// forgetRegister forgets whether a load of register name hits and a
// store of it finds it full.
func forgetRegister(p predicate.Pred, name string) predicate.Pred {
	return p.ForgetSymbol("hit(" + name + ")").ForgetSymbol("full(" + name + ")")
}

// written is what a node may change: whole headers (contents and
// validity), single fields, every header's length, or everything.
type written struct {
	all, lengths bool
	headers      map[int]bool
	fields       map[packet.FieldRef]bool
}

func (w *written) header(h int) {
	if w.headers == nil {
		w.headers = map[int]bool{}
	}
	w.headers[h] = true
}

func (w *written) field(f packet.FieldRef) {
	if w.fields == nil {
		w.fields = map[packet.FieldRef]bool{}
	}
	w.fields[f] = true
}

func (w *written) assigns(as []packet.Assign) {
	for _, a := range as {
		w.field(a.Dst)
	}
}

// read reports whether e reads something w changes.
func (w *written) read(e *packet.Expr) bool {
	if e == nil {
		return false
	}
	switch e.Kind {
	case packet.EField:
		return w.headers[e.Field.Header] || w.fields[e.Field]
	case packet.EValid:
		return w.headers[e.Header]
	case packet.ELen:
		return w.lengths || w.headers[e.Header]
	}
	return w.read(e.A) || w.read(e.B)
}

// writes applies what the F-node n writes to p.
func (ps *Predicates) writes(n *Node, port *Port, p predicate.Pred) predicate.Pred {
	op := n.Op
	schema := ps.g.Schema
	switch op.Kind {
	case packet.OpParse:
		// (input parse H is not: a PRG's Tx entry parses what the LPG
		// built, and the Tx stages compare what it knows of it.)
		if !ps.changedSinceParse(n) {
			return p // the same bytes parse into the same headers
		}
		// A header extracted since the last parse is gone, others may
		// have moved: what was known of the wire headers no longer holds,
		// and the port's condition is about the headers found now.
		cond := ps.Condition(n, port)
		p = ps.in[n]
		for _, h := range schema.Headers {
			if !h.Metadata {
				p = ps.forgetHeader(p, h.ID, true).ForgetValid(h.Name)
			}
		}
		return ps.forgetParsed(p).And(cond)
	case packet.OpExtract:
		// A header already there stays as it is (true); one that is not
		// comes from the frame with any contents (true) or does not fit.
		v := ps.Space.Valid(schema.Headers[op.Header].Name)
		fresh := ps.forgetHeader(p.And(v.Not()), op.Header, port.Name == packet.PortTrue)
		if port.Name == packet.PortTrue {
			return p.And(v).Or(fresh)
		}
		return fresh
	case packet.OpSet:
		return ps.assign(p, op.Assign, op.Update)
	case packet.OpLookup:
		def := schema.Tables[op.Table]
		return ps.assign(p, schema.Actions[def.Actions[port.Index]].Body, nil)
	case packet.OpPush:
		p = ps.forgetParsed(p)
		p = ps.forgetHeader(p, op.Header, true)
		for i, f := range schema.Headers[op.Header].Fields {
			if !f.Variable() {
				p = p.And(ps.Space.Eq(ps.Field(packet.FieldRef{Header: op.Header, Field: i}), packet.Value{}))
			}
		}
		// A header pushed in front of the frame is in front of what every
		// checksum covers; unless it is an IP header (whose addresses a
		// pseudo-header takes), those checksums still hold.
		var kept []int
		if op.After < 0 && !schema.IsIP(op.Header) {
			for _, h := range schema.Headers {
				if h.ID != op.Header {
					kept = append(kept, h.ID)
				}
			}
		}
		return ps.forgetICRC(ps.forgetChecksums(p, kept))
	case packet.OpPop:
		p = ps.forgetParsed(p)
		// An update keeps a checksum valid only where the popped header lay
		// in what it covers, after its own header; one before it (IPv4
		// under UDP: its pseudo-header) is not patched (seed 20261207,
		// models 3118 and 3888).
		var kept []int
		for _, u := range op.Update {
			if schema.MayFollow(u, op.Header) {
				kept = append(kept, u)
			}
		}
		p = ps.forgetICRC(ps.forgetUpdated(ps.forgetChecksums(ps.forgetHeader(p, op.Header, false), kept), kept))
		// The patch keeps the sum of what is left, but a checksum that
		// ends where an IP header's length says now reaches as many bytes
		// past the end, as a pop does not shorten the lengths (seed
		// 20261129, model 3925). Setting them with update makes it hold
		// again; the analysis does not follow that and forgets it here.
		ip := ps.Space.False()
		for _, h := range schema.Headers {
			if schema.IsIP(h.ID) {
				ip = ip.Or(ps.Space.Valid(h.Name))
			}
		}
		for _, u := range kept {
			if schema.Headers[u].ChecksumKind != packet.ChecksumHeader {
				p = p.And(ip.Not()).Or(p.And(ip).ForgetSymbol(fmt.Sprintf("csum_ok(%s)", schema.Headers[u].Name)))
			}
		}
		return p
	case packet.OpPlace:
		if port.Name != packet.PlacePorts[packet.PlaceComplete] {
			return p
		}
		// The packet is the event now: no header of the segment is left.
		for _, h := range schema.Headers {
			if !h.Metadata {
				p = ps.forgetHeader(p, h.ID, false)
			}
		}
		return p
	case packet.OpChecksumCompute:
		h := schema.Headers[op.Header]
		sum := packet.FieldRef{Header: op.Header, Field: h.Checksum}
		p = p.ForgetField(ps.Field(sum))
		// The new checksum is bytes another checksum may cover (a header
		// in a UDP payload): that one no longer holds.
		for _, c := range schema.Headers {
			if c.ID != op.Header && schema.ChecksumCovers(c.ID, sum) {
				p = p.ForgetSymbol(fmt.Sprintf("csum_ok(%s)", c.Name))
			}
		}
		p = p.ForgetSymbol(fmt.Sprintf("csum_ok(%s)", h.Name)).And(ps.CsumOK(op.Header))
		if h.ChecksumOptional { // a computed zero is sent as all ones
			p = p.And(ps.Space.Eq(ps.Field(sum), packet.Value{}).Not())
		}
		return p
	case packet.OpICRCCompute:
		for _, t := range schema.Headers {
			if schema.ICRCMayWrite(op.Header, t.ID) {
				for i, f := range t.Fields {
					if !f.Variable() {
						p = p.ForgetField(ps.Field(packet.FieldRef{Header: t.ID, Field: i}))
					}
				}
			}
		}
		return ps.forgetICRC(p).And(ps.ICRCOK(op.Header))
	case packet.OpLoad:
		// The register's value header now holds the entry, or zeros.
		h := schema.Registers[op.Register].Value
		for i := range schema.Headers[h].Fields {
			f := ps.Field(packet.FieldRef{Header: h, Field: i})
			p = p.ForgetField(f)
			if port.Index == 1 {
				p = p.And(ps.Space.Eq(f, packet.Value{}))
			}
		}
		return p
	case packet.OpCut:
		return ps.forgetICRC(ps.forgetChecksums(p, nil))
	}
	return p
}

// forgetHeader makes header h valid or invalid with unknown contents.
func (ps *Predicates) forgetHeader(p predicate.Pred, h int, valid bool) predicate.Pred {
	spec := ps.g.Schema.Headers[h]
	for i, f := range spec.Fields {
		if !f.Variable() {
			p = p.ForgetField(ps.Field(packet.FieldRef{Header: h, Field: i}))
		}
	}
	p = p.ForgetSymbol(fmt.Sprintf("csum_ok(%s)", spec.Name)).ForgetSymbol(icrcOK(spec)).ForgetValid(spec.Name)
	v := ps.Space.Valid(spec.Name)
	if !valid {
		v = v.Not()
	}
	return p.And(v)
}

// Malformed is the predicate of packets on which evaluating e reads a
// field of a header they lack, so that the interpreter drops them as
// malformed; && and || short-circuit as packet.Expr.Eval does.
func (ps *Predicates) Malformed(e *packet.Expr) predicate.Pred {
	s := ps.Space
	lacks := func(h int) predicate.Pred {
		if spec := ps.g.Schema.Headers[h]; !spec.Metadata {
			return s.Valid(spec.Name).Not()
		}
		return s.False()
	}
	switch e.Kind {
	case packet.EField:
		return lacks(e.Field.Header)
	case packet.ELen:
		return lacks(e.Header)
	case packet.EAnd, packet.EOr:
		a := ps.Malformed(e.A)
		goesOn := ps.Cond(e.A) // && reads B when A holds, || when it does not
		if e.Kind == packet.EOr {
			goesOn = goesOn.Not()
		}
		return a.Or(a.Not().And(goesOn).And(ps.Malformed(e.B)))
	}
	out := s.False()
	for _, x := range []*packet.Expr{e.A, e.B} {
		if x != nil {
			out = out.Or(ps.Malformed(x))
		}
	}
	return out
}

// forgetParsed forgets which headers the frame parses from: after a
// header is pushed or popped, or a field the parse graph reads is
// written, parsing again may find other headers.
func (ps *Predicates) forgetParsed(p predicate.Pred) predicate.Pred {
	for _, h := range ps.g.Schema.Headers {
		if !h.Metadata {
			p = p.ForgetSymbol(fmt.Sprintf("parsed(%s)", h.Name))
		}
	}
	return p
}

// steersParse reports whether writing f can change what a parse finds: f
// selects a next header, or sits in a header with a variable-length field.
func (ps *Predicates) steersParse(f packet.FieldRef) bool {
	s := ps.g.Schema
	for _, e := range s.Next {
		if e.From == f.Header && e.Field == f.Field {
			return true
		}
	}
	return slices.ContainsFunc(s.Headers[f.Header].Fields, func(fs packet.FieldSpec) bool { return fs.Variable() })
}

// forgetChecksums forgets the validity of every checksum that covers what
// follows its header (message and L4 checksums), except those in keep,
// which the operation updates incrementally. Pushing or popping a header
// changes what such checksums cover.
func (ps *Predicates) forgetChecksums(p predicate.Pred, keep []int) predicate.Pred {
	for _, h := range ps.g.Schema.Headers {
		if h.Checksum >= 0 && h.ChecksumKind != packet.ChecksumHeader && !slices.Contains(keep, h.ID) {
			p = p.ForgetSymbol(fmt.Sprintf("csum_ok(%s)", h.Name))
		}
	}
	return p
}

// forgetUpdated forgets the value of each checksum patched incrementally
// (RFC 1624): it stays valid, but what was known of its bits (that it was
// not zero, say) no longer holds — except, for an optional checksum
// (RFC 768), whether it is zero: a zero stays zero and a computed zero is
// written as 0xffff (packet.ApplyChecksumDelta).
func (ps *Predicates) forgetUpdated(p predicate.Pred, update []int) predicate.Pred {
	for _, h := range update {
		spec := ps.g.Schema.Headers[h]
		f := ps.Field(packet.FieldRef{Header: h, Field: spec.Checksum})
		if !spec.ChecksumOptional {
			p = p.ForgetField(f)
			continue
		}
		zero := ps.Space.Eq(f, packet.Value{})
		p = p.And(zero).ForgetField(f).And(zero).Or(p.And(zero.Not()).ForgetField(f).And(zero.Not()))
	}
	return p
}

// assign applies assignments in order: each forgets its field, a constant
// pins it, and every checksum covering the field becomes unknown, or, when
// updated incrementally, stays valid with a value unknown.
func (ps *Predicates) assign(p predicate.Pred, as []packet.Assign, update []int) predicate.Pred {
	schema := ps.g.Schema
	for _, a := range as {
		f := ps.Field(a.Dst)
		p = p.ForgetField(f)
		if !schema.Headers[a.Dst.Header].Metadata {
			p = ps.forgetICRC(p)
			if ps.steersParse(a.Dst) {
				p = ps.forgetParsed(p)
			}
		}
		if a.Src.Kind == packet.EConst {
			p = p.And(ps.Space.Eq(f, a.Src.Const.And(packet.Mask(f.Width))))
		}
		for _, c := range schema.Headers {
			if c.Checksum < 0 || !schema.ChecksumCovers(c.ID, a.Dst) {
				continue
			}
			if slices.Contains(update, c.ID) {
				p = ps.forgetUpdated(p, []int{c.ID})
				// The patched checksum is bytes another checksum may
				// cover (a header's own inside a UDP payload), which no
				// patch follows (seed 20261213, model 393).
				sum := packet.FieldRef{Header: c.ID, Field: c.Checksum}
				for _, o := range schema.Headers {
					if o.ID != c.ID && o.Checksum >= 0 && schema.ChecksumCovers(o.ID, sum) {
						p = p.ForgetSymbol(fmt.Sprintf("csum_ok(%s)", o.Name))
					}
				}
			} else {
				p = p.ForgetSymbol(fmt.Sprintf("csum_ok(%s)", c.Name))
			}
		}
	}
	return p
}

// ActionField is the synthetic field naming which action a lookup ran, so
// that the ports of one lookup exclude each other.
func ActionField(t *packet.TableSpec) predicate.Field {
	w := 1
	for 1<<w < len(t.Actions) {
		w++
	}
	return predicate.Field{Name: t.Name + ".action", Width: w}
}

func (ps *Predicates) equals(e *packet.Expr, v packet.Value) predicate.Pred {
	if e.Kind == packet.EField {
		return ps.Space.Eq(ps.Field(e.Field), v)
	}
	return ps.Space.Symbol(fmt.Sprintf("%s == %s", e.Text, v))
}

// Field is a packet field as the predicates name it.
func (ps *Predicates) Field(f packet.FieldRef) predicate.Field {
	return predicate.Field{Name: ps.g.Schema.FieldName(f), Width: ps.g.Schema.FieldSpec(f).Width}
}

// Cond turns a boolean expression into a predicate: comparisons of a field
// with a constant become grounded atoms, anything else a symbolic atom
// named by its source text.
func (ps *Predicates) Cond(e *packet.Expr) predicate.Pred {
	s := ps.Space
	switch e.Kind {
	case packet.ENot:
		return ps.Cond(e.A).Not()
	case packet.EAnd:
		return ps.Cond(e.A).And(ps.Cond(e.B))
	case packet.EOr:
		return ps.Cond(e.A).Or(ps.Cond(e.B))
	case packet.EValid:
		return s.Valid(ps.g.Schema.Headers[e.Header].Name)
	case packet.EMasked:
		if e.A.Kind == packet.EField {
			return s.Masked(ps.Field(e.A.Field), e.Value, e.Mask)
		}
	case packet.ERange:
		if e.A.Kind == packet.EField {
			return s.Range(ps.Field(e.A.Field), e.Lo, e.Hi)
		}
	case packet.EEq, packet.ENe, packet.ELt, packet.ELe, packet.EGt, packet.EGe:
		op := cmpOps[e.Kind]
		if e.A.Kind == packet.EField && e.B.Kind == packet.EConst {
			return s.Cmp(ps.Field(e.A.Field), op, e.B.Const)
		}
		if e.B.Kind == packet.EField && e.A.Kind == packet.EConst {
			return s.Cmp(ps.Field(e.B.Field), flipped[op], e.A.Const)
		}
	}
	return s.Symbol(e.Text)
}

var cmpOps = map[packet.ExprKind]string{
	packet.EEq: "==", packet.ENe: "!=", packet.ELt: "<", packet.ELe: "<=", packet.EGt: ">", packet.EGe: ">=",
}

var flipped = map[string]string{"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// ChangedSinceParse reports whether some path into n, since the last
// parse (or source) on it, extracts a header, pushes or pops one, or
// writes a field the parse graph reads: parsing again at n then finds
// other headers than the predicates of a frame parsed from its start say.
func (ps *Predicates) ChangedSinceParse(n *Node) bool { return ps.changedSinceParse(n) }

func (ps *Predicates) changedSinceParse(n *Node) bool {
	return upstream(n, func(e *Edge) (bool, bool) {
		from := e.From.Node
		if from.Kind != FNode {
			return false, false
		}
		switch op := from.Op; op.Kind {
		case packet.OpExtract, packet.OpPush, packet.OpPop, packet.OpPlace:
			return true, false
		case packet.OpSet:
			return ps.writesSelector(op.Assign), false
		case packet.OpLookup:
			def := ps.g.Schema.Tables[op.Table]
			return ps.writesSelector(ps.g.Schema.Actions[def.Actions[e.From.Index]].Body), false
		case packet.OpParse:
			return false, true
		case packet.OpInput:
			// An input that parses nothing leaves a frame whose headers
			// the parse finds afresh (what is known of them before, that
			// none is there yet, no longer holds after).
			return op.Header < 0, true
		}
		return false, false
	})
}

func (ps *Predicates) writesSelector(as []packet.Assign) bool {
	for _, a := range as {
		if !ps.g.Schema.Headers[a.Dst.Header].Metadata && ps.steersParse(a.Dst) {
			return true
		}
	}
	return false
}
