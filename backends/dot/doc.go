// Package dot draws a dataflow graph (an LPG, a PRG or an embedded graph) as
// Graphviz DOT source, in Dragonet's visual language, and renders DOT to SVG
// when Graphviz is installed.
//
// In: a *dataflow.Graph, and Options (a title, and node names to fill with a
// color, e.g. the nodes an embedding offloaded). Out: DOT text, written with
// github.com/emicklei/dot, left to right (rankdir=LR), starting with a
// "// Code generated ... DO NOT EDIT." line. The same graph and options give
// the same bytes: nodes, clusters and edges are created in declaration order.
// Refused: a Highlight name that is not a node of the graph, and an edge to a
// node outside the graph.
//
// The picture:
//
//   - Every cluster is a `subgraph cluster_…` box labelled with the cluster
//     name; nested clusters nest. Nodes outside clusters sit at the top level.
//   - F-nodes are white boxes: the node name, and on a second line the
//     operation with a short detail (the tested condition, the switched
//     expression, the header parsed/pushed/popped/checksummed, the table
//     looked up, the fields set, or the label of a steer/drop/count/context).
//   - O-nodes are gray (gray80) rounded boxes: the operator in upper case
//     (AND, OR, NAND, NOR, NOT), then the node name.
//   - C-nodes are white hexagons: the node name, then "type = value".
//   - Software nodes have a dotted outline; hardware and unmarked nodes a
//     solid one. Sources have a thick outline (penwidth=2), sinks a double
//     one (peripheries=2).
//   - Every edge is labelled with the name of the port it leaves by. Spawn
//     edges are dashed. A port with no edge (packets end there) leads to a
//     small black dot.
//   - Options.Highlight replaces a node's fill color; Options.Notes adds a
//     line to a node's label; Options.Ghosts are drawn faintly in a cluster
//     "pruned: not in the graph"; Options.Legend is a cluster "legend" of
//     sample nodes; Options.Only draws a part (Neighbourhood), edges leaving
//     it ending in "…".
//   - EmbeddingOptions sets them for an embedded graph: LPG nodes in
//     software or on the host, in a device's program, hardware doing LPG
//     work (noted with the LPG nodes it does), residual guards, pruned LPG
//     nodes with why.
//
// Render runs `dot -T<svg|png|pdf>` (SVG is Render for svg); without
// Graphviz on PATH it returns ErrNoGraphviz.
// ExampleWrite shows the text for a two-node graph.
package dot
