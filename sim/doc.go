// Package sim is the reference interpreter: it runs any dataflow graph (an
// LPG alone, a PRG, an embedded graph) on packet bytes and reports what
// reaches each sink, plus per-node counters and drops by reason. It defines
// what every backend must reproduce.
//
// Semantics. A frame enters at a source. Nodes run in the graph's stable
// topological order, each at most once per packet, on one shared packet
// (forks see each other's changes in that order). An F-node runs when a
// port that leads to it fired; its operation picks one port. An O-node
// fires once its operands decide it (and: false as soon as one operand is
// false, true when all are true; or dually; not inverts its single
// operand); an operand is the boolean of the port its source node fired
// (false for ports named false, true otherwise), and is absent if that
// port does not lead to the O-node. Packets leave at emit/steer nodes and at
// sink nodes whose fired port leads nowhere. A drop node, a port that leads
// nowhere, and an operation that cannot run on the bytes (truncated frame,
// a field of a missing header) end the packet and are counted by reason.
// A fired port's spawn edges start a new task at their target, on a copy of
// the packet as it was then, after the current task ends (at most
// MaxSpawn per frame).
//
// Keyed state (docs/language.md §8.1) lives in the machine across frames:
// state.go is its reference implementation, plain maps and lists of the
// byte ranges that arrived, with timeouts on the machine's clock
// (SetClock; time.Now without one). A place that completes an event makes
// the packet the event's bytes. Events that time out or are evicted are
// counted as drops under the state's name.
//
// Malformed input never panics.
package sim
