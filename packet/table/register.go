package table

import "github.com/dragonet-go/nsc/packet"

// Register is a register array at run time, for the interpreter and the
// generated Go alike: a map from keys to values, at most Def.Size of them.
// A Register is for one goroutine.
type Register struct {
	Def     *packet.RegisterDef
	entries map[packet.RegisterKey][]packet.Value
}

// NewRegisters makes the empty registers of a schema, in Schema.Registers
// order.
func NewRegisters(s *packet.Schema) []*Register {
	rs := make([]*Register, len(s.Registers))
	for i, d := range s.Registers {
		rs[i] = &Register{Def: d, entries: map[packet.RegisterKey][]packet.Value{}}
	}
	return rs
}

// Load copies the entry of key k into dst and reports whether there was
// one; on a miss dst is zeroed.
func (r *Register) Load(k *packet.RegisterKey, dst []packet.Value) bool {
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
func (r *Register) Store(k *packet.RegisterKey, src []packet.Value) bool {
	v, ok := r.entries[*k]
	if !ok {
		if len(r.entries) >= r.Def.Size {
			return false
		}
		v = make([]packet.Value, len(src))
		r.entries[*k] = v
	}
	copy(v, src)
	return true
}

// Len is the number of entries.
func (r *Register) Len() int { return len(r.entries) }

// RegisterSet is a schema's registers in Schema.Registers order, as
// packet.Env reads them.
type RegisterSet []*Register

// Load loads from register i.
func (s RegisterSet) Load(i int, k *packet.RegisterKey, dst []packet.Value) bool {
	return s[i].Load(k, dst)
}

// Store stores into register i.
func (s RegisterSet) Store(i int, k *packet.RegisterKey, src []packet.Value) bool {
	return s[i].Store(k, src)
}
