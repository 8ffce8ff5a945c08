package prg

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Values are configuration values by C-node name (cluster prefixes
// included, as in the graph).
type Values map[string]*dataflow.Literal

// MissPort is the port of a filter list that packets matching no filter
// leave by.
const MissPort = "miss"

// Configure instantiates g's C-nodes: each takes its value from vals, else
// the one the model declares; C-nodes with neither stay as declared. The
// result's Declared is the graph as declared. Errors are positioned at the
// value or the node.
func Configure(g *dataflow.Graph, vals Values) (*dataflow.Graph, error) {
	decl := g
	if g.Declared != nil {
		decl = g.Declared
	}
	var errs dataflow.Errors
	add := func(err error) {
		var pe *dataflow.Error
		if errors.As(err, &pe) {
			errs = append(errs, pe)
		} else {
			errs = append(errs, &dataflow.Error{Msg: err.Error()})
		}
	}
	for _, name := range sortedKeys(vals) {
		if n := decl.Node(name); n == nil || n.Kind != dataflow.CNode {
			add(posErr(vals[name].Pos, "%s %s has no config node %s (it has %s)", decl.Kind, decl.Name, name, cnodeList(decl)))
		}
	}
	// choice[C-node] maps each of its ports to the generated node that
	// takes its edges: the instantiation's decision.
	made := map[*dataflow.Node][]*dataflow.Node{}
	choice := map[*dataflow.Node][]portUse{}
	for _, n := range decl.Nodes {
		if n.Kind != dataflow.CNode {
			continue
		}
		lit := n.Config.Lit
		if v, ok := vals[n.Name]; ok {
			lit = v
		}
		if lit == nil {
			continue
		}
		t, err := ParseType(n.Config.Type)
		if err != nil {
			add(posErr(n.Pos, "config %s: %v", n.Name, err))
			continue
		}
		nodes, uses, err := instantiate(decl.Schema, n, t, lit)
		if err != nil {
			add(err)
			continue
		}
		made[n], choice[n] = nodes, uses
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(made) == 0 {
		return g, nil
	}
	return build(decl, made, choice)
}

// portUse: packets leaving generated node From by port Port go where the
// C-node's port Of led.
type portUse struct {
	from *dataflow.Node
	port string
	of   string
}

// instantiate makes the nodes a C-node becomes: a nop named like it (so
// edges into it stay), then for a filter list one test per filter in the
// order the hardware decides (priority, then index).
func instantiate(s *packet.Schema, n *dataflow.Node, t Type, lit *dataflow.Literal) ([]*dataflow.Node, []portUse, error) {
	head := derived(n, n.Name, &packet.Op{Kind: packet.OpNop, Header: -1, After: -1, Table: -1})
	head.AddPort(packet.PortOut, n.Pos)
	switch t.Kind {
	case Bool, Enum:
		port, err := enumChoice(n, t, lit)
		if err != nil {
			return nil, nil, err
		}
		return []*dataflow.Node{head}, []portUse{{head, packet.PortOut, port}}, nil
	}
	fs, err := ParseFilters(n, t, lit)
	if err != nil {
		return nil, nil, err
	}
	order := make([]int, len(fs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return fs[order[a]].Priority > fs[order[b]].Priority })
	nodes := []*dataflow.Node{head}
	var uses []portUse
	prev, prevPort := head, packet.PortOut
	for _, i := range order {
		cond, err := fs[i].Cond(s)
		if err != nil {
			return nil, nil, posErr(lit.List[i].Pos, "config %s: %v", n.Name, err)
		}
		test := derived(n, n.Name+"_"+strconv.Itoa(i), &packet.Op{Kind: packet.OpTest, Cond: cond, Header: -1, After: -1, Table: -1})
		test.AddPort(packet.PortTrue, lit.List[i].Pos)
		test.AddPort(packet.PortFalse, lit.List[i].Pos)
		dataflow.Connect(prev.Port(prevPort), test, false)
		uses = append(uses, portUse{test, packet.PortTrue, fs[i].Port})
		nodes = append(nodes, test)
		prev, prevPort = test, packet.PortFalse
	}
	return nodes, append(uses, portUse{prev, prevPort, MissPort}), nil
}

// derived is a node made from C-node n, with its attributes and position.
func derived(n *dataflow.Node, name string, op *packet.Op) *dataflow.Node {
	return &dataflow.Node{Name: name, Cluster: n.Cluster, Kind: dataflow.FNode, Op: op,
		Software: n.Software, Hardware: n.Hardware, Pos: n.Pos}
}

// enumChoice is the port a bool or enum value selects: a port name, or
// for an enum the port's index in declaration order.
func enumChoice(n *dataflow.Node, t Type, lit *dataflow.Literal) (string, error) {
	if len(n.Ports) > t.N {
		return "", posErr(n.Pos, "config %s: %s has %d choices, the node %d ports", n.Name, t, t.N, len(n.Ports))
	}
	switch {
	case lit.Kind == dataflow.LitIdent && n.Port(lit.Text) != nil:
		return lit.Text, nil
	case t.Kind == Enum && lit.Kind == dataflow.LitNumber:
		if i, err := strconv.Atoi(lit.Text); err == nil && i >= 0 && i < len(n.Ports) {
			return n.Ports[i].Name, nil
		}
	}
	return "", posErr(lit.Pos, "config %s: value %s is not one of its ports (%s)", n.Name, litText(lit), portNames(n))
}

// ParseFilters reads a filter list value for C-node n of type t.
func ParseFilters(n *dataflow.Node, t Type, lit *dataflow.Literal) ([]Filter, error) {
	if n.Port(MissPort) == nil {
		return nil, posErr(n.Pos, "config %s: a filter list needs a port %s for packets no filter matches", n.Name, MissPort)
	}
	if lit.Kind != dataflow.LitList {
		return nil, posErr(lit.Pos, "config %s: a filter list is a list of %s", n.Name, FilterFields)
	}
	if len(lit.List) > t.N {
		return nil, posErr(lit.Pos, "config %s: %s holds %d filters, the value has %d", n.Name, t, t.N, len(lit.List))
	}
	fs := make([]Filter, len(lit.List))
	for i, x := range lit.List {
		f, err := parseFilter(x)
		if err != nil {
			return nil, err
		}
		if f.Port == MissPort || n.Port(f.Port) == nil {
			return nil, posErr(x.List[6].Pos, "config %s: filter port %s is not a queue port of the node (%s)", n.Name, f.Port, portNames(n))
		}
		fs[i] = f
	}
	return fs, nil
}

// build copies decl with the C-nodes replaced, then removes what only
// unchosen ports led to.
func build(decl *dataflow.Graph, made map[*dataflow.Node][]*dataflow.Node, choice map[*dataflow.Node][]portUse) (*dataflow.Graph, error) {
	var all []*dataflow.Node
	copyOf := map[*dataflow.Node]*dataflow.Node{}
	for _, n := range decl.Nodes {
		if ns, ok := made[n]; ok {
			copyOf[n] = ns[0]
			all = append(all, ns...)
			continue
		}
		c := *n
		c.Ports, c.In = nil, nil
		for _, p := range n.Ports {
			c.AddPort(p.Name, p.Pos).Pred = p.Pred
		}
		copyOf[n] = &c
		all = append(all, &c)
	}
	edges := func(from *dataflow.Port, to *dataflow.Port) {
		for _, e := range to.Out {
			dataflow.Connect(from, copyOf[e.To], false)
		}
		for _, e := range to.Spawn {
			dataflow.Connect(from, copyOf[e.To], true)
		}
	}
	for _, n := range decl.Nodes {
		if _, ok := made[n]; ok {
			for _, u := range choice[n] {
				edges(u.from.Port(u.port), n.Port(u.of))
			}
			continue
		}
		for i, p := range n.Ports {
			edges(copyOf[n].Ports[i], p)
		}
	}
	// Roots are the declared nodes nothing leads to (sources, unconnected
	// C-nodes); what they do not reach went with the unchosen ports.
	live := map[*dataflow.Node]bool{}
	var todo []*dataflow.Node
	for _, n := range decl.Nodes {
		if len(n.In) == 0 && !spawned(decl, n) {
			todo = append(todo, copyOf[n])
		}
	}
	for len(todo) > 0 {
		x := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if live[x] {
			continue
		}
		live[x] = true
		for _, p := range x.Ports {
			for _, e := range slices.Concat(p.Out, p.Spawn) {
				todo = append(todo, e.To)
			}
		}
	}
	g := dataflow.New(decl.Name, decl.Kind, decl.Schema)
	g.Limits, g.Declared = decl.Limits, decl
	var errs dataflow.Errors
	for _, n := range all {
		if !live[n] {
			continue
		}
		n.In = slices.DeleteFunc(n.In, func(e *dataflow.Edge) bool { return !live[e.From.Node] })
		if err := g.AddNode(n); err != nil {
			errs = append(errs, &dataflow.Error{Pos: n.Pos, Msg: fmt.Sprintf("configuring %s: %v", decl.Name, err)})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}

func spawned(g *dataflow.Graph, n *dataflow.Node) bool {
	for _, m := range g.Nodes {
		for _, p := range m.Ports {
			for _, e := range p.Spawn {
				if e.To == n {
					return true
				}
			}
		}
	}
	return false
}

func sortedKeys(v Values) []string {
	ks := make([]string, 0, len(v))
	for k := range v {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func cnodeList(g *dataflow.Graph) string {
	var out []string
	for _, n := range g.Nodes {
		if n.Kind == dataflow.CNode {
			out = append(out, n.Name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func portNames(n *dataflow.Node) string {
	var out []string
	for _, p := range n.Ports {
		out = append(out, p.Name)
	}
	return strings.Join(out, ", ")
}

func litText(l *dataflow.Literal) string {
	if l.Kind != dataflow.LitList {
		return l.Text
	}
	s := make([]string, len(l.List))
	for i, x := range l.List {
		s[i] = litText(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}
