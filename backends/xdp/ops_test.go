package xdp_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/sim"
)

// loadOps loads the shared ops test model.
func loadOps(t testing.TB) *lang.Model {
	t.Helper()
	src, err := os.ReadFile("../flow/testdata/ops.nsc")
	if err != nil {
		t.Fatal(err)
	}
	return testutil.ModelSource(t, string(src))
}

// pair builds graph g's XDP program, loads it with the entries of a table
// script (none if ""), and makes the interpreter on g with the same.
func pair(t *testing.T, m *lang.Model, g *dataflow.Graph, script string) (*xdprun.Runner, *sim.Machine) {
	t.Helper()
	xdptest.Require(t)
	obj, _ := xdptest.Build(t, g, nil, t.TempDir(), g.Name)
	r, err := xdprun.Load(obj)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	mach, raw := testutil.Interpreter(t, m, g, script)
	ts, err := r.Tables(script, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTables(ts); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: the verifier processed %d instructions", g.Name, r.VerifiedInsns)
	return r, mach
}

// TestOpsRxAgainstInterpreter: OpsRx (every operation and expression form
// the backend compiles) in the kernel against the interpreter, on crafted
// frames and 20,000 derived ones.
func TestOpsRxAgainstInterpreter(t *testing.T) {
	m := loadOps(t)
	g, _ := m.Graph("OpsRx")
	r, mach := pair(t, m, g, "../flow/testdata/ops.tables")
	seeds := testutil.OpsCorpus(t)
	where := xdptest.Compare(t, r, mach, append(seeds, difftest.Mutate(seeds, 20000, 1)...))
	t.Logf("%d crafted + 20000 derived frames: %v", len(seeds), where)
	c := mach.Counters()
	for _, n := range []string{"Wire", "PopV4", "Vlan", "Rewrite", "Fiddle", "Recompute", "Echo6Pop", "Echo6Set", "PopVlan", "V6UdpSum", "NotA", "Never"} {
		if c.Nodes[n] == 0 {
			t.Errorf("no frame ran through %s", n)
		}
	}
	for _, site := range []sim.DropKey{{Node: "Wire", Reason: "undecided"}, {Node: "Out.lost", Reason: "unconnected"}, {Node: "Wire", Reason: "malformed"}} {
		if c.Drops[site] == 0 {
			t.Errorf("no frame ended at %v", site)
		}
	}
}

// TestOpsTxAgainstInterpreter: OpsTx pushes three headers in front of a
// payload and computes their checksums.
func TestOpsTxAgainstInterpreter(t *testing.T) {
	m := loadOps(t)
	g, _ := m.Graph("OpsTx")
	r, mach := pair(t, m, g, "")
	rnd := rand.New(rand.NewPCG(9, 9))
	var payloads [][]byte
	for n := 14; n < 600; n += 1 + rnd.IntN(7) {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rnd.UintN(256))
		}
		payloads = append(payloads, p)
	}
	where := xdptest.Compare(t, r, mach, payloads)
	if where["sink TxQueue"] != len(payloads) {
		t.Errorf("not every payload was sent: %v", where)
	}
}

// TestUDPIPv4 compiles the shipped UDP/IPv4 stack's receive path (its
// first source; steers are XDP_PASS) and holds it to the interpreter.
func TestUDPIPv4(t *testing.T) {
	m := testutil.Model(t, "inet/udp.nsc")
	g, _ := m.Graph("UDPIPv4")
	r, mach := pair(t, m, g, "")
	seeds := testutil.UDPCorpus(t)
	where := xdptest.Compare(t, r, mach, append(seeds, difftest.Mutate(seeds, 10000, 2)...))
	t.Logf("%v", where)
}

// TestCsumRxAgainstInterpreter: checksum patches in their one's-complement
// corners (ops.nsc's CsumRx) in the kernel against the interpreter.
func TestCsumRxAgainstInterpreter(t *testing.T) {
	m := loadOps(t)
	g, _ := m.Graph("CsumRx")
	r, mach := pair(t, m, g, "")
	seeds := testutil.CsumCorpus(t)
	where := xdptest.Compare(t, r, mach, append(seeds, difftest.Mutate(seeds, 5000, 3)...))
	if where["sink TxQueue"] < len(seeds) {
		t.Errorf("fewer than the %d crafted frames were sent: %v", len(seeds), where)
	}
	for _, n := range []string{"V4", "V6"} {
		if mach.Counters().Nodes[n] == 0 {
			t.Errorf("no frame ran through %s", n)
		}
	}
}
