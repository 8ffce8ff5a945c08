package golang_test

import (
	"os"
	"testing"

	"github.com/dragonet-go/nsc/backends/golang/internal/popchainfast"
	"github.com/dragonet-go/nsc/backends/golang/internal/udpfast"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/sim"
)

// udpPair returns the generated UDP/IPv4 fast path and the interpreter on
// the same graph.
func udpPair(t testing.TB) (*udpfast.Pipeline, *sim.Machine) {
	g := testutil.Graph(t, "UDPIPv4", "inet/udp.nsc")
	m, err := sim.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := udpfast.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pl, m
}

func TestUDPFastPathAgainstInterpreter(t *testing.T) {
	pl, m := udpPair(t)
	corpus := testutil.UDPCorpus(t)
	frames := append(corpus, difftest.Mutate(corpus, 20000, 1)...)
	where := difftest.Compare(t, pl, m, frames)
	if len(where) < 6 {
		t.Errorf("the corpus reaches only %v", where)
	}
	t.Logf("%d frames: %v", len(frames), where)
}

func FuzzUDPFastPath(f *testing.F) {
	for _, fr := range testutil.UDPCorpus(f) {
		f.Add(fr)
	}
	pl, m := udpPair(f)
	var buf []byte
	f.Fuzz(func(t *testing.T, frame []byte) {
		want := difftest.Interp(m, frame)
		got := difftest.Fast(pl, frame, &buf)
		if want != got {
			t.Fatalf("interpreter %+v, fast path %+v", want, got)
		}
	})
}

// TestPopChainsAgainstInterpreter: the pop chains of
// backends/flow/testdata/popchain.nsc (one move per adjacent chain,
// checksum patches after the move) against the interpreter.
func TestPopChainsAgainstInterpreter(t *testing.T) {
	src, err := os.ReadFile("../flow/testdata/popchain.nsc")
	if err != nil {
		t.Fatal(err)
	}
	g, ok := testutil.ModelSource(t, string(src)).Graph("PopChain")
	if !ok {
		t.Fatal("no lpg PopChain")
	}
	m, err := sim.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := popchainfast.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	seeds := testutil.PopChainCorpus(t)
	where := difftest.Compare(t, pl, m, append(seeds, difftest.Mutate(seeds, 20000, 3)...))
	for _, node := range testutil.PopChainNodes {
		if m.Counters().Nodes[node] == 0 {
			t.Errorf("no frame ran %s: %v", node, where)
		}
	}
}
