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

// Register is a register array at run time, for the interpreter and the
// generated Go alike: a map from keys to values, at most Def.Size of them.
// A Register is for one goroutine.
type Register struct {
	Def     *RegisterDef
	entries map[RegisterKey][]Value
}

// NewRegisters makes the empty registers of a schema, in Schema.Registers
// order.
func NewRegisters(s *Schema) []*Register {
	rs := make([]*Register, len(s.Registers))
	for i, d := range s.Registers {
		rs[i] = &Register{Def: d, entries: map[RegisterKey][]Value{}}
	}
	return rs
}

// Load copies the entry of key k into dst and reports whether there was
// one; on a miss dst is zeroed.
func (r *Register) Load(k *RegisterKey, dst []Value) bool {
	v, ok := r.entries[*k]
	if !ok {
		clear(dst)
		return false
	}
	copy(dst, v)
	return true
}

// Store copies src into the entry of key k, made if there is none; false
// (nothing stored) when a new entry would go past Def.Size.
func (r *Register) Store(k *RegisterKey, src []Value) bool {
	v, ok := r.entries[*k]
	if !ok {
		if len(r.entries) >= r.Def.Size {
			return false
		}
		v = make([]Value, len(src))
		r.entries[*k] = v
	}
	copy(v, src)
	return true
}

// Len is the number of entries.
func (r *Register) Len() int { return len(r.entries) }

// registerOp runs load or store of register o.Register on p.
func (o *Op) registerOp(p *Packet, env *Env) int {
	if o.Register >= len(env.Registers) {
		return Malformed
	}
	r := env.Registers[o.Register]
	var k RegisterKey
	for i, e := range r.Def.Keys {
		v, ok := e.Eval(p, nil)
		if !ok {
			return Malformed
		}
		k[i] = v
	}
	h := p.Schema.Headers[r.Def.Value]
	fields := p.Meta[h.MetaBase : h.MetaBase+len(h.Fields)]
	if o.Kind == OpLoad {
		return boolPort(r.Load(&k, fields))
	}
	return boolPort(r.Store(&k, fields))
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
