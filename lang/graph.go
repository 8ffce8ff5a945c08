package lang

import (
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/prg"
)

// A graph is built in two walks: the first names every node (a node
// declared in cluster Rx as Queue is RxQueue, Unicorn-style), the second
// resolves operations, ports and edges, so edges may point forward.

type placed struct {
	path []string // enclosing clusters
	node *NodeDecl
	lg   *LogicDecl
	cfg  *ConfigDecl
	n    *dataflow.Node
}

func (l *loader) graph(gd *GraphDecl) *dataflow.Graph {
	kind := dataflow.LPG
	if gd.Kind == "prg" {
		kind = dataflow.PRG
	}
	g := dataflow.New(gd.Name, kind, l.schema)
	var all []*placed
	var walk func(items []*Item, path []string)
	walk = func(items []*Item, path []string) {
		for _, it := range items {
			if it.Limits != nil {
				l.limits(g, gd, it.Limits, path)
				continue
			}
			if it.Cluster != nil {
				walk(it.Cluster.Items, append(slices.Clone(path), it.Cluster.Name))
				continue
			}
			p := &placed{path: path, node: it.Node, lg: it.Logic, cfg: it.Config}
			var name string
			var pos lexer.Position
			n := &dataflow.Node{Cluster: path}
			switch {
			case it.Node != nil:
				name, pos, n.Kind = it.Node.Name, it.Node.Pos, dataflow.FNode
			case it.Logic != nil:
				name, pos, n.Kind = it.Logic.Name, it.Logic.Pos, dataflow.ONode
				n.Logic, _ = dataflow.ParseLogic(it.Logic.Logic)
			default:
				name, pos, n.Kind = it.Config.Name, it.Config.Pos, dataflow.CNode
				n.Config = &dataflow.Config{Type: typeString(it.Config.Type), Value: literalString(it.Config.Value), Lit: literal(it.Config.Value)}
			}
			n.Name = strings.Join(path, "") + name
			n.Pos = posString(pos)
			if err := g.AddNode(n); err != nil {
				l.errorf(pos, "graph %s: %v", gd.Name, err)
				continue
			}
			p.n = n
			all = append(all, p)
		}
	}
	before := len(l.errs)
	walk(gd.Items, nil)
	for _, p := range all {
		switch {
		case p.node != nil:
			l.fnode(g, p)
		case p.lg != nil:
			l.attrs(p.n, p.lg.Attrs)
			l.ports(g, p, p.lg.Ports)
		default:
			l.attrs(p.n, p.cfg.Attrs)
			l.ports(g, p, p.cfg.Ports)
		}
	}
	if len(l.errs) > before {
		return nil
	}
	if err := g.Validate(); err != nil {
		l.graphErrors(err)
		return nil
	}
	// C-nodes with a value in the model run as that configuration.
	cg, err := prg.Configure(g, nil)
	if err != nil {
		l.graphErrors(err)
		return nil
	}
	return cg
}

func (l *loader) graphErrors(err error) {
	for _, e := range err.(dataflow.Errors) {
		l.errs = append(l.errs, &Error{parsePos(e.Pos), e.Msg})
	}
}

// parsePos reads back "file:line:col".
func parsePos(s string) lexer.Position {
	var p lexer.Position
	i := strings.LastIndexByte(s, ':')
	j := strings.LastIndexByte(s[:max(i, 0)], ':')
	if i < 0 || j < 0 {
		p.Filename = s
		return p
	}
	p.Filename = s[:j]
	p.Line, _ = strconv.Atoi(s[j+1 : i])
	p.Column, _ = strconv.Atoi(s[i+1:])
	return p
}

// limits records a PRG's declared resources.
func (l *loader) limits(g *dataflow.Graph, gd *GraphDecl, ld *LimitsDecl, path []string) {
	switch {
	case gd.Kind != "prg":
		l.errorf(ld.Pos, "lpg %s: only a prg declares limits", gd.Name)
		return
	case len(path) > 0:
		l.errorf(ld.Pos, "prg %s: limits belong to the whole prg, not to cluster %s", gd.Name, strings.Join(path, ""))
		return
	}
	for _, lim := range ld.Limits {
		if !slices.Contains(prg.LimitNames, lim.Name) {
			l.errorf(lim.Pos, "prg %s: unknown limit %s (want %s)", gd.Name, lim.Name, strings.Join(prg.LimitNames, ", "))
			continue
		}
		if _, dup := g.Limits[lim.Name]; dup {
			l.errorf(lim.Pos, "prg %s: limit %s declared twice", gd.Name, lim.Name)
			continue
		}
		v, err := smallInt(lim.Value, 1<<40)
		if err != nil {
			l.errorf(lim.Pos, "prg %s: limit %s: %v", gd.Name, lim.Name, err)
			continue
		}
		g.Limits[lim.Name] = v
	}
}

func typeString(t *TypeRef) string {
	if len(t.Args) == 0 {
		return t.Name
	}
	args := make([]string, len(t.Args))
	for i, a := range t.Args {
		if a.Int != nil {
			args[i] = *a.Int
		} else {
			args[i] = typeString(a.Type)
		}
	}
	return t.Name + "<" + strings.Join(args, ",") + ">"
}

func literalString(v *Literal) string {
	switch {
	case v == nil:
		return ""
	case v.String != nil:
		s, _ := strconv.Unquote(*v.String)
		return s
	case v.Value != nil:
		return *orElse(v.Value.Int, v.Value.IPv4)
	case v.Ident != nil:
		return *v.Ident
	}
	items := make([]string, len(v.List))
	for i, x := range v.List {
		items[i] = literalString(x)
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// literal keeps a configuration value with its positions.
func literal(v *Literal) *dataflow.Literal {
	if v == nil {
		return nil
	}
	out := &dataflow.Literal{Pos: posString(v.Pos), Text: literalString(v)}
	switch {
	case v.String != nil:
		out.Kind = dataflow.LitString
	case v.Value != nil:
		out.Kind = dataflow.LitNumber
	case v.Ident != nil:
		out.Kind = dataflow.LitIdent
	default:
		out.Kind, out.Text = dataflow.LitList, ""
		for _, x := range v.List {
			out.List = append(out.List, literal(x))
		}
	}
	return out
}

func (l *loader) attrs(n *dataflow.Node, a *Attrs) {
	if a == nil {
		return
	}
	for _, name := range a.Names {
		switch name {
		case "software":
			n.Software = true
		case "hardware":
			n.Hardware = true
		case "source":
			n.Source = true
		case "sink":
			n.Sink = true
		case "program":
			n.Program = true
		case "host":
			n.Host = true
		case "rule":
			n.Rule = true
		default:
			l.errorf(a.Pos, "node %s: unknown attribute %s (want software, hardware, source, sink, program, host or rule)", n.Name, name)
		}
	}
	if n.Software && n.Hardware {
		l.errorf(a.Pos, "node %s is both software and hardware", n.Name)
	}
	if n.Program && !n.Sink {
		l.errorf(a.Pos, "node %s: program marks a sink", n.Name)
	}
	if n.Rule && (!n.Hardware || n.Sink || n.Source) {
		l.errorf(a.Pos, "node %s: rule marks a hardware node inside a pipeline (not a source or sink)", n.Name)
	}
}

// lookupNode resolves a name used inside clusters path: the innermost
// cluster's prefix first, the bare name last.
func lookupNode(g *dataflow.Graph, path []string, name string) *dataflow.Node {
	for i := len(path); i >= 0; i-- {
		if n := g.Node(strings.Join(path[:i], "") + name); n != nil {
			return n
		}
	}
	return nil
}

func (l *loader) ports(g *dataflow.Graph, p *placed, decls []*PortDecl) {
	for _, pd := range decls {
		if p.n.Port(pd.Name) != nil {
			l.errorf(pd.Pos, "node %s: port %s declared twice", p.n.Name, pd.Name)
			continue
		}
		port := p.n.AddPort(pd.Name, posString(pd.Pos))
		if pd.Pred != nil {
			port.Pred, _ = strconv.Unquote(*pd.Pred)
		}
		l.connect(g, p, port, pd.Targets, false)
	}
}

func (l *loader) connect(g *dataflow.Graph, p *placed, port *dataflow.Port, targets []*Ident, spawn bool) {
	for _, t := range targets {
		to := lookupNode(g, p.path, t.Name)
		if to == nil {
			l.errorf(t.Pos, "node %s: port %s: unknown node %s", p.n.Name, port.Name, t.Name)
			continue
		}
		if to.Kind == dataflow.ONode && spawn {
			l.errorf(t.Pos, "node %s: a spawn edge cannot lead to %s node %s", p.n.Name, to.Logic, to.Name)
			continue
		}
		dataflow.Connect(port, to, spawn)
	}
}

func (l *loader) fnode(g *dataflow.Graph, p *placed) {
	nd := p.node
	l.attrs(p.n, nd.Attrs)
	var ports []*PortDecl
	var spawns []*SpawnDecl
	for _, st := range nd.Stmts {
		switch {
		case st.Op != nil:
			if p.n.Op != nil {
				l.errorf(st.Op.Pos, "node %s has a second op", p.n.Name)
				continue
			}
			p.n.Op = l.op(st.Op)
			if p.n.Op == nil {
				p.n.Op = &packet.Op{Kind: packet.OpNop} // keep going; the error is recorded
			}
		case st.Port != nil:
			ports = append(ports, st.Port)
		default:
			spawns = append(spawns, st.Spawn)
		}
	}
	if p.n.Op == nil {
		l.errorf(nd.Pos, "node %s has no op (every F-node does something; use `op nop` to pass packets on)", p.n.Name)
		return
	}
	if p.n.Op.Kind == packet.OpInput {
		p.n.Source = true
	}
	if p.n.Op.Kind == packet.OpEmit || p.n.Op.Kind == packet.OpSteer {
		p.n.Sink = true
	}
	if p.n.Host && p.n.Op.Kind != packet.OpEmit {
		l.errorf(nd.Attrs.Pos, "node %s: host marks an emit node", p.n.Name)
	}
	// Ports go in the op's order so port indices agree with Op.Exec.
	order := p.n.Op.Ports(l.schema)
	slices.SortStableFunc(ports, func(a, b *PortDecl) int {
		ia, ib := slices.Index(order, a.Name), slices.Index(order, b.Name)
		if ia < 0 {
			ia = len(order)
		}
		if ib < 0 {
			ib = len(order)
		}
		return ia - ib
	})
	l.ports(g, p, ports)
	for _, sd := range spawns {
		port := p.n.Port(sd.Port)
		if port == nil {
			if !slices.Contains(order, sd.Port) {
				l.errorf(sd.Pos, "node %s: spawn from port %s, which %s does not have", p.n.Name, sd.Port, p.n.Op.Kind)
				continue
			}
			port = p.n.AddPort(sd.Port, posString(sd.Pos))
		}
		l.connect(g, p, port, sd.Targets, true)
	}
	// Spawn-only ports were appended; restore op order.
	slices.SortStableFunc(p.n.Ports, func(a, b *dataflow.Port) int {
		return portRank(order, a.Name) - portRank(order, b.Name)
	})
	for i, pt := range p.n.Ports {
		pt.Index = i
	}
	p.n.Op.Resolve(l.schema)
}

func portRank(order []string, name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

// op resolves an operation; nil after recording an error.
func (l *loader) op(od *OpDecl) *packet.Op {
	s := l.schema
	r := l.resolver(scope{})
	header := func(name string) (int, bool) {
		h, ok := s.Header(name)
		if !ok {
			l.errorf(od.Pos, "unknown header %s", name)
			return -1, false
		}
		return h.ID, true
	}
	wire := func(name string) (int, bool) {
		id, ok := header(name)
		if ok && s.Headers[id].Metadata {
			l.errorf(od.Pos, "%s is metadata, not a header on the wire", name)
			return -1, false
		}
		return id, ok
	}
	checksums := func(ids []*Ident) ([]int, bool) {
		var out []int
		for _, id := range ids {
			h, ok := s.Header(id.Name)
			if !ok {
				l.errorf(id.Pos, "update %s: unknown header", id.Name)
				return nil, false
			}
			if h.Checksum < 0 {
				l.errorf(id.Pos, "update %s: header %s has no checksum field", id.Name, id.Name)
				return nil, false
			}
			out = append(out, h.ID)
		}
		return out, true
	}
	o := &packet.Op{After: -1, Header: -1, Table: -1}
	var ok = true
	switch {
	case od.Input:
		o.Kind = packet.OpInput
		if od.InParse != nil {
			o.Header, ok = wire(*od.InParse)
		}
	case od.Parse != nil:
		o.Kind = packet.OpParse
		o.Header, ok = wire(*od.Parse)
	case od.Extract != nil:
		o.Kind = packet.OpExtract
		o.Header, ok = wire(*od.Extract)
		if ok {
			s.Loose(o.Header)
		}
	case od.Test != nil:
		o.Kind = packet.OpTest
		x, err := r.expr(od.Test)
		if err != nil {
			l.exprError(err)
			return nil
		}
		if !x.Boolean() {
			l.errorf(od.Test.Pos, "test %s: want a condition, got a value (compare it, e.g. %s != 0)", x.Text, x.Text)
			return nil
		}
		o.Cond = x
	case od.Switch != nil:
		return l.switchOp(od, r)
	case od.Place != nil:
		return l.placeOp(od, r)
	case od.Load != nil || od.Store != nil:
		o.Kind, o.Label = packet.OpStore, ""
		if od.Load != nil {
			o.Kind, o.Label = packet.OpLoad, *od.Load
		} else {
			o.Label = *od.Store
		}
		o.Register, ok = s.Register(o.Label)
		if !ok {
			l.errorf(od.Pos, "unknown register %s", o.Label)
		}
	case od.Cut:
		o.Kind = packet.OpCut
	case od.Lookup != nil:
		o.Kind = packet.OpLookup
		o.Table, ok = s.Table(*od.Lookup)
		if !ok {
			l.errorf(od.Pos, "unknown table %s", *od.Lookup)
		}
	case od.Set != nil:
		o.Kind = packet.OpSet
		before := len(l.errs)
		o.Assign = l.assigns(od.Set.Assigns, scope{})
		o.Update, ok = checksums(od.Set.Update)
		ok = ok && len(l.errs) == before
	case od.Push != nil:
		o.Kind = packet.OpPush
		o.Header, ok = wire(od.Push.Header)
		if ok && od.Push.Extra != nil {
			n, err := smallInt(*od.Push.Extra, 1<<16)
			h := s.Headers[o.Header]
			switch {
			case err != nil:
				l.errorf(od.Pos, "push %s extra %s: want a number of bytes", h.Name, *od.Push.Extra)
				ok = false
			case !h.Fields[len(h.Fields)-1].Variable():
				l.errorf(od.Pos, "push %s extra %d: %s has no variable-length field", h.Name, n, h.Name)
				ok = false
			}
			o.Extra = n
		}
		if ok && od.Push.After != nil {
			o.After, ok = wire(*od.Push.After)
			if ok && o.After == o.Header {
				l.errorf(od.Pos, "push %s after itself", od.Push.Header)
				ok = false
			}
			if ok {
				s.Follows(o.After, o.Header)
			}
		}
	case od.Pop != nil:
		o.Kind = packet.OpPop
		o.Header, ok = wire(od.Pop.Header)
		if ok {
			o.Update, ok = checksums(od.Pop.Update)
		}
	case od.Checksum != nil:
		verify, compute, name := packet.OpChecksumVerify, packet.OpChecksumCompute, od.Checksum.Header
		if od.Checksum.ICRC != "" {
			verify, compute, name = packet.OpICRCVerify, packet.OpICRCCompute, od.Checksum.ICRC
		}
		o.Kind = verify
		if od.Checksum.Mode == "compute" {
			o.Kind = compute
		}
		o.Header, ok = wire(name)
		if ok && od.Checksum.ICRC == "" && s.Headers[o.Header].Checksum < 0 {
			l.errorf(od.Pos, "checksum %s: header %s has no field marked @checksum", od.Checksum.Header, od.Checksum.Header)
			ok = false
		}
	case od.Emit:
		o.Kind = packet.OpEmit
	case od.Steer != nil:
		o.Kind = packet.OpSteer
		target := od.Steer.Target
		if t, err := strconv.Unquote(target); err == nil {
			target = t
		}
		o.Label = od.Steer.Kind + " " + target
	case od.Drop != nil:
		o.Kind = packet.OpDrop
		o.Label = unquoteOr(od.Drop.Reason, "drop")
	case od.Count != nil:
		o.Kind = packet.OpCount
		o.Label = unquoteOr(od.Count.Name, "count")
	case od.Context != nil:
		o.Kind = packet.OpContext
		o.Label = unquoteOr(od.Context, "")
	default:
		o.Kind = packet.OpNop
	}
	if !ok {
		return nil
	}
	return o
}

func unquoteOr(s *string, def string) string {
	if s == nil {
		return def
	}
	if u, err := strconv.Unquote(*s); err == nil {
		return u
	}
	return *s
}

func (l *loader) switchOp(od *OpDecl, r *resolver) *packet.Op {
	x, err := r.expr(od.Switch.Expr)
	if err != nil {
		l.exprError(err)
		return nil
	}
	if x.Boolean() {
		l.errorf(od.Switch.Expr.Pos, "switch on a condition (%s); use test", x.Text)
		return nil
	}
	o := &packet.Op{Kind: packet.OpSwitch, Expr: x, After: -1, Header: -1, Table: -1}
	seen := map[packet.Value]bool{}
	for _, c := range od.Switch.Cases {
		if c.Default {
			if o.Default != "" {
				l.errorf(c.Pos, "switch has two defaults")
				return nil
			}
			o.Default = c.Target
			continue
		}
		v, w, err := parseValue(c.Value)
		if err != nil {
			l.errorf(c.Pos, "%v", err)
			return nil
		}
		if w > x.Width {
			l.errorf(c.Pos, "case %s does not fit in %s (%d bits)", *orElse(c.Value.Int, c.Value.IPv4), x.Text, x.Width)
			return nil
		}
		if seen[v] {
			l.errorf(c.Pos, "case %s appears twice", *orElse(c.Value.Int, c.Value.IPv4))
			return nil
		}
		seen[v] = true
		o.Cases = append(o.Cases, packet.Case{Value: v, Port: c.Target})
	}
	if o.Default == "" {
		l.errorf(od.Pos, "switch %s has no default (add `default -> PORT`)", x.Text)
		return nil
	}
	return o
}
