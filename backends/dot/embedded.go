package dot

import (
	"fmt"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
)

// Colours of an embedded picture.
const (
	ColourLPG      = "lightyellow" // LPG nodes left in software (on the host, in a split)
	ColourDevice   = "lightblue"   // LPG nodes in a programmable device's program
	ColourTookOver = "palegreen"   // PRG hardware doing an LPG stage's work
	ColourGuard    = "lightsalmon" // residual guards of split stages
)

// EmbeddingOptions draws an embedded graph so that it explains itself:
// LPG nodes in software (yellow) apart from those a programmable device
// runs (blue: its program, or its part of a device/host split); hardware
// nodes doing LPG work (green), each labelled with the LPG nodes it does;
// residual guards (salmon); the LPG nodes pruned, faintly, with why; and a
// legend of the fills used.
func EmbeddingOptions(em *embed.Embedding) Options {
	kind := map[string]embed.Kind{}
	does := map[string][]string{}
	var ghosts []Ghost
	for _, p := range em.Placements {
		kind[p.Node] = p.Kind
		if p.Hardware != "" {
			// A stage moved whole names all its hardware nodes: "A, B".
			for _, hw := range strings.Split(p.Hardware, ", ") {
				does[hw] = append(does[hw], p.Node)
			}
		}
		if p.Kind == embed.Pruned {
			ghosts = append(ghosts, Ghost{p.Node, "pruned: " + strings.ReplaceAll(p.Reason, "; ", ";\n")})
		}
	}
	hl, notes := map[string]string{}, map[string]string{}
	for _, n := range em.Graph.Nodes {
		switch o := em.Origin[n.Name]; {
		case o.LPG != "" && onDevice(em, n.Name, kind[o.LPG]):
			hl[n.Name] = ColourDevice
		case o.LPG != "":
			hl[n.Name] = ColourLPG
		case o.Guard != "":
			hl[n.Name] = ColourGuard
		}
	}
	for _, hw := range sortedKeys(does) {
		hl[hw] = ColourTookOver
		notes[hw] = "does LPG " + wrap(does[hw], 3)
	}
	software := "LPG node, in software"
	if em.Device != nil {
		software = "LPG node, on the host"
	}
	var legend []LegendEntry
	for _, l := range []LegendEntry{
		{ColourDevice, "LPG node, in " + em.PRG.Name + "'s program"},
		{ColourLPG, software},
		{ColourTookOver, "hardware doing LPG work"},
		{ColourGuard, "residual guard: software for the rest"},
		{fillF, "PRG node"},
	} {
		if used(hl, l.Fill) || l.Fill == fillF {
			legend = append(legend, l)
		}
	}
	return Options{Highlight: hl, Notes: notes, Ghosts: ghosts, Legend: legend,
		Title: fmt.Sprintf("%s embedded in %s", em.LPG.Name, em.PRG.Name)}
}

// onDevice says whether an LPG node's copy runs in a device's program:
// in its part of a split, or anywhere in a program that runs it all.
func onDevice(em *embed.Embedding, node string, k embed.Kind) bool {
	if em.Device != nil {
		return em.Device.Node(node) != nil
	}
	return k == embed.Program
}

func used(hl map[string]string, fill string) bool {
	for _, f := range hl {
		if f == fill {
			return true
		}
	}
	return false
}

// wrap joins names, n to a line.
func wrap(names []string, n int) string {
	var b strings.Builder
	for i, name := range names {
		switch {
		case i == 0:
		case i%n == 0:
			b.WriteString(",\n")
		default:
			b.WriteString(", ")
		}
		b.WriteString(name)
	}
	return b.String()
}

// Neighbourhood is the set of nodes at most depth edges from node, edges
// followed either way: Options.Only for a readable part of a large graph.
func Neighbourhood(g *dataflow.Graph, node string, depth int) (map[string]bool, error) {
	start := g.Node(node)
	if start == nil {
		return nil, fmt.Errorf("graph %s has no node %s", g.Name, node)
	}
	adj := map[*dataflow.Node][]*dataflow.Node{}
	for _, n := range g.Nodes {
		for _, p := range n.Ports {
			for _, e := range append(p.Out[:len(p.Out):len(p.Out)], p.Spawn...) {
				adj[n] = append(adj[n], e.To)
				adj[e.To] = append(adj[e.To], n)
			}
		}
	}
	seen := map[string]bool{node: true}
	frontier := []*dataflow.Node{start}
	for range depth {
		var next []*dataflow.Node
		for _, n := range frontier {
			for _, m := range adj[n] {
				if !seen[m.Name] {
					seen[m.Name] = true
					next = append(next, m)
				}
			}
		}
		frontier = next
	}
	return seen, nil
}
