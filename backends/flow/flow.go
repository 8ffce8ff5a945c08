// Package flow holds what the code generators (Go, XDP, P4) share: how a
// frame moves through a graph — generated code follows one path per frame
// (no spawn edges, no port with two targets), so O-nodes are decided at
// generation time by the one operand that fired —, where counters go so
// that node runs can be solved for (count.go), and analyses of operations
// and expressions (ops.go).
package flow

import (
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Decide is the interpreter's O-node rule when only the operand behind
// port pt has fired, as on a single path: the port o fires, or ok false
// when o cannot decide (the frame ends undecided).
func Decide(o *dataflow.Node, pt *dataflow.Port) (port string, ok bool) {
	trues, falses := 0, 0
	if dataflow.Truthy(pt) {
		trues = 1
	} else {
		falses = 1
	}
	ops := len(dataflow.Operands(o))
	var v bool
	switch o.Logic {
	case dataflow.And, dataflow.Nand:
		switch {
		case falses > 0:
			v = false
		case trues == ops:
			v = true
		default:
			return "", false
		}
	case dataflow.Or, dataflow.Nor:
		switch {
		case trues > 0:
			v = true
		case falses == ops:
			v = false
		default:
			return "", false
		}
	case dataflow.Not:
		v = falses > 0
	}
	if o.Logic == dataflow.Nand || o.Logic == dataflow.Nor {
		v = !v
	}
	if v {
		return packet.PortTrue, true
	}
	return packet.PortFalse, true
}
