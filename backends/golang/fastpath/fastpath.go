// Package fastpath is what the Go packages nsc generates have in common:
// their results and counter kinds, so that runners and tests can drive any
// of them through one interface.
package fastpath

import (
	"fmt"
	"math/bits"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

// Result says where a frame went: out at sink number Sink with the bytes
// Data (aliasing the caller's buffer), or dropped at drop site number Drop.
// The other index is -1. The indices are 32-bit so that a Result is four
// words, which the compiler keeps in registers: a larger struct is built
// in the callee's frame and read back for the return, and the reload of
// stores still in flight stalled every call by some 25 cycles.
type Result struct {
	Sink, Drop int32
	Data       []byte
}

// DropSite names a drop: the node (or node.port) and the reason.
type DropSite struct{ Node, Reason string }

// Frame is one frame of a batch: the frame is Buf[Off:Off+Len], and Out
// receives its result.
type Frame struct {
	Buf      []byte
	Off, Len int
	Out      Result
}

// MaxHeaders is the most headers a schema may have for a pipeline
// generated from a sink on (At).
const MaxHeaders = 32

// At is where a device left a frame's headers, for a pipeline generated
// from one of its Rx sinks on (nsc compile --sink): the device parsed and
// checked the frame, so the pipeline starts with each header the device
// may leave valid at Off (-1: not valid), Len bytes long, by schema index,
// and the parse cursor at Cur, all offsets from the frame's start. The
// pipeline trusts them: a wrong At is a wrong frame, which the pipeline
// may drop as malformed, never read past.
type At struct {
	Off, Len [MaxHeaders]int
	Cur      int
}

// NewAt is an At with no header valid and the cursor at 0.
func NewAt() At {
	var a At
	for i := range a.Off {
		a.Off[i] = -1
	}
	return a
}

// Counter kinds passed to Each.
const (
	CountNode  = "node"  // name: node; frames it ran on
	CountSink  = "sink"  // name: sink node; frames out
	CountDrop  = "drop"  // name: node (or node.port), reason; frames ended
	CountLabel = "count" // name: a count operation's label
)

// Pipeline is a generated fast path.
type Pipeline interface {
	// Process runs the frame buf[off:off+n] in place; packet.Headroom
	// bytes before off and after off+n leave room for pushed headers.
	Process(buf []byte, off, n int) Result
	// ProcessBatch runs every frame of a batch.
	ProcessBatch(frames []Frame)
	// SinkName and Drop name a Result's indices.
	SinkName(i int) string
	DropSite(i int) DropSite
	// Each calls f for every non-zero counter.
	Each(f func(kind, name, reason string, n uint64))
	// Tables are the runtime tables, in the schema's order.
	Tables() []*table.Table
}

// B2U is a condition as a number.
func B2U(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// OnesCount is popcount(x) of the model language.
func OnesCount(x uint64) uint64 { return uint64(bits.OnesCount64(x)) }

// NewTables makes empty runtime tables for schema s, in s.Tables order.
func NewTables(s *packet.Schema) []*table.Table {
	ts := make([]*table.Table, len(s.Tables))
	for i, t := range s.Tables {
		ts[i] = table.New(t.Spec)
	}
	return ts
}

// CheckTables returns the tables a generated pipeline over schema s runs
// on: tables itself when it has s's tables in order, each of its spec's
// shape (the generated code relies on keys, actions and parameter widths),
// empty tables when it is nil, and an error otherwise.
func CheckTables(s *packet.Schema, tables []*table.Table) ([]*table.Table, error) {
	if tables == nil {
		return NewTables(s), nil
	}
	if len(tables) != len(s.Tables) {
		return nil, fmt.Errorf("%d tables given, the fast path has %d", len(tables), len(s.Tables))
	}
	for i, t := range tables {
		if err := s.Tables[i].Spec.Shaped(t.Spec()); err != nil {
			return nil, fmt.Errorf("table %d: %v", i, err)
		}
	}
	return tables, nil
}

// Names name a generated pipeline's counters, each slice by its index.
type Names struct {
	Nodes  []string   // node runs
	Sinks  []string   // frames out at a sink
	Drops  []DropSite // frames ended at a drop site
	Counts []string   // count operations' labels
	// CountOf is, per node, 1 + the index of its count operation's
	// label, or 0.
	CountOf []int
}

// Counted adds the count operations' counters, derived from the node runs,
// into out (by Counts index).
func (nm *Names) Counted(runs, out []uint64) {
	for i, v := range runs {
		if k := nm.CountOf[i]; k > 0 {
			out[k-1] += v
		}
	}
}

// Each calls f for every non-zero counter: node runs in graph order, then
// sinks, drops and count labels.
func (nm *Names) Each(runs, sunk, dropped []uint64, f func(kind, name, reason string, n uint64)) {
	for i, v := range runs {
		if v > 0 {
			f(CountNode, nm.Nodes[i], "", v)
		}
	}
	for i, v := range sunk {
		if v > 0 {
			f(CountSink, nm.Sinks[i], "", v)
		}
	}
	for i, v := range dropped {
		if v > 0 {
			f(CountDrop, nm.Drops[i].Node, nm.Drops[i].Reason, v)
		}
	}
	counted := make([]uint64, len(nm.Counts))
	nm.Counted(runs, counted)
	for i, v := range counted {
		if v > 0 {
			f(CountLabel, nm.Counts[i], "", v)
		}
	}
}
