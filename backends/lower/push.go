package lower

import "github.com/dragonet-go/nsc/dataflow"

// A push, lowered (packet.Packet.Push): header H, zeroed, N bytes long
// (Extra of them its variable-length field's),
// inserted behind header After (which must be valid) or at the front;
// the frame fails where H is valid already or the offset lies past its
// end. The headers that may be valid where the push runs (Moved) move
// back by N if they start at the offset or after it, as does the cursor.
// A metadata header's push does nothing.

// Push is a lowered push.
type Push struct {
	H     int
	After int // -1: at the front
	N     int
	Extra int
	Moved []int
}

// LowerPush lowers push node n; false for a metadata header's.
func (w *Walker) LowerPush(n *dataflow.Node) (*Push, bool) {
	s, o := w.P.Graph.Schema, n.Op
	spec := s.Headers[o.Header]
	if spec.Metadata {
		return nil, false
	}
	p := &Push{H: o.Header, After: o.After, N: spec.FixedBytes() + o.Extra, Extra: o.Extra}
	for i, hs := range s.Headers {
		if !hs.Metadata && i != p.H && w.Valid.May(n, i) {
			p.Moved = append(p.Moved, i)
		}
	}
	return p, true
}

// push prints push node n.
func (w *Walker) push(n *dataflow.Node) {
	if p, ok := w.LowerPush(n); ok {
		w.D.Push(p)
	}
}
