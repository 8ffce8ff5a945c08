// Package p4 generates a P4_16 program from a graph: the LPG embedded in a
// programmable pipeline's PRG (models/ejfat/p4.nsc: U280, BMv2), for the
// architectures xsa (AMD VitisNet's XilinxPipeline, the ESnet SmartNIC) and
// v1model (BMv2 simple_switch). It also turns a table_add script written
// for the model into the table_add lines the generated program takes.
//
// In: a validated, single-path graph (no spawn edges, no port with two
// targets) and the PRG's limits. Generate runs the graph from its first
// source, as the interpreter does, and maps it onto a P4 pipeline:
//
//   - the nodes from the source up to the last extract form the parser,
//     the model's parse graph (`input parse H`, `parse H` before anything
//     is extracted) written out as extract, switch and test nodes first:
//     extract nodes become packet.extract, tests and switches select or
//     verify, and every way the parse can fail (a header that does not
//     fit, a failed check, a value no case takes) is a parser error that
//     the control takes where the model's failure leads (the exit field
//     says which extract failed);
//   - the rest is the control: tables with the model's keys, match kinds,
//     actions (parameters in the model's order) and default action; the
//     graph's control flow as structured if/else, action_run switches and
//     one bool per join node; incremental checksum updates as explicit
//     one's-complement arithmetic; push and pop as setValid/setInvalid;
//     drops and counters;
//   - the deparser emits the valid headers in the one wire order every
//     frame that leaves agrees on.
//
// Out: a Program, whose Source is the P4 text (deterministic, marked as
// generated) and whose Tables give the P4 names, key kinds and priority
// rule of each table (package tableadd writes entries with them).
//
// Refused, with an *Unsupported naming the node and the reason: what P4
// cannot do (reading the payload: len(h), checksums over the payload, the
// ICRC; extracting after the parser; parsing the frame again; going on
// after an extract that failed in its variable-length part; steer; cut;
// popcount), what the target cannot hold (a table past the PRG's limits;
// range keys on xsa), and what the backend does not do (the model's
// registers; spawn edges and forks, as every code generator).
//
// How graph constructs map to P4, and how the result is tested, is in
// docs/p4.md.
package p4
