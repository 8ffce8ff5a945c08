// Package packet is the leaf of nsc: header layouts as bit fields (big-endian,
// with variable-length fields such as IPv4 options), field access on packet
// bytes, Internet checksums (full and RFC 1624 incremental), match tables
// (exact, LPM, ternary, range) and the operations an F-node performs.
//
// It imports no other nsc package; predicate, sim and generated code import it.
// Nothing here panics on short or malformed packets: accessors report ok=false.
package packet
