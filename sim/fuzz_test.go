package sim_test

import (
	"testing"
	"time"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/sim"
)

func total(c sim.Counters) uint64 {
	var n uint64
	for _, v := range c.Sinks {
		n += v
	}
	for _, v := range c.Drops {
		n += v
	}
	return n
}

// FuzzInterpreter runs arbitrary frames through the shipped LPGs: no
// panic, and every frame ends at a sink or a counted drop.
func FuzzInterpreter(f *testing.F) {
	for _, fr := range testutil.UDPCorpus(f) {
		f.Add(fr)
	}
	f.Add([]byte{2, 8, 0xaa}) // an I/P ping
	f.Add([]byte{2, 0x12, 0x34, 0, 1})
	for _, s := range testutil.Segments(testutil.Event{Src: []byte{10, 0, 0, 1}, Data: make([]byte, 300)}, 100, 0) {
		f.Add(s.Frame(f))
	}
	var ms []*sim.Machine
	for _, g := range []*dataflow.Graph{
		udpGraph(f),
		testutil.Graph(f, "IPStack", "dragonet/stack.nsc"),
		testutil.Graph(f, "I82599", "inet/i82599.nsc"),
		testutil.Graph(f, "Reassembler", "ejfat/reassembler.nsc"),
	} {
		m, err := sim.New(g, nil)
		if err != nil {
			f.Fatal(err)
		}
		m.SetClock(func() time.Time { return time.Unix(0, 0) }) // deterministic timeouts
		ms = append(ms, m)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, m := range ms {
			before := total(m.Counters())
			m.Run(frame, func(*dataflow.Node, []byte) {})
			if total(m.Counters()) == before {
				t.Fatalf("%s: frame % x ended nowhere", m.Graph().Name, frame)
			}
		}
	})
}
