package verify

// This file tests what the embedded graph takes on trust from the PRG. The
// embedder believes every fact a PRG port's predicate carries: a `pred`
// atom the model states (a claim), or what a hardware operation
// establishes (a checksum it computes or checks, a frame it parses). The
// LPG's own checks of that fact are folded away behind it. Packets that
// satisfy the fact cannot show a lie, so for each fact verify makes packets
// of the classes where it would be false if the node did not do its work:
// what reaches the port as if no PRG port claimed anything, without the
// fact, and (to make a difference visible) on the way to each end the
// embedded graph can send them to. The LPG alone must treat them exactly as
// the embedded graph does.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
)

// ByPred is Claim.By for a fact the model states with `pred "…"`.
const ByPred = "pred"

// Claim is a fact the embedded graph trusts a PRG port with.
type Claim struct {
	// Fact is the atom: csum_ok(udp), parsed(ethernet), or a pred's text.
	Fact string
	// Node and Port carry it: names in the embedded graph, which keeps the
	// PRG's names.
	Node, Port string
	// By is ByPred, or the hardware operation that establishes the fact
	// ("checksum verify udp").
	By string
	// Untested says why no packet can test the fact ("" when some can):
	// the operations before the port establish it for every packet, or no
	// packet from the LPG's sources reaches the port.
	Untested string

	node    *dataflow.Node // where packets that test it run
	targets []claimTarget
}

// claimTarget is one class of packets that lack the fact at the port.
type claimTarget struct {
	source string // LPG source the packets enter by
	pred   predicate.Pred
	// context is what every packet at the port shares: classes are
	// printed without it.
	context predicate.Pred
	end     string // the end of the embedded graph they go to, if one
	// place is a place on the way: its frames are fitted to its ports
	// (see claimCases).
	place *dataflow.Node
}

// Name says what is trusted and where: "csum_ok(udp) claimed by
// IsUDP.true (pred)", "csum_ok(udp) established by L4CS.true (checksum
// verify udp)".
func (c *Claim) Name() string {
	verb := "established"
	if c.By == ByPred {
		verb = "claimed"
	}
	return fmt.Sprintf("%s %s by %s.%s (%s)", c.Fact, verb, c.Node, c.Port, c.By)
}

// Claims lists the facts the embedded graph trusts PRG ports with, each
// with the classes that test it: the pred claims, then the facts
// operations establish, each in the embedded graph's node order. It clears
// and restores the claims of em.Graph's ports while it works, so it must
// not run alongside other users of the graph.
func Claims(em *embed.Embedding) []*Claim {
	return findClaims(em, predicate.NewSpace())
}

func findClaims(em *embed.Embedding, space *predicate.Space) []*Claim {
	g := em.Graph
	ps := predicatesWithoutClaims(em, space)
	entries := Entries(em)
	var sources []string
	for name := range entries {
		sources = append(sources, name)
	}
	slices.Sort(sources)
	reach := map[string]map[*dataflow.Node]bool{}
	for _, src := range sources {
		reach[src] = dataflow.Reachable(entries[src])
	}
	var out []*Claim
	for _, n := range g.Nodes {
		if em.Origin[n.Name].PRG == "" {
			continue
		}
		for _, c := range trusted(g.Schema, n) {
			if strings.HasPrefix(c.Fact, "split(") {
				// A header split changes no packet's bytes or fate: the
				// embedder lets it do only pops that change nothing the
				// LPG shows (embed/rxoffload.go), so no packet can test it.
				c.Untested = "a header split changes nothing a packet shows"
				out = append(out, c)
				continue
			}
			// Where the fact is missing if n did not do its work: a claim
			// is tested on the packets that leave by its port, an
			// operation's fact on those that reach the operation.
			var lack predicate.Pred
			if c.By == ByPred {
				lack = ps.Port(n.Port(c.Port))
			} else {
				lack = ps.Reaching(n)
			}
			context := lack
			lack = lack.And(ps.Atom(c.Fact).Not())
			for _, src := range sources {
				if !reach[src][n] {
					continue
				}
				s := entries[src]
				from := lack.And(space.Symbol(fmt.Sprintf("pred(%s,%s)", s.Name, s.Ports[0].Name)))
				c.targets = append(c.targets, endTargets(em, ps, c, n, src, from, context)...)
			}
			switch {
			case len(c.targets) > 0:
			case predicate.Satisfiable(context) && predicate.Implies(context, ps.Atom(c.Fact)):
				c.Untested = "holds by the operations before it"
			default:
				c.Untested = "no packet from the LPG's sources reaches it without it"
			}
			out = append(out, c)
		}
	}
	// Claims the model states come first: they are what may be false.
	slices.SortStableFunc(out, func(a, b *Claim) int { return b2i(a.By != ByPred) - b2i(b.By != ByPred) })
	return out
}

// trusted lists the facts a PRG node's ports carry: its pred claims, and
// what its operation establishes that the analysis only names by an atom
// (a checksum's validity, a successful parse) while the interpreter
// computes it. Hardware or a driver's software, the embedded graph trusts
// both alike. Field tests and writes are left out: the predicates model
// them bit for bit, so the port classes cover them.
func trusted(s *packet.Schema, n *dataflow.Node) []*Claim {
	var out []*Claim
	for _, p := range n.Ports {
		if p.Pred != "" {
			out = append(out, &Claim{Fact: p.Pred, Node: n.Name, Port: p.Name, By: ByPred, node: witness(n, p)})
		}
	}
	if n.Kind != dataflow.FNode {
		return out
	}
	var fact, port string
	switch n.Op.Kind {
	case packet.OpChecksumCompute:
		fact, port = "csum_ok(%s)", packet.PortOut
	case packet.OpChecksumVerify:
		fact, port = "csum_ok(%s)", packet.PortTrue
	case packet.OpParse:
		fact, port = "parsed(%s)", packet.PortTrue
	default:
		return out
	}
	if n.Port(port) == nil {
		return out
	}
	fact = fmt.Sprintf(fact, s.Headers[n.Op.Header].Name)
	return append(out, &Claim{Fact: fact, Node: n.Name, Port: port, By: n.Op.Describe(s), node: n})
}

// witness is the node a packet that leaves by p runs: the port's node, or
// for an O-node (which the interpreter does not count) its first target.
func witness(n *dataflow.Node, p *dataflow.Port) *dataflow.Node {
	if n.Kind == dataflow.ONode && len(p.Out) > 0 {
		return p.Out[0].To
	}
	return n
}

// endTargets splits the class lack (packets from src without the fact,
// leaving by the claim's port) by the end of the embedded graph they would
// reach, so that each end that can tell a lie from the truth gets packets.
// Only ends that nothing on the way writes to count: there the predicate
// at the end describes the same packets as lack. With no such end the
// class is taken whole.
func endTargets(em *embed.Embedding, ps *dataflow.Predicates, c *Claim, n *dataflow.Node, src string, lack, context predicate.Pred) []claimTarget {
	if !predicate.Satisfiable(lack) {
		return nil
	}
	var out []claimTarget
	ends, writers, passed := quietReach(n, c)
	for _, e := range ends {
		if t := lack.And(ps.Reaching(e)); predicate.Satisfiable(t) {
			out = append(out, claimTarget{src, t, context, display(em, e), nil})
		}
	}
	// Then the first nodes that write: what reaches an end behind them is
	// known only after the writes, but what reaches them is still the
	// packet the claim is about, and a lie may show only behind them
	// (seed 20261128, models 379 and 3581: a UDP check claimed done shows
	// only at a pop of a header the frame lacks).
	for _, w := range writers {
		if t := lack.And(ps.Reaching(w)); predicate.Satisfiable(t) {
			out = append(out, claimTarget{src, t, context, display(em, w), nil})
		}
	}
	// And each port of the nodes on the way that decide: a lie may show
	// only behind a test the class at the ends rarely meets (seed
	// 20261211, models 5317 and 8903: a UDP check claimed done, pruned
	// behind a test of a header's fields).
	for _, x := range passed {
		if x.Op.Kind == packet.OpPlace {
			// The predicates do not say which port a place takes: a lie
			// may show only on the ports a fitted frame reaches (seed
			// 20261228, model 98: a UDP check claimed done, a place on
			// the way whose event length is udp.length - 8).
			if t := lack.And(ps.Reaching(x)); predicate.Satisfiable(t) {
				out = append(out, claimTarget{src, t, context, display(em, x), x})
			}
			continue
		}
		for _, p := range x.Ports {
			if t := lack.And(ps.Port(p)); predicate.Satisfiable(t) {
				out = append(out, claimTarget{src, t, context, display(em, x) + "." + p.Name, nil})
			}
		}
	}
	if len(out) == 0 {
		out = append(out, claimTarget{src, lack, context, "", nil})
	}
	return out
}

// quietReach lists, in graph order, the ends (emit, steer, drop, sinks)
// that packets leaving n by the claim's port (any port, for an
// operation's fact) reach through nodes that do not write the packet, and
// the writing nodes where such paths stop.
func quietReach(n *dataflow.Node, c *Claim) (ends, writers, passed []*dataflow.Node) {
	var todo []*dataflow.Node
	for _, p := range n.Ports {
		if c.By != ByPred || p.Name == c.Port {
			for _, e := range p.Out {
				todo = append(todo, e.To)
			}
		}
	}
	seen := map[*dataflow.Node]bool{}
	for len(todo) > 0 {
		x := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[x] {
			continue
		}
		seen[x] = true
		switch {
		case writes(x):
			writers = append(writers, x)
			continue
		case x.Kind == dataflow.FNode && (x.Op.Terminal() || x.Sink):
			ends = append(ends, x)
			continue
		}
		if x.Kind == dataflow.FNode && len(x.Ports) > 1 {
			passed = append(passed, x)
		}
		for _, p := range x.Ports {
			for _, e := range p.Out {
				todo = append(todo, e.To)
			}
		}
	}
	byID := func(a, b *dataflow.Node) int { return int(a.ID - b.ID) }
	slices.SortFunc(ends, byID)
	slices.SortFunc(writers, byID)
	slices.SortFunc(passed, byID)
	return ends, writers, passed
}

// writes reports whether a node changes the packet's fields or headers.
func writes(n *dataflow.Node) bool {
	if n.Kind != dataflow.FNode {
		return false
	}
	switch n.Op.Kind {
	case packet.OpSet, packet.OpPush, packet.OpPop, packet.OpChecksumCompute, packet.OpLookup:
		return true
	}
	return false
}

// display names an embedded node for people: an LPG copy by its LPG name.
func display(em *embed.Embedding, n *dataflow.Node) string {
	if o := em.Origin[n.Name]; o.LPG != "" {
		return o.LPG
	}
	return n.Name
}

// predicatesWithoutClaims computes the embedded graph's predicates as if
// no PRG port made a claim: what reaches each port by the operations
// alone. The ports' claims are cleared for the computation and put back.
func predicatesWithoutClaims(em *embed.Embedding, space *predicate.Space) *dataflow.Predicates {
	saved := map[*dataflow.Port]string{}
	for _, n := range em.Graph.Nodes {
		if em.Origin[n.Name].PRG == "" {
			continue
		}
		for _, p := range n.Ports {
			if p.Pred != "" {
				saved[p], p.Pred = p.Pred, ""
			}
		}
	}
	defer func() {
		for p, pred := range saved {
			p.Pred = pred
		}
	}()
	return em.Graph.PredicatesIn(space)
}

// claimCases makes n cases that test claims: for each class on the way
// to a place, a frame fitted to each port a lone segment leaves the
// embedded place by, sent twice (the second meets what the first left),
// at most half of n; then round-robin over the claims with classes, and
// within each over its classes.
func claimCases(em *embed.Embedding, fs *frames, claims []*Claim, space *predicate.Space, n int, rnd *rand.Rand) []Case {
	var tested []*Claim
	for _, c := range claims {
		if len(c.targets) > 0 {
			tested = append(tested, c)
		}
	}
	var cases []Case
	entries := Entries(em)
	for _, c := range tested {
		for _, t := range c.targets {
			if t.place == nil {
				continue
			}
			for _, f := range fitted(em.Graph, fs, space, t.place, entries[t.source], t.source, t.pred, 16, rnd) {
				for k := range 2 {
					if len(cases) < n/2 {
						cases = append(cases, Case{Source: t.source, Frame: f.frame, Meta: f.meta, Fresh: k == 0, Claim: c.Name(),
							Why: fmt.Sprintf("claim %s: class %s, a lone segment leaves %s by %s, sent twice", c.Name(), f.class.Relative(t.context), t.end, f.port)})
					}
				}
			}
		}
	}
	for i := 0; len(tested) > 0 && i < n && len(cases) < n; i++ {
		c := tested[i%len(tested)]
		t := c.targets[(i/len(tested))%len(c.targets)]
		class, ok := fs.sample(space, t.pred, rnd)
		if !ok {
			continue
		}
		frame, meta := fs.build(t.source, class, rnd)
		why := fmt.Sprintf("claim %s: class %s", c.Name(), class.Relative(t.context))
		if t.end != "" {
			why += ", on the way to " + t.end
		}
		cases = append(cases, Case{Source: t.source, Frame: frame, Meta: meta, Why: why, Claim: c.Name()})
	}
	return cases
}
