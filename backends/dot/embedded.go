package dot

import (
	"fmt"

	"github.com/dragonet-go/nsc/embed"
)

// Colours of an embedded picture.
const (
	ColourLPG      = "lightyellow" // LPG nodes left in software
	ColourTookOver = "palegreen"   // PRG hardware doing an LPG stage's work
	ColourGuard    = "lightsalmon" // residual guards of split stages
)

// EmbeddingOptions marks, in the picture of an embedded graph, the LPG nodes
// that survived, the hardware nodes that took over LPG stages, and the
// residual guards of split stages; the title says which is which.
func EmbeddingOptions(em *embed.Embedding) Options {
	hl := map[string]string{}
	for _, n := range em.Graph.Nodes {
		switch o := em.Origin[n.Name]; {
		case o.LPG != "":
			hl[n.Name] = ColourLPG
		case o.Guard != "":
			hl[n.Name] = ColourGuard
		}
	}
	for _, p := range em.Placements {
		if p.Hardware != "" {
			hl[p.Hardware] = ColourTookOver
		}
	}
	return Options{Highlight: hl, Title: fmt.Sprintf("%s embedded in %s: LPG nodes %s, hardware doing LPG work %s, residual guards %s",
		em.LPG.Name, em.PRG.Name, ColourLPG, ColourTookOver, ColourGuard)}
}
