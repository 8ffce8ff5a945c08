package lower

import (
	"slices"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// A pop, lowered: the header's bytes taken out of the checksums it
// updates (each patch applied now or left pending, flow.PopChains), the
// frame moved over them — or left for the next pop to move with its own
// bytes — and the offsets of the headers that may lie behind it moved.
// It prints as
//
//	PopStart; off, n := PopRange; TakeOut per update;
//	Hold (Defers) | MoveHeld (Receives) | Move; PopOffsets
//
// or, for a metadata header, PopMeta (PopSyntax).

// PopUpdate is a checksum a pop takes the header's bytes out of.
type PopUpdate struct {
	U int
	// Pending: the patch is left for later (flow.PopChains.Pending).
	Pending bool
}

// Pop is a lowered pop.
type Pop struct {
	H int
	// Fixed is the header's length where it has no variable part, else -1.
	Fixed int
	// Defers: the next node pops too and moves these bytes with its own;
	// Receives: the pop before left its bytes for this one to move.
	Defers, Receives bool
	// OwnPending: the header's own checksum may wait for a patch, which
	// must be applied before its bytes are summed.
	OwnPending bool
	Updates    []PopUpdate
	// Behind are the headers that may lie behind the popped one where
	// the pop runs: their offsets move with the frame.
	Behind []int
	// Dead: nothing reads what the move would change (flow.PopChains):
	// the header is checked and marked gone, nothing moves.
	Dead bool
}

// HoldOp is the assignment of a held byte count, the same in Go and C:
// added to those held where the pop Receives them.
func (p *Pop) HoldOp() string {
	if p.Receives {
		return "+="
	}
	return "="
}

// PopSyntax prints a lowered pop's parts.
type PopSyntax interface {
	PopMeta(p *Pop)
	// PopStart moves what a pop before left in place (Receives) unless
	// the header ends where those bytes begin, and applies the patches
	// the header's bytes must see (OwnPending).
	PopStart(p *Pop)
	// PopRange declares the header's offset and length, the header
	// checked to be there, and returns their names.
	PopRange(p *Pop) (off, n string)
	// TakeOut takes the bytes [off, off+n) out of checksum u where it
	// covers them (an even distance from its start and an even length).
	TakeOut(p *Pop, u PopUpdate, off, n string)
	// Hold leaves the bytes [off, off+n) for the next pop to move, with
	// those held already where the pop Receives; MoveHeld moves them
	// with those held; Move moves the frame over them alone.
	Hold(p *Pop, off, n string)
	MoveHeld(p *Pop, off, n string)
	Move(p *Pop, off, n string)
	// PopOffsets marks the header gone and moves the offsets of the
	// headers Behind and the cursor.
	PopOffsets(p *Pop, off, n string)
	// Forget marks the header of a Dead pop gone.
	Forget(p *Pop)
}

// LowerPop lowers pop node n.
func (w *Walker) LowerPop(n *dataflow.Node) Pop {
	s, o := w.P.Graph.Schema, n.Op
	spec := s.Headers[o.Header]
	p := Pop{H: o.Header, Fixed: -1, Defers: w.Pops.Defers[n], Receives: w.Pops.Receives[n], OwnPending: slices.Contains(w.Pops.Pending, o.Header), Dead: w.Pops.Dead[n]}
	if len(spec.Fields) == 0 || !spec.Fields[len(spec.Fields)-1].Variable() {
		p.Fixed = spec.FixedBytes()
	}
	for _, u := range o.Update {
		us := s.Headers[u]
		if us.Metadata || us.ChecksumKind == packet.ChecksumHeader || us.Checksum < 0 || !w.Valid.May(n, u) {
			continue
		}
		if p.Fixed >= 0 && p.Fixed%2 != 0 {
			continue // an odd length is never taken out (packet.Packet.popUpdating)
		}
		p.Updates = append(p.Updates, PopUpdate{U: u, Pending: slices.Contains(w.Pops.Pending, u)})
	}
	for i, hs := range s.Headers {
		if !hs.Metadata && i != p.H && w.Valid.May(n, i) && w.Valid.Behind(n, i, p.H) {
			p.Behind = append(p.Behind, i)
		}
	}
	return p
}

// pop prints pop node n.
func (w *Walker) pop(n *dataflow.Node) {
	p := w.LowerPop(n)
	d := w.D
	if w.P.Graph.Schema.Headers[p.H].Metadata {
		d.PopMeta(&p)
		return
	}
	if p.Dead {
		// A pop that holds its bytes for a dead one is dead too: nothing
		// is held for this one.
		d.PopRange(&p)
		d.Forget(&p)
		return
	}
	d.PopStart(&p)
	off, cnt := d.PopRange(&p)
	for _, u := range p.Updates {
		d.TakeOut(&p, u, off, cnt)
	}
	switch {
	case p.Defers:
		d.Hold(&p, off, cnt)
	case p.Receives:
		d.MoveHeld(&p, off, cnt)
	default:
		d.Move(&p, off, cnt)
	}
	d.PopOffsets(&p, off, cnt)
}
