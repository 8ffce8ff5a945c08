package lower

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// A place, lowered: `place S at OFFSET [size N]` as the interpreter runs
// it — the state's keys evaluated, the event's length (the state's
// Length), the offset and the size (nil: the rest of the frame from the
// cursor) saturated to 64 bits, the payload at the cursor placed, and
// the port the state picks (packet.PlacePorts) fired. On complete the
// packet is the event: no wire header valid, the cursor at 0.
//
//	port := PlaceSyntax.Place; PortSwitch(port); per port: PortCase, its exit; EndPortSwitch

// Place is a lowered place.
type Place struct {
	State int
	Def   *packet.StateDef
	// Wide says, per key, that it is computed in 128 bits.
	Wide                 []bool
	Length, Offset, Size *packet.Expr
}

// PlaceSyntax prints a lowered place; a target whose Dialect is not one
// holds no keyed state and refuses it.
type PlaceSyntax interface {
	// Place places the segment and returns the variable holding the port
	// the state picked (an index of packet.PlacePorts), or false where it
	// refused.
	Place(p *Place) (port string, ok bool)
	// A switch on a port index: PortCase opens port i's case (the last
	// one the default).
	PortSwitch(port string)
	PortCase(i int, last bool)
	EndPortSwitch()
}

// LowerPlace lowers place node n.
func (w *Walker) LowerPlace(n *dataflow.Node) *Place {
	def := w.P.Graph.Schema.States[n.Op.State]
	p := &Place{State: n.Op.State, Def: def, Length: def.Length, Offset: n.Op.Offset, Size: n.Op.Size}
	for _, e := range def.Keys {
		p.Wide = append(p.Wide, flow.IsWide(e))
	}
	return p
}

// place prints place node n, or refuses it.
func (w *Walker) place(n *dataflow.Node) {
	d, ok := w.D.(PlaceSyntax)
	if !ok {
		w.Refuse(n, "place %s: keyed state (event buffers the data path creates) is not generated for this target", w.P.Graph.Schema.States[n.Op.State].Name)
		return
	}
	port, ok := d.Place(w.LowerPlace(n))
	if !ok {
		return
	}
	d.PortSwitch(port)
	for i := range packet.PlacePorts {
		d.PortCase(i, i == len(packet.PlacePorts)-1)
		w.Fire(n, i)
	}
	d.EndPortSwitch()
}
