package flow

import (
	"sort"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// PopChains says how generated code moves the frame for pops: a pop of a
// wire header whose one successor is a pop too leaves its bytes in place
// (Defers) for that pop to move with its own (Receives), one move for the
// chain when the two headers are adjacent. Pops leave their patches of the
// checksums in Pending for later instead of applying them before the move
// (the XDP backend applies them right after it, the Go backend before the
// next node that could see them): the patches are summed, which for a
// checksum that is not optional is the same as applying them in turn
// (packet.ApplyChecksumDelta: ^fold(fold(a) + b) is ^fold(a + b)), and no
// move loads bytes a patch has just stored, nor a patch bytes a move has.
//
// A pop is Dead when nothing reads what its move would change: it is
// followed, through pops that are dead too, by a place every port of
// which but complete ends the frame at a drop (on complete the packet is
// the event, its frame gone). The place reads its payload at the cursor,
// which a pop of a header in front of it leaves on the same bytes, so the
// pop need only check the header and mark it gone. A graph with a push
// has none: a pushed header may lie behind the cursor, and its pop would
// change the payload.
type PopChains struct {
	Defers, Receives map[*dataflow.Node]bool
	Dead             map[*dataflow.Node]bool
	Pending          []int // header indices, sorted
}

// FindPopChains analyses g's pops.
func FindPopChains(g *dataflow.Graph, s *packet.Schema) PopChains {
	pc := PopChains{Defers: map[*dataflow.Node]bool{}, Receives: map[*dataflow.Node]bool{}, Dead: map[*dataflow.Node]bool{}}
	isPop := func(n *dataflow.Node) bool {
		return n.Kind == dataflow.FNode && n.Op.Kind == packet.OpPop && !s.Headers[n.Op.Header].Metadata
	}
	pc.findDead(g, isPop)
	pending := map[int]bool{}
	for _, n := range g.Nodes {
		if !isPop(n) {
			continue
		}
		if p := n.Port(packet.PortOut); p != nil && len(p.Out) == 1 && isPop(p.Out[0].To) && p.Out[0].To != n {
			pc.Defers[n] = true
			pc.Receives[p.Out[0].To] = true
		}
		for _, u := range n.Op.Update {
			us := s.Headers[u]
			if us.Metadata || us.ChecksumKind == packet.ChecksumHeader || us.Checksum < 0 || us.ChecksumOptional || pending[u] {
				continue
			}
			pending[u] = true
			pc.Pending = append(pc.Pending, u)
		}
	}
	sort.Ints(pc.Pending)
	return pc
}

// findDead marks the dead pops (PopChains).
func (pc *PopChains) findDead(g *dataflow.Graph, isPop func(*dataflow.Node) bool) {
	for _, n := range g.Nodes {
		if n.Kind == dataflow.FNode && n.Op.Kind == packet.OpPush {
			return
		}
	}
	next := func(n *dataflow.Node) *dataflow.Node {
		if p := n.Port(packet.PortOut); p != nil && len(p.Out) == 1 && p.Out[0].To.Kind == dataflow.FNode {
			return p.Out[0].To
		}
		return nil
	}
	endsFrame := func(n *dataflow.Node) bool {
		if n.Kind != dataflow.FNode || n.Op.Kind != packet.OpPlace {
			return false
		}
		for _, p := range n.Ports {
			if p.Name == packet.PlacePorts[packet.PlaceComplete] {
				continue
			}
			for _, e := range p.Out {
				if e.To.Kind != dataflow.FNode || e.To.Op.Kind != packet.OpDrop {
					return false
				}
			}
		}
		return true
	}
	var dead func(n *dataflow.Node, depth int) bool
	dead = func(n *dataflow.Node, depth int) bool {
		if !isPop(n) || depth > len(g.Nodes) {
			return false
		}
		m := next(n)
		return m != nil && (endsFrame(m) || dead(m, depth+1))
	}
	for _, n := range g.Nodes {
		if dead(n, 0) {
			pc.Dead[n] = true
		}
	}
}
