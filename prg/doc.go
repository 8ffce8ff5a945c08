// Package prg is the device side of nsc: what makes a dataflow graph a
// Physical Resource Graph — its Tx entry and Rx sinks (where an LPG joins
// it, package lpg), its declared resource limits and whether a table fits
// them, and the configuration of its C-nodes (Dragonet's configuration
// nodes); prg/search finds the configuration that suits an LPG best.
//
// A C-node declares a type and may carry a value (`config NAME: TYPE =
// LITERAL`, or a configuration file). Configure turns every C-node that has
// a value into F-nodes the interpreter runs and the embedder reasons about:
//
//   - bool, enum<N>: the value names the port every packet takes (a nop);
//   - list<filter5,N>: at most N five-tuple filters, each
//     [proto, src, dst, sport, dport, priority, port] with `any` for a field
//     not compared; a packet leaves by the port of the matching filter of
//     highest priority (the lower index among equals), by port miss when
//     none matches. Each filter becomes a test node, so the ports' predicates
//     come from the filters' fields, not from opaque atoms.
//
// A C-node without a value is kept as declared (drawn, never run). Nodes
// that only unchosen ports led to are removed: no packet reaches them.
package prg
