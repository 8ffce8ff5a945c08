package verify

// Keyed state makes a segment's fate depend on the segments before it: a
// place says placed, complete, duplicate… only against what arrived
// earlier. One packet at a time cannot show a PRG that claims placement it
// does not do (a sink claiming complete(events) delivers a first segment
// the LPG stores), so for a graph whose LPG places segments, verify also
// runs sequences: the segments of one event, made from one frame of a
// class that reaches the LPG's place, with its offset and event length
// set, in order, shuffled, reversed, duplicated, with one missing, with
// half a segment again after the first (overlapping), with the second
// also sent as part of a longer event (length mismatch), or with one sent
// only after the event's timeout (late). A
// place whose offset or event length is not a header field (a constant, a
// metadata value) is sent one frame several times over: its second
// segment meets the event the first made or completed. The two machines
// keep their keyed state from case to case, so each sequence runs against
// what came before in both (timeouts and caps show so), but begin each
// sequence on empty registers: those never expire, and a register earlier
// cases filled could keep every segment from the place. Before those, each
// port a lone segment can leave the place by gets a frame that does, sent
// the same way (fitted): a lie that folds the place to complete shows on
// the ports a small event or a cut frame reaches.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
	"github.com/dragonet-go/nsc/sim"
)

// sequenceKinds are the orders a sequence's segments are sent in.
var sequenceKinds = []string{"in order", "shuffled", "reversed", "duplicated", "one missing", "overlapping", "length mismatch", "late"}

// sequenceCases makes up to n cases: segment sequences for each place of
// the LPG.
func sequenceCases(em *embed.Embedding, fs *frames, space *predicate.Space, n int, rnd *rand.Rand) []Case {
	ps := unmoved(em.LPG, space)
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
		seq := 0
		repeat := func(f []byte, meta []packet.Value, what string) {
			times := 2 + rnd.IntN(3)
			for k := 0; k < times && len(out) < n; k++ {
				out = append(out, Case{Source: src.Name, Frame: f, Meta: meta, Fresh: k == 0,
					Why: fmt.Sprintf("sequence %d, repeated, segment %d of %d at %s: %s", seq, k+1, times, pl.Name, what)})
			}
			seq++
		}
		for _, f := range fitted(em.LPG, fs, space, pl, src, src.Name, reach, max(16, n/2), rnd) {
			repeat(f.frame, f.meta, fmt.Sprintf("a lone segment leaves by %s, class %s", f.port, f.class))
		}
		for tries := 0; len(out) < n && tries < 4*n; tries++ {
			c, ok := fs.sample(space, reach, rnd)
			if !ok {
				break
			}
			mk, meta, ok := fs.patcher(src.Name, c, false, rnd)
			if !ok {
				continue
			}
			if !fields {
				repeat(mk(patch{payload: -1, keep: -1}), meta, "class "+c.String())
				continue
			}
			frame := func(o, l uint64) []byte {
				return mk(patch{set: map[packet.FieldRef]uint64{off.Field: o, length.Field: l}, payload: -1, keep: -1})
			}
			size, ok := segmentSize(em.LPG, pl, src, frame, meta)
			if !ok {
				continue
			}
			kind := sequenceKinds[seq%len(sequenceKinds)]
			segs := 2 + rnd.IntN(5)
			event := uint64(segs) * size
			type segment struct {
				k, off, length uint64 // k: the segment's number, from 1
				wait           time.Duration
			}
			order := make([]segment, segs)
			for i := range order {
				order[i] = segment{uint64(i + 1), uint64(i) * size, event, 0}
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
			case "overlapping":
				// Half of the first segment's bytes again, after it.
				order = slices.Insert(order, 1, segment{0, size / 2, event, 0})
			case "length mismatch":
				// The second segment, of an event one segment longer.
				order = slices.Insert(order, 1, segment{0, size, event + size, 0})
			case "late":
				// The last segment once the event has timed out.
				order[segs-1].wait = def.Timeout
			}
			for i, sg := range order {
				if len(out) == n {
					break
				}
				what := fmt.Sprintf("segment %d of %d (%d bytes each)", sg.k, segs, size)
				if sg.k == 0 {
					what = fmt.Sprintf("a segment at %d of an event of %d (%d segments of %d bytes)", sg.off, sg.length, segs, size)
				}
				if sg.wait > 0 {
					what += fmt.Sprintf(", %v later", sg.wait)
				}
				out = append(out, Case{Source: src.Name, Frame: frame(sg.off, sg.length), Meta: meta, Fresh: i == 0, Wait: sg.wait,
					Why: fmt.Sprintf("sequence %d, %s, %s at %s: class %s", seq, kind, what, pl.Name, c)})
			}
			seq++
		}
	}
	return out
}

// fit is a frame whose lone segment leaves a place by port.
type fit struct {
	frame []byte
	meta  []packet.Value
	port  string
	class predicate.Class
}

// fitted draws tries frames of classes that reach place pl of graph g
// from its source src (LPG source name: frames of name's) and keeps, in
// port order, the first that leaves pl by each port, run alone on a fresh
// machine of g. Half of them have their free fields at edges
// (0, all ones, small), and each has a payload of at most the state's max
// behind its headers, the length fields counting it, most of them cut
// after its first bytes: an event length computed from a field (bit<5>(f),
// udp.length - 8) is small where the field is, and a segment that is the
// rest of the frame fits a small event only when the frame is cut (seed
// 20261128, models 654 and 1983; seed 20261129, models 1694, 2926 and
// 4709: events of at most 8 or 16 bytes, and no frame of verify's reached
// the ports a lie changes).
func fitted(g *dataflow.Graph, fs *frames, space *predicate.Space, pl, src *dataflow.Node, name string, reach predicate.Pred, tries int, rnd *rand.Rand) []fit {
	most := int(min(g.Schema.States[pl.Op.State].Max, maxPinnedPayload))
	found := make([]*fit, len(pl.Ports))
	var mk func(patch) []byte
	var meta []packet.Value
	var c predicate.Class
	stay := 0 // in eighths: the chance the next frame is of class c
	for range tries {
		// A new class unless a frame of c reached pl (the predicates let
		// through classes an earlier node finds malformed), most likely
		// if pl took it and half the time if pl found it malformed (a
		// size past the frame's end, where only an edge value fits;
		// a field of a header the frame lacks).
		if mk == nil || rnd.IntN(8) >= stay {
			var ok bool
			if c, ok = fs.sample(space, reach, rnd); !ok {
				break
			}
			mk = nil
		}
		if mk == nil || rnd.IntN(2) == 0 {
			var ok bool
			if mk, meta, ok = fs.patcher(name, c, rnd.IntN(2) == 0, rnd); !ok {
				mk = nil
				continue
			}
		}
		pt := patch{payload: rnd.IntN(most + 1), keep: -1}
		if rnd.IntN(4) != 0 {
			pt.keep = rnd.IntN(pt.payload + 1)
		}
		f := mk(pt)
		m, err := sim.New(g, nil)
		if err != nil {
			return nil
		}
		m.RunMeta(src, f, meta, func(*dataflow.Node, []byte) {})
		i := placeOutcome(m, pl)
		switch {
		case i >= 0:
			stay = 7
			if found[i] == nil {
				found[i] = &fit{f, meta, pl.Ports[i].Name, c}
			}
		case m.Counters().Nodes[pl.Name] > 0:
			stay = 4
		default:
			stay = 0
		}
	}
	var out []fit
	for _, f := range found {
		if f != nil {
			out = append(out, *f)
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

// unmoved computes g's predicates as if its pops and pushes did nothing:
// the frames of a class reaching a place that follows pops need the
// headers the pops take, and those behind a push lack the header it
// pushes (they are built before the graph runs: seed 20261128, model 654,
// a push of IPv6 after UDP made every class at the place an IPv6 frame,
// which the graph's IPv4 checksum before it found malformed). It swaps
// the pops' and pushes' operations for no-ops while it works, so it must
// not run alongside other users of g.
func unmoved(g *dataflow.Graph, space *predicate.Space) *dataflow.Predicates {
	nop := &packet.Op{Kind: packet.OpNop, Header: -1, After: -1, Table: -1}
	saved := map[*dataflow.Node]*packet.Op{}
	for _, n := range g.Nodes {
		if n.Kind == dataflow.FNode && (n.Op.Kind == packet.OpPop || n.Op.Kind == packet.OpPush) {
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
