// Package predicate provides boolean predicates over packets, as the
// embedder puts on every port of the LPG and PRG (Dragonet's prPred).
//
// In: atoms, created in a Space.
//   - Field atoms over packet fields of 1..128 bits: Eq, Cmp (==, !=, <, <=,
//     >, >=), Masked, Range, Prefix. Values are packet.Value and compare as
//     unsigned integers.
//   - Valid(header): the header is present and parsed.
//   - Symbol(name): an opaque boolean such as "pred(TxQueue,out)".
//
// combined with And, Or, Not, and existential quantification for the
// predicate transformers of operations that overwrite packet state:
// ForgetField, ForgetValid, ForgetSymbol. "set ipv4.ttl = 64" turns P into
// P.ForgetField(ttl).And(s.Eq(ttl, 64)), "push p" into
// P.ForgetValid("p").And(s.Valid("p")).
//
// Out:
//   - Semantic answers: Equivalent, Implies, Satisfiable, IsTrue, IsFalse,
//     Eval on concrete inputs.
//   - Packet classes: Counterexample(a, b) is a class of packets satisfying a
//     but not b; Sample draws a random satisfying class for test packets.
//   - For people only: DNF and Format, over the atoms as written (a negated
//     comparison prints as the opposite comparison: not(x <= 5) as x > 5).
//     The printed formula is equivalent to the predicate, also after
//     Forget*: see forget.go for how the atom-level BDD stays exact.
//
// Semantics. Every field bit, header validity and symbol is one BDD variable;
// every field atom is the exact BDD of its condition on the field's bits. So
// atoms on one field interact as integers do: "proto == 17 ∧ proto == 6" is
// unsatisfiable, "dport in 0x4000/0xc000" implies "dport >= 16384". Nothing
// else is assumed: the package does not know that a field is meaningless
// when its header is invalid, nor anything about symbols; callers conjoin
// such facts when they hold. The BDD is canonical, so Equivalent is O(1) and
// Implies one BDD operation.
//
// Variable order is first use: a field's bits (most significant first) are
// placed when the field first appears. Conjunctions of disjunctions that
// pair atoms created far apart can grow exponentially; building atoms in the
// order the graph is walked keeps BDDs small in practice.
//
// Misuse never panics. An invalid field (empty name, width outside 1..128,
// a name reused with another width), an unknown operator, a prefix length
// outside the field, or mixing Preds of two Spaces yields False and is
// reported by Space.Err. Queries across Spaces answer conservatively:
// never equivalent, never implied, always a counterexample. The zero Pred
// reads as False.
//
// A Space is not safe for concurrent use and keeps every node it built
// until it is dropped.
package predicate
