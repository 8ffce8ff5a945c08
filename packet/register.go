package packet

// RegisterDef is a register array as a model declares it
// (docs/language.md, "Registers"): entries the data path reads and
// writes, keyed by values computed from the packet, each holding the
// fields of one metadata header (Value). `load` copies an entry into that
// header, `store` copies the header into the entry; a queue pair's
// expected PSN is one.
type RegisterDef struct {
	Name  string
	Keys  []*Expr
	Value int // a metadata header
	Size  int // the most entries
}

// MaxRegisterKeys is the most key expressions a register takes.
const MaxRegisterKeys = 4

// RegisterKey is a register entry's key: its expressions' values, the
// unused ones zero.
type RegisterKey [MaxRegisterKeys]Value

// The ports of load and store, in Op.Ports order.
var (
	LoadPorts  = []string{"hit", "miss"}
	StorePorts = []string{"out", "full"}
)

// registerOp runs load or store of register o.Register on p.
func (o *Op) registerOp(p *Packet, env *Env) int {
	if env.Registers == nil || o.Register >= len(p.Schema.Registers) {
		return Malformed
	}
	def := p.Schema.Registers[o.Register]
	var k RegisterKey
	for i, e := range def.Keys {
		v, ok := e.Eval(p, nil)
		if !ok {
			return Malformed
		}
		k[i] = v
	}
	h := p.Schema.Headers[def.Value]
	fields := p.Meta[h.MetaBase : h.MetaBase+len(h.Fields)]
	if o.Kind == OpLoad {
		return boolPort(env.Registers.Load(o.Register, &k, fields))
	}
	return boolPort(env.Registers.Store(o.Register, &k, fields))
}

// Registers are the register arrays at run time (packet/table's
// RegisterSet), apart from the IR as Tables are.
type Registers interface {
	// Load copies the entry of key k of register i into dst and reports
	// whether there was one; on a miss dst is zeroed.
	Load(i int, k *RegisterKey, dst []Value) bool
	// Store copies src into the entry of key k of register i; false when
	// the register is full.
	Store(i int, k *RegisterKey, src []Value) bool
}

// Register returns the index of the named register.
func (s *Schema) Register(name string) (int, bool) {
	for i, r := range s.Registers {
		if r.Name == name {
			return i, true
		}
	}
	return -1, false
}
