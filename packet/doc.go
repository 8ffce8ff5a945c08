// Package packet is the leaf of nsc and its packet IR: header layouts as
// bit fields (big-endian, with variable-length fields such as IPv4
// options), field access on packet bytes, Internet checksums (full and
// RFC 1624 incremental), the operations an F-node performs and what they
// mean (Op.Exec), and match tables as a model declares them: their specs,
// entries, the rules an entry set must keep (EntrySet) and the table_add
// text format. The tables and registers at run time are packet/table's.
//
// It imports no other nsc package; predicate, sim and generated code import it.
// Nothing here panics on short or malformed packets: accessors report ok=false.
package packet
