// Package embed embeds an LPG into a PRG, Dragonet-style, and says where
// every LPG node went and why.
//
// In: an LPG and a PRG from one model (one packet schema). They meet at
// fixed points: the LPG's Rx entry (its source RxQueue) hangs off every
// PRG Rx sink (a sink the PRG's Tx entry does not reach), one copy per
// sink; the LPG's Tx exit (its sink TxQueue) feeds the PRG's Tx entry (its
// source TxQueue).
//
// Out: the embedded graph, runnable by sim, and a Placement per LPG node:
//
//   - pruned: behind every sink the sink's predicate cuts the node off
//     (unreachable) or decides its outcome, so it is folded away; O-nodes
//     are folded by BDD implication too;
//   - software: it runs on the host, behind the sinks it serves;
//   - program: it runs behind program sinks only (a programmable
//     device's pipeline, such as P4's or an XDP hook): the target's
//     backend compiles it into the device's program;
//   - host: behind program sinks, but the device cannot run it (a table
//     over its limits), or it writes the frame on the way to such a node:
//     the device punts the frame unchanged (Embedding.Device, PuntNode)
//     and the host runs the whole graph on it (device.go);
//   - hardware X: removing it, alone or with the stage it belongs to (a
//     region of LPG nodes with one way in and one on: a lookup and the
//     rewrite it feeds, a pop and its checksum patches; stage.go), leaves
//     the predicate at every PRG output BDD-equivalent, because hardware
//     node X establishes what it did (a checksum, a field value) for every
//     packet class, and no node left between reads or writes what the
//     move changes; a PRG node marked rule (a flow table's rule) works
//     only when a stage moved there installs it;
//   - split with guard G: the hardware covers only some classes; the node
//     stays in software behind the residual guard G.
//
// Every refusal carries a counterexample packet class. Embed refuses
// (error) graphs from different models and LPGs without a Rx entry or Tx
// exit that the PRG can take.
package embed
