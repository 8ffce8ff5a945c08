// Package dataflow is the graph core shared by LPGs and PRGs: F-nodes (an
// operation with one active output port), O-nodes (and, or, nand, nor, not,
// with short-circuit), C-nodes (typed configuration, kept for later
// semantics), ports, normal and spawn edges, and clusters. It validates a
// graph (unconnected required ports, cycles other than through spawn edges,
// nodes that can never run), gives a stable topological order (gonum), and
// computes the predicate of every port once (predicates.go).
//
// Graphs come from package lang; sim runs them, embed transforms them, the
// backends print them.
package dataflow
