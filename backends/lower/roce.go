package lower

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// What a RoCEv2 responder needs beyond the other operations: the ICRC
// (verify and compute, ICRC), registers (load and store, Register) and
// cut. A dialect prints those it implements the syntax of; the walker
// refuses the others.

// ICRCVerifier prints a lowered ICRC check.
type ICRCVerifier interface {
	VerifyICRC(x *ICRC) (cond string)
}

// RoCEDialect prints every RoCE operation.
type RoCEDialect interface {
	ICRCVerifier
	ComputeICRC(x *ICRC)
	// Register returns the condition of a load's hit or a store's out.
	Register(r *Register) (cond string)
	Cut()
}

// Register is a lowered load or store: the register's keys, each
// computed in 128 bits or a word (KeyWide), and its value header's
// fields, metadata, copied out of the entry (Load) or into it, each 128
// bits or a word (FieldWide).
type Register struct {
	Reg       int
	Def       *packet.RegisterDef
	Load      bool
	KeyWide   []bool
	Value     *packet.HeaderSpec
	FieldWide []bool
}

// LowerRegister lowers load or store node n.
func (w *Walker) LowerRegister(n *dataflow.Node) *Register {
	s := w.P.Graph.Schema
	def := s.Registers[n.Op.Register]
	r := &Register{Reg: n.Op.Register, Def: def, Load: n.Op.Kind == packet.OpLoad, Value: s.Headers[def.Value]}
	for _, e := range def.Keys {
		r.KeyWide = append(r.KeyWide, flow.IsWide(e))
	}
	for _, f := range r.Value.Fields {
		r.FieldWide = append(r.FieldWide, f.Width > 64)
	}
	return r
}

// roce prints the ICRC operations, load, store and cut, or refuses them.
func (w *Walker) roce(n *dataflow.Node) {
	s := w.P.Graph.Schema
	x := &ICRC{H: n.Op.Header, IPs: IPHeaders(s)}
	if v, ok := w.D.(ICRCVerifier); ok && n.Op.Kind == packet.OpICRCVerify {
		w.Branch(n, v.VerifyICRC(x))
		return
	}
	d, ok := w.D.(RoCEDialect)
	switch {
	case ok:
	case n.Op.Kind == packet.OpICRCVerify:
		w.Refuse(n, "checksum verify icrc(%s) is not generated for this target", s.Headers[x.H].Name)
		return
	case n.Op.Kind == packet.OpICRCCompute:
		w.Refuse(n, "checksum compute icrc(%s) is not generated for this target", s.Headers[x.H].Name)
		return
	case n.Op.Kind == packet.OpCut:
		w.Refuse(n, "operation cut is not generated for this target")
		return
	default:
		w.Refuse(n, "operation %s %s: registers are not generated for this target", n.Op.Kind, s.Registers[n.Op.Register].Name)
		return
	}
	switch n.Op.Kind {
	case packet.OpLoad, packet.OpStore:
		w.Branch(n, d.Register(w.LowerRegister(n)))
	case packet.OpICRCCompute:
		d.ComputeICRC(x)
		w.Fire(n, 0)
	default:
		d.Cut()
		w.Fire(n, 0)
	}
}
