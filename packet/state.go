package packet

import "time"

// StateDef is keyed state as a model declares it (docs/language.md,
// "State"): a table whose entries the data path creates. An entry is an
// event buffer of Length bytes, keyed by Keys, filled by place operations
// and removed when it completes, times out or is evicted.
type StateDef struct {
	Name string
	Keys []*Expr
	// Length computes, from a segment, the whole event's length.
	Length *Expr
	// Max is the longest event accepted, in bytes.
	Max uint64
	// Timeout runs from an entry's first segment to its expiry.
	Timeout time.Duration
	// Events and Bytes cap the entries in progress (count, and the sum of
	// their lengths); past a cap the oldest entry is evicted.
	Events int
	Bytes  uint64
}

// The ports of a place operation, in Op.Ports order.
const (
	PlacePlaced         = iota // stored; the event is not whole yet
	PlaceComplete              // this segment made the event whole; the packet is the event now
	PlaceDuplicate             // every byte of the segment had arrived (or it has none)
	PlaceOverlap               // some, not all, of its bytes had arrived
	PlaceLate                  // a segment of an event that timed out or was evicted
	PlaceLengthMismatch        // its event length differs from the entry's
	PlaceOutOfBounds           // offset + payload > event length
	PlaceZeroLength            // event length 0
	PlaceTooLarge              // event length above the state's max
)

// PlacePorts names the ports of a place operation.
var PlacePorts = []string{"placed", "complete", "duplicate", "overlap", "late",
	"length_mismatch", "out_of_bounds", "zero_length", "too_large"}

// States runs the operations on keyed state; the interpreter (sim/) holds
// the reference implementation. Place returns a port index (PlacePlaced…)
// or Malformed.
type States interface {
	Place(o *Op, p *Packet) int
}

// State returns the index of the named state.
func (s *Schema) State(name string) (int, bool) {
	for i, st := range s.States {
		if st.Name == name {
			return i, true
		}
	}
	return -1, false
}

// Replace makes data (copied) the packet's frame, as a packet fresh from
// Reset, but keeps its metadata: what a completed event goes on as.
func (p *Packet) Replace(data []byte) {
	meta := append([]Value(nil), p.Meta...)
	p.Reset(data)
	copy(p.Meta, meta)
}
