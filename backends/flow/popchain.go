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
type PopChains struct {
	Defers, Receives map[*dataflow.Node]bool
	Pending          []int // header indices, sorted
}

// FindPopChains analyses g's pops.
func FindPopChains(g *dataflow.Graph, s *packet.Schema) PopChains {
	pc := PopChains{Defers: map[*dataflow.Node]bool{}, Receives: map[*dataflow.Node]bool{}}
	isPop := func(n *dataflow.Node) bool {
		return n.Kind == dataflow.FNode && n.Op.Kind == packet.OpPop && !s.Headers[n.Op.Header].Metadata
	}
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
