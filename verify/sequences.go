package verify

// Keyed state makes a segment's fate depend on the segments before it: a
// place says placed, complete, duplicate… only against what arrived
// earlier. One packet at a time cannot show a PRG that claims placement it
// does not do (a sink claiming complete(events) delivers a first segment
// the LPG stores), so for a graph whose LPG places segments, verify also
// runs sequences: the segments of one event, made from one frame of a
// class that reaches the LPG's place, with its offset and event length
// set, in order, shuffled, reversed, duplicated, or with one missing. A
// place whose offset or event length is not a header field (a constant, a
// metadata value) is sent one frame several times over: its second
// segment meets the event the first made or completed. The two machines
// keep their keyed state from case to case, so each sequence runs against
// what came before in both (timeouts and caps show so), but begin each
// sequence on empty registers: those never expire, and a register earlier
// cases filled could keep every segment from the place.

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
	"github.com/dragonet-go/nsc/sim"
)

// sequenceKinds are the orders a sequence's segments are sent in.
var sequenceKinds = []string{"in order", "shuffled", "reversed", "duplicated", "one missing"}

// sequenceCases makes up to n cases: segment sequences for each place of
// the LPG.
func sequenceCases(em *embed.Embedding, fs *frames, space *predicate.Space, n int, rnd *rand.Rand) []Case {
	ps := unpopped(em.LPG, space)
	var out []Case
	for _, pl := range em.LPG.Nodes {
		if pl.Kind != dataflow.FNode || pl.Op.Kind != packet.OpPlace {
			continue
		}
		def := em.LPG.Schema.States[pl.Op.State]
		off, length := pl.Op.Offset, def.Length
		fields := off.Kind == packet.EField && length.Kind == packet.EField
		src := sourceOf(em.LPG, pl)
		if src == nil || fs.starts[src.Name] < 0 {
			continue
		}
		reach := ps.Reaching(pl)
		for tries, seq := 0, 0; len(out) < n && tries < 4*n; tries++ {
			c, ok := fs.sample(space, reach, rnd)
			if !ok {
				break
			}
			mk, meta, ok := fs.patcher(src.Name, c, rnd)
			if !ok {
				continue
			}
			if !fields {
				f, times := mk(nil), 2+rnd.IntN(3)
				for k := 0; k < times && len(out) < n; k++ {
					out = append(out, Case{Source: src.Name, Frame: f, Meta: meta, Fresh: k == 0,
						Why: fmt.Sprintf("sequence %d, repeated, segment %d of %d at %s: class %s", seq, k+1, times, pl.Name, c)})
				}
				seq++
				continue
			}
			frame := func(o, l uint64) []byte {
				return mk(map[packet.FieldRef]uint64{off.Field: o, length.Field: l})
			}
			size, ok := segmentSize(em.LPG, pl, src, frame, meta)
			if !ok {
				continue
			}
			kind := sequenceKinds[seq%len(sequenceKinds)]
			segs := 2 + rnd.IntN(5)
			order := make([]int, segs)
			for i := range order {
				order[i] = i
			}
			switch kind {
			case "shuffled":
				rnd.Shuffle(segs, func(i, j int) { order[i], order[j] = order[j], order[i] })
			case "reversed":
				slices.Reverse(order)
			case "duplicated":
				order = append(order, order[rnd.IntN(segs)], order[0])
			case "one missing":
				order = slices.Delete(order, segs/2, segs/2+1)
			}
			for i, k := range order {
				if len(out) == n {
					break
				}
				out = append(out, Case{Source: src.Name, Frame: frame(uint64(k)*size, uint64(segs)*size), Meta: meta, Fresh: i == 0,
					Why: fmt.Sprintf("sequence %d, %s, segment %d of %d (%d bytes each) at %s: class %s", seq, kind, k+1, segs, size, pl.Name, c)})
			}
			seq++
		}
	}
	return out
}

// sourceOf is the LPG source whose packets reach n.
func sourceOf(g *dataflow.Graph, n *dataflow.Node) *dataflow.Node {
	for _, s := range g.Sources() {
		if dataflow.Reachable(s)[n] {
			return s
		}
	}
	return nil
}

// segmentSize finds the bytes one segment made by frame brings to place
// pl: the event length L for which a lone segment at offset 0 completes
// its event, found by bisection on fresh machines of the LPG (a shorter L
// ends out of bounds, a longer one leaves the segment placed). ok is
// false when the segment never reaches pl or brings no byte.
func segmentSize(lpg *dataflow.Graph, pl, src *dataflow.Node, frame func(o, l uint64) []byte, meta []packet.Value) (uint64, bool) {
	lo, hi := uint64(1), uint64(1<<16)
	for lo <= hi {
		l := lo + (hi-lo)/2
		m, err := sim.New(lpg, nil)
		if err != nil {
			return 0, false
		}
		m.RunMeta(src, frame(0, l), meta, func(*dataflow.Node, []byte) {})
		switch placeOutcome(m, pl) {
		case packet.PlaceComplete:
			return l, true
		case packet.PlaceOutOfBounds:
			lo = l + 1
		case packet.PlacePlaced:
			hi = l - 1
		default:
			return 0, false
		}
	}
	return 0, false
}

// placeOutcome is the port pl left by in m's only run, by the nodes its
// ports lead to, or -1.
func placeOutcome(m *sim.Machine, pl *dataflow.Node) int {
	runs := m.Counters().Nodes
	for i, p := range pl.Ports {
		for _, e := range p.Out {
			if runs[e.To.Name] > 0 {
				return i
			}
		}
	}
	return -1
}

// unpopped computes g's predicates as if its pops did nothing: the frames
// of a class reaching a place that follows pops need the headers the pops
// take (they are built before the graph runs). It swaps the pops' operations
// for no-ops while it works, so it must not run alongside other users of g.
func unpopped(g *dataflow.Graph, space *predicate.Space) *dataflow.Predicates {
	nop := &packet.Op{Kind: packet.OpNop, Header: -1, After: -1, Table: -1}
	saved := map[*dataflow.Node]*packet.Op{}
	for _, n := range g.Nodes {
		if n.Kind == dataflow.FNode && n.Op.Kind == packet.OpPop {
			saved[n], n.Op = n.Op, nop
		}
	}
	defer func() {
		for n, op := range saved {
			n.Op = op
		}
	}()
	return g.PredicatesIn(space)
}
