// Package fastpath is what the Go packages nsc generates have in common:
// their results and counter kinds, so that runners and tests can drive any
// of them through one interface.
package fastpath

import "github.com/dragonet-go/nsc/packet"

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
	Tables() []*packet.Table
}

// B2U is a condition as a number.
func B2U(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
