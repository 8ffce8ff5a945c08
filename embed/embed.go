package embed

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/lpg"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
	"github.com/dragonet-go/nsc/prg"
)

// Embedding is an LPG embedded into a PRG.
type Embedding struct {
	LPG, PRG *dataflow.Graph
	// Graph is the embedded graph: the PRG, the LPG copies behind its Rx
	// sinks, and the LPG's Tx part feeding the PRG's Tx entry.
	Graph *dataflow.Graph
	// Placements has one entry per LPG node, in declaration order.
	Placements []Placement
	// Space holds the predicates of the analysis.
	Space *predicate.Space
	// Origin maps each embedded node to the LPG or PRG node it came from.
	Origin map[string]Origin
	// Device is the part a programmable device runs when it cannot run
	// all of Graph (device.go): Graph with the edges into host nodes led
	// to PuntNode. nil when the device runs it all.
	Device *dataflow.Graph
}

// Origin says where an embedded node comes from.
type Origin struct {
	LPG, PRG string // one of them is set
	// Guard names the LPG node a residual guard node stands in front of
	// (a split stage); LPG and PRG are then empty.
	Guard string
	// Serves lists the PRG Rx sinks an LPG copy runs behind.
	Serves []string
}

// ErrDifferentModels: the LPG and the PRG must share one packet schema.
var ErrDifferentModels = errors.New("the LPG and the PRG come from different models; load them together (include both)")

// builder holds the embedding while it is made.
type builder struct {
	lpg, prg *dataflow.Graph
	space    *predicate.Space
	nodes    []*enode
	prgOf    map[*dataflow.Node]*enode
	txEntry  *enode
	rxSinks  []*dataflow.Node
	// unattached says why an LPG node is not joined to the PRG: its side
	// (Rx or Tx) has nothing to join on the PRG.
	unattached map[*dataflow.Node]string
	// copies[lpg node] lists its enodes (one per sink for the Rx part).
	copies map[*dataflow.Node][]*enode
	// notes says what happened to each LPG node's copy behind each sink
	// ("" for the Tx part): ports cut, then folded or unreachable.
	notes map[*dataflow.Node]map[string][]string
	place map[*dataflow.Node]*Placement
	// rxPlaces: the LPG places a hardware place upstream may take over.
	rxPlaces map[*dataflow.Node]*rxTakeover
	// keptEntry: the LPG's Rx entry parses, and its copies run behind
	// the Rx sinks (build) but those in parsedBy, where the PRG parsed.
	keptEntry bool
	parsedBy  []string
	// txTaken: the PRG's Tx hardware nodes that do a moved stage's work.
	txTaken map[*enode]bool
}

// Embed embeds the LPG l into the PRG p.
func Embed(l, p *dataflow.Graph) (*Embedding, error) {
	if l.Schema != p.Schema {
		return nil, ErrDifferentModels
	}
	if l.Kind != dataflow.LPG || p.Kind != dataflow.PRG {
		return nil, fmt.Errorf("embed %s %s into %s %s: want an lpg and a prg", l.Kind, l.Name, p.Kind, p.Name)
	}
	b := &builder{lpg: l, prg: p, space: predicate.NewSpace(), prgOf: map[*dataflow.Node]*enode{},
		copies: map[*dataflow.Node][]*enode{}, unattached: map[*dataflow.Node]string{}, notes: map[*dataflow.Node]map[string][]string{}, place: map[*dataflow.Node]*Placement{}}
	if err := b.build(); err != nil {
		return nil, err
	}
	if err := b.takeOverRx(); err != nil {
		return nil, err
	}
	if err := b.pruneRx(); err != nil {
		return nil, err
	}
	if err := b.placeRx(); err != nil {
		return nil, err
	}
	b.merge()
	if err := b.offloadTx(); err != nil {
		return nil, err
	}
	if err := b.checkTxWrites(); err != nil {
		return nil, err
	}
	em, err := b.finish()
	if err != nil {
		return nil, err
	}
	if err := b.splitDevice(em); err != nil {
		return nil, err
	}
	return em, nil
}

// build puts the PRG, the LPG's Tx part and one copy of the LPG's Rx part
// per PRG Rx sink into one graph.
func (b *builder) build() error {
	l, err := lpg.Of(b.lpg)
	if err != nil {
		return err
	}
	rxEntry, txExit := l.RxEntry(), l.TxExit()
	if rxEntry == nil && txExit == nil {
		// Nothing joins: the LPG would run beside the PRG, not on it.
		where, enters := "", "no source"
		if srcs := b.lpg.Sources(); len(srcs) > 0 {
			where, enters = srcs[0].Pos+": ", "its source "+srcs[0].Name
		}
		return fmt.Errorf("%slpg %s: nothing of it meets prg %s: received frames enter an LPG at a source named %s (it has %s) and frames to send leave it at an emit named %s (it has none); see docs/language.md, section 1",
			where, b.lpg.Name, b.prg.Name, lpg.RxEntry, enters, prg.TxEntry)
	}
	// An entry that parses (input parse H) keeps its parse behind each
	// sink: a PRG's Rx sink hands over the frame, and no PRG parses the
	// way the LPG's parse graph does (a hardware extract chain stops where
	// its hardware stops), so dropping it would leave the LPG's tests on
	// headers nobody extracted.
	keepEntry := rxEntry != nil && rxEntry.Op.Header >= 0
	b.keptEntry = keepEntry
	var prgPreds *dataflow.Predicates
	if keepEntry {
		prgPreds = b.prg.PredicatesIn(b.space)
	}
	if prg.Entry(b.prg) == nil {
		txExit = nil // a PRG without a Tx side: the LPG's exit stays its own
	}
	// The PRG, with its Tx entry fed by the LPG and its Rx sinks passing
	// packets on to the LPG copies.
	rxSinks := prg.RxSinks(b.prg)
	for _, n := range b.prg.Nodes {
		e := clone(n, n.Name, false)
		b.prgOf[n] = e
		b.nodes = append(b.nodes, e)
		switch {
		case n == prg.Entry(b.prg) && txExit != nil:
			e.source = false // the LPG feeds it
			b.txEntry = e
		case slices.Contains(rxSinks, n) && rxEntry != nil:
			// The sink hands its frame to the LPG in its place: what it
			// would do to the frame itself would be lost.
			if n.Kind != dataflow.FNode || !slices.Contains([]packet.OpKind{packet.OpNop, packet.OpEmit, packet.OpSteer}, n.Op.Kind) {
				return fmt.Errorf("%s: prg %s: Rx sink %s must hand frames over (op nop, emit or steer) for lpg %s's %s to take them", n.Pos, b.prg.Name, n.Name, b.lpg.Name, lpg.RxEntry)
			}
			b.rxSinks = append(b.rxSinks, n)
			e.isSink = false
			e.op = &packet.Op{Kind: packet.OpNop, Header: -1, After: -1, Table: -1}
			e.ports = []*eport{{name: packet.PortOut}}
		}
	}
	for _, n := range b.prg.Nodes {
		b.connect(n, b.prgOf[n], func(t *dataflow.Node) *enode { return b.prgOf[t] })
	}
	// Which LPG nodes the Rx entry reaches: those are copied per sink. A
	// PRG without Rx sinks leaves the LPG's Rx side as it is.
	rx := map[*dataflow.Node]bool{}
	if len(b.rxSinks) > 0 {
		rx = l.RxPart()
	}
	if rxEntry != nil && len(b.rxSinks) == 0 {
		for n := range l.RxPart() {
			b.unattached[n] = "not joined: " + b.prg.Name + " has no Rx sinks, so this runs on the host as in the LPG"
		}
	}
	if t := l.TxExit(); t != nil && txExit == nil {
		b.unattached[t] = "not joined: " + b.prg.Name + " has no Tx entry (" + prg.TxEntry + "), so packets end here as in the LPG"
	}
	lpgTx := map[*dataflow.Node]*enode{}
	for _, n := range b.lpg.Nodes {
		if rx[n] || n == txExit {
			continue
		}
		e := clone(n, b.lpgName(n.Name), true)
		lpgTx[n] = e
		b.copies[n] = append(b.copies[n], e)
		b.nodes = append(b.nodes, e)
	}
	target := func(copyOf map[*dataflow.Node]*enode) func(*dataflow.Node) *enode {
		return func(t *dataflow.Node) *enode {
			switch {
			case t == txExit:
				return b.txEntry
			case copyOf[t] != nil:
				return copyOf[t]
			}
			return lpgTx[t]
		}
	}
	for n, e := range lpgTx {
		b.connect(n, e, target(nil))
	}
	for _, s := range b.rxSinks {
		copyOf := map[*dataflow.Node]*enode{}
		// The entry's parse is done where the PRG parsed from the same
		// header on the way to this sink (and changed no header since).
		keep := keepEntry && !predicate.Implies(prgPreds.Reaching(s), prgPreds.Parsed(rxEntry.Op.Header))
		if keepEntry && !keep {
			b.parsedBy = append(b.parsedBy, s.Name)
		}
		for _, n := range b.lpg.Nodes {
			if rx[n] && (n != rxEntry || keep) && n != txExit {
				e := clone(n, n.Name+"@"+s.Name, true)
				e.source = false // the sink feeds the entry's copy
				e.sink = s.Name
				e.serves = []string{s.Name}
				copyOf[n] = e
				b.copies[n] = append(b.copies[n], e)
				b.nodes = append(b.nodes, e)
			}
		}
		for n, e := range copyOf {
			b.connect(n, e, target(copyOf))
		}
		// The sink passes packets on as the LPG's Rx entry did.
		sinkOut := b.prgOf[s].ports[0]
		if keep {
			sinkOut.out = append(sinkOut.out, copyOf[rxEntry])
			continue
		}
		for _, p := range rxEntry.Ports {
			for _, ed := range p.Out {
				sinkOut.out = append(sinkOut.out, target(copyOf)(ed.To))
			}
		}
	}
	return nil
}

// lpgName keeps an LPG node's name unless the PRG has a node of that name.
func (b *builder) lpgName(name string) string {
	if b.prg.Node(name) != nil {
		return name + "@lpg"
	}
	return name
}

// connect copies n's edges onto e, mapping targets with to (nil: dropped).
func (b *builder) connect(n *dataflow.Node, e *enode, to func(*dataflow.Node) *enode) {
	for i, p := range n.Ports {
		if i >= len(e.ports) {
			break // a PRG sink turned pass-through keeps only its own port
		}
		for _, ed := range p.Out {
			if t := to(ed.To); t != nil {
				e.ports[i].out = append(e.ports[i].out, t)
			}
		}
		for _, ed := range p.Spawn {
			if t := to(ed.To); t != nil {
				e.ports[i].spawn = append(e.ports[i].spawn, t)
			}
		}
	}
}

// graph materializes the current state.
func (b *builder) graph() (*dataflow.Graph, map[*enode]*dataflow.Node, error) {
	return materialize(b.lpg.Name+"@"+b.prg.Name, dataflow.PRG, b.lpg.Schema, b.nodes)
}

// finish names the survivors, builds the final graph and the placements.
func (b *builder) finish() (*Embedding, error) {
	g, of, err := b.graph()
	if err != nil {
		return nil, err
	}
	if g.Order() == nil {
		return nil, fmt.Errorf("embedded graph %s has a cycle", g.Name)
	}
	em := &Embedding{LPG: b.lpg, PRG: b.prg, Graph: g, Space: b.space, Origin: map[string]Origin{}}
	for _, e := range b.nodes {
		if of[e] == nil {
			continue
		}
		o := Origin{Serves: e.serves}
		switch {
		case e.guardOf != "":
			o.Guard = e.guardOf
		case e.lpg:
			o.LPG = e.tmpl.Name
		default:
			o.PRG = e.tmpl.Name
		}
		em.Origin[of[e].Name] = o
	}
	for _, n := range b.lpg.Nodes {
		em.Placements = append(em.Placements, b.placement(n))
	}
	return em, nil
}

// joinSinks lists sinks in the PRG's declaration order, once each.
func (b *builder) joinSinks(s []string) string {
	var out []string
	for _, n := range b.rxSinks {
		if slices.Contains(s, n.Name) {
			out = append(out, n.Name)
		}
	}
	return strings.Join(out, ", ")
}
