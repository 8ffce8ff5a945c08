package packet

// Exec results other than a port index.
const (
	// End: the packet ended at a terminal operation (emit, steer, drop).
	End = -1
	// Malformed: the operation could not run on this packet (truncated, a
	// field of a missing header); the packet is dropped and counted.
	Malformed = -2
)

// Env is what operations need besides the packet: the runtime tables and
// registers, the keyed state (nil: place is malformed), and scratch space
// so lookups do not allocate.
type Env struct {
	Tables    Tables
	States    States
	Registers Registers
	keys      []Value
}

// Exec runs o on p and returns the index (in o.Ports order) of the port
// the packet leaves by, End or Malformed.
func (o *Op) Exec(p *Packet, env *Env) int {
	s := p.Schema
	switch o.Kind {
	case OpInput:
		if o.Header >= 0 && !p.ParseFrame(o.Header) {
			return Malformed
		}
		return 0
	case OpNop, OpCount, OpContext:
		return 0
	case OpParse:
		return boolPort(p.ParseFrame(o.Header))
	case OpExtract:
		return boolPort(p.Valid(o.Header) || p.Extract(o.Header))
	case OpTest:
		v, ok := o.Cond.Eval(p, nil)
		if !ok {
			return Malformed
		}
		return boolPort(!v.IsZero())
	case OpSwitch:
		v, ok := o.Expr.Eval(p, nil)
		if !ok {
			return Malformed
		}
		for i := range o.Cases {
			if o.Cases[i].Value == v {
				return o.casePort[i]
			}
		}
		return o.defaultPort
	case OpLookup:
		return o.lookup(p, env)
	case OpSet:
		if !p.assign(o.Assign, nil, o.Update) {
			return Malformed
		}
		return 0
	case OpPush:
		off := 0
		if o.After >= 0 {
			if !p.Valid(o.After) {
				return Malformed
			}
			off = p.Hdr[o.After].Off + p.Hdr[o.After].Len
		}
		if !p.Push(o.Header, off, o.Extra) {
			return Malformed
		}
		return 0
	case OpPop:
		if !p.popUpdating(o.Header, o.Update) {
			return Malformed
		}
		return 0
	case OpChecksumVerify:
		ok, wellFormed := p.VerifyChecksum(o.Header)
		if !wellFormed {
			return 1 // a checksum over a malformed packet is not valid
		}
		return boolPort(ok)
	case OpChecksumCompute:
		if !p.ComputeChecksum(o.Header) {
			return Malformed
		}
		return 0
	case OpLoad, OpStore:
		return o.registerOp(p, env)
	case OpCut:
		p.Cut()
		return 0
	case OpICRCVerify:
		ok, wellFormed := p.VerifyICRC(o.Header)
		return boolPort(ok && wellFormed)
	case OpICRCCompute:
		if !p.ComputeICRC(o.Header) {
			return Malformed
		}
		return 0
	case OpPlace:
		if env.States == nil {
			return Malformed
		}
		return env.States.Place(o, p)
	case OpEmit, OpSteer, OpDrop:
		return End
	}
	_ = s
	return Malformed
}

// Tables are the run-time tables a lookup reads (packet/table's Set):
// they live apart from the IR, as States do, so that what reads a model
// (predicate, embed, the generators) does not carry them.
type Tables interface {
	// Lookup returns the entry of table i (in Schema.Tables order) that
	// keys match, if any.
	Lookup(i int, keys []Value) (e *Entry, hit bool)
}

func boolPort(b bool) int {
	if b {
		return 0
	}
	return 1
}

func (o *Op) lookup(p *Packet, env *Env) int {
	def := p.Schema.Tables[o.Table]
	env.keys = env.keys[:0]
	for _, k := range def.Keys {
		v, ok := k.Eval(p, nil)
		if !ok {
			return Malformed
		}
		env.keys = append(env.keys, v)
	}
	act, params := def.Default, def.DefaultParams
	if e, hit := env.Tables.Lookup(o.Table, env.keys); hit {
		act, params = e.Action, e.Params
	}
	if !p.assign(p.Schema.Actions[def.Actions[act]].Body, params, nil) {
		return Malformed
	}
	return act
}

// assign runs assignments in order, each seeing the previous ones' results,
// and updates the checksums of the headers in update incrementally.
func (p *Packet) assign(as []Assign, params []Value, update []int) bool {
	for i := range as {
		v, ok := as[i].Src.Eval(p, params)
		if !ok {
			return false
		}
		if len(update) == 0 {
			if !p.Set(as[i].Dst, v) {
				return false
			}
			continue
		}
		if !p.setUpdating(as[i].Dst, v, update) {
			return false
		}
	}
	return true
}
