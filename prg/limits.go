package prg

import (
	"fmt"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// LimitNames are the resources a PRG can declare (`limits { … }`): how
// many tables its hardware holds, how many entries each, how wide a
// table's key may be in bits, and how many action parameters (bits) an
// entry may carry; for a device that places segments into keyed state
// (embed/rxoffload.go), the longest event one buffer holds, the bytes of
// all its buffers, and how many events it tracks at once; for a
// programmable device (embed/device.go), how many bytes of the payload,
// past the headers its parser extracts, it may read (0 for a P4 pipeline),
// and how many entries of how many bits a register (state the data path
// reads and writes, a queue pair's) may have in its memory. A limit a PRG
// does not declare is unlimited.
var LimitNames = append(TableLimitNames[:len(TableLimitNames):len(TableLimitNames)], "place_buffer", "place_memory", "place_events", "payload_bytes",
	"register_entries", "register_bits")

// TableLimitNames are the limits on tables, which a table target (XDP)
// must know.
var TableLimitNames = []string{"tables", "table_size", "key_bits", "action_bits"}

// RegisterFits says which of p's declared limits register r of schema s
// exceeds: its entries, or the bits of its value (the metadata header's
// fields); "" when it fits.
func RegisterFits(p *dataflow.Graph, s *packet.Schema, r *packet.RegisterDef) string {
	bits := 0
	for _, f := range s.Headers[r.Value].Fields {
		bits += f.Width
	}
	lim := p.Limits
	over := func(name string, need int) bool { v, ok := lim[name]; return ok && need > v }
	switch {
	case over("register_entries", r.Size):
		return fmt.Sprintf("register %s has %d entries and %s holds at most %d (limit register_entries)", r.Name, r.Size, p.Name, lim["register_entries"])
	case over("register_bits", bits):
		return fmt.Sprintf("register %s has %d-bit entries and %s holds at most %d bits an entry (limit register_bits)", r.Name, bits, p.Name, lim["register_bits"])
	}
	return ""
}

// TableFits says which of p's declared limits a table would exceed if p
// held it along with others, tables in all; "" when it fits.
func TableFits(p *dataflow.Graph, spec *packet.TableSpec, tables int) string {
	lim := p.Limits
	over := func(name string, need int) bool { v, ok := lim[name]; return ok && need > v }
	switch keyBits, actionBits := spec.KeyBits(), spec.ActionBits(); {
	case over("table_size", spec.Size):
		return fmt.Sprintf("table %s has %d entries and %s holds at most %d (limit table_size)", spec.Name, spec.Size, p.Name, lim["table_size"])
	case over("key_bits", keyBits):
		return fmt.Sprintf("table %s has a %d-bit key and %s takes at most %d bits (limit key_bits)", spec.Name, keyBits, p.Name, lim["key_bits"])
	case over("action_bits", actionBits):
		return fmt.Sprintf("table %s's actions carry %d bits of parameters and %s at most %d (limit action_bits)", spec.Name, actionBits, p.Name, lim["action_bits"])
	case over("tables", tables):
		return fmt.Sprintf("%s would need %d tables and holds at most %d (limit tables)", p.Name, tables, lim["tables"])
	}
	return ""
}
