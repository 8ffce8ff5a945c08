// Package prg is the device side of nsc: the configuration of a PRG's
// C-nodes (Dragonet's configuration nodes) and, in prg/search, the search
// for the configuration that suits an LPG best.
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
