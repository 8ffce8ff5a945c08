package golang

import (
	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/sim"
)

// Counters reads a generated pipeline's counters in the interpreter's
// form, so the two compare directly.
func Counters(pl fastpath.Pipeline) sim.Counters {
	c := sim.Counters{Nodes: map[string]uint64{}, Sinks: map[string]uint64{}, Drops: map[sim.DropKey]uint64{}, Counts: map[string]uint64{}}
	pl.Each(func(kind, name, reason string, n uint64) {
		switch kind {
		case fastpath.CountNode:
			c.Nodes[name] = n
		case fastpath.CountSink:
			c.Sinks[name] = n
		case fastpath.CountDrop:
			c.Drops[sim.DropKey{Node: name, Reason: reason}] = n
		case fastpath.CountLabel:
			c.Counts[name] = n
		}
	})
	return c
}
