package lower

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/packet"
)

// Extract is header H's extraction at the cursor, lowered
// (packet.Packet.Extract): its Fixed bytes and, for a header whose last
// field is variable, Length more, read with the fixed part provisionally
// in place; the header fails where either lies past the frame's end (or
// Length past its length), and is left invalid.
type Extract struct {
	H int
	// Meta: a metadata header, always there: nothing to do.
	Meta bool
	// Known is what is known of H's validity before the extraction (an
	// unrolled parse's: Tested); after it, nothing is (known.go).
	Known Known
	Fixed int
	// Length is nil for a fixed-size header. Small: its value is an
	// integer signed 64-bit arithmetic finds (flow.SmallRange); else Wide
	// says it is computed in 128 bits, not 64.
	Length      *packet.Expr
	Small, Wide bool
}

// LowerExtract lowers the extraction of header h (the language gives
// every header a field).
func LowerExtract(s *packet.Schema, h int) *Extract {
	spec := s.Headers[h]
	x := &Extract{H: h, Meta: spec.Metadata, Fixed: spec.FixedBytes()}
	if last := spec.Fields[len(spec.Fields)-1]; last.Variable() {
		x.Length = last.Length
		_, _, x.Small = flow.SmallRange(s, x.Length)
		x.Wide = flow.IsWide(x.Length)
	}
	return x
}
