// Package table is the run-time side of a model's tables: a Table holds
// the entries of one packet.TableSpec (exact, lpm, ternary, range), read
// lock-free while a control plane updates it in batches (Apply), and
// indexed for lookups by whole keys, by key words and by intervals; Probes
// exposes those indexes to generated code, which probes them inline. Load
// fills a schema's tables from a table_add script (packet.ParseEntries).
// A Register is a register array the data path itself writes.
//
// The interpreter (sim/), the generated Go fast paths and the control
// plane import it; the IR (packet) does not: a lookup in packet's Op.Exec
// reads tables and registers through the packet.Tables and
// packet.Registers interfaces, which Set and RegisterSet implement.
package table
