package lower

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
)

// What the printed code knows of headers' validity is lower's decision,
// made from the validity analysis (flow.AnalyzeValid) at the block being
// printed: a header valid on every path there needs no test, one valid on
// none is invalid, any other is tested at run time. Once a block's code
// has changed which headers are valid (an extraction, a parse), nothing
// is known for the rest of it. A printer spells the Known it is given
// (in a lowered description, or from Known where it reads a field) and
// never consults the analysis itself.

// Known is what the code where a block runs knows of a header's validity.
type Known uint8

const (
	Tested       Known = iota // unknown: tested at run time
	KnownValid                // valid: no test
	KnownInvalid              // invalid: a test would fail
)

// Analyze runs the analyses the walker lowers with: header validity,
// paths kept apart up to paths at each join (flow.AnalyzeValid: more
// keep more headers known valid, and the printed code then keeps more
// header state live across joins, a target's trade-off), and the pops
// that move the frame together.
func (w *Walker) Analyze(paths int) { w.AnalyzeFrom(w.P.Start, paths) }

// AnalyzeFrom is Analyze with validity from start on, which may come
// before the program's start (a program from a sink starts with what the
// device's part left valid).
func (w *Walker) AnalyzeFrom(start *dataflow.Node, paths int) {
	g := w.P.Graph
	w.Valid = flow.AnalyzeValid(g, start, paths)
	w.Pops = flow.FindPopChains(g, g.Schema)
}

// Known decides what the code printed now knows of header h's validity.
func (w *Walker) Known(h int) Known { return w.KnownAt(w.node(), h) }

// KnownAt is what code where block n begins knows of header h's validity
// (nil n: nothing).
func (w *Walker) KnownAt(n *dataflow.Node, h int) Known {
	s := w.P.Graph.Schema
	switch {
	case h < 0 || h >= len(s.Headers):
		return KnownInvalid
	case s.Headers[h].Metadata:
		return KnownValid
	}
	switch {
	case n == nil:
		return Tested
	case w.Valid.Must(n, h):
		return KnownValid
	case !w.Valid.May(n, h):
		return KnownInvalid
	}
	return Tested
}

// node is the block being printed, nil once its code has changed the
// headers' validity (forget).
func (w *Walker) node() *dataflow.Node {
	if w.cur == nil || w.forgot {
		return nil
	}
	return w.cur.Node
}

// forget records that the block's code changes which headers are valid.
func (w *Walker) forget() { w.forgot = true }
