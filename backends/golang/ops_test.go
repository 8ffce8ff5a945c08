package golang_test

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/golang/internal/csumfast"
	"github.com/dragonet-go/nsc/backends/golang/internal/opsfast"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// opsPair returns the generated fast path of OpsRx
// (backends/flow/testdata/ops.nsc) and the interpreter on the same graph,
// both with the entries of ops.tables.
func opsPair(t testing.TB) (*opsfast.Pipeline, *sim.Machine) {
	src, err := os.ReadFile("../flow/testdata/ops.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.ModelSource(t, string(src))
	g, _ := m.Graph("OpsRx")
	const script = "../flow/testdata/ops.tables"
	mach, raw := testutil.Interpreter(t, m, g, script)
	ts, err := table.Load(opsfast.Schema, script, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := opsfast.New(ts)
	if err != nil {
		t.Fatal(err)
	}
	return pl, mach
}

// TestOpsRxAgainstInterpreter: OpsRx (every operation and expression form,
// and tables of every shape: range, ternary, lpm, wide exact, key-less)
// against the interpreter, on the crafted frames the XDP backend's test
// uses and 20,000 derived ones.
func TestOpsRxAgainstInterpreter(t *testing.T) {
	pl, mach := opsPair(t)
	seeds := testutil.OpsCorpus(t)
	where := difftest.Compare(t, pl, mach, append(seeds, difftest.Mutate(seeds, 20000, 1)...))
	t.Logf("%d crafted + 20000 derived frames: %v", len(seeds), where)
	for _, n := range []string{"Tern", "Lpm", "Wide", "V6Lpm", "Slots", "NoKeys", "Two"} {
		if mach.Counters().Nodes[n] == 0 {
			t.Errorf("no frame ran through %s", n)
		}
	}
}

func FuzzOpsFastPath(f *testing.F) {
	for _, fr := range testutil.OpsCorpus(f) {
		f.Add(fr)
	}
	pl, m := opsPair(f)
	var buf []byte
	f.Fuzz(func(t *testing.T, frame []byte) {
		if want, got := difftest.Interp(m, frame), difftest.Fast(pl, frame, &buf); want != got {
			t.Fatalf("interpreter %+v, fast path %+v", want, got)
		}
	})
}

// csumPair returns the generated fast path of CsumRx
// (backends/flow/testdata/ops.nsc) and the interpreter on the same graph.
func csumPair(t testing.TB) (*csumfast.Pipeline, *sim.Machine) {
	src, err := os.ReadFile("../flow/testdata/ops.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.ModelSource(t, string(src))
	g, _ := m.Graph("CsumRx")
	mach, _ := testutil.Interpreter(t, m, g, "")
	pl, err := csumfast.New(csumfast.NewTables())
	if err != nil {
		t.Fatal(err)
	}
	return pl, mach
}

// TestCsumRxAgainstInterpreter: checksum patches in their one's-complement
// corners (ops.nsc's CsumRx) against the interpreter.
func TestCsumRxAgainstInterpreter(t *testing.T) {
	pl, mach := csumPair(t)
	seeds := testutil.CsumCorpus(t)
	where := difftest.Compare(t, pl, mach, append(seeds, difftest.Mutate(seeds, 5000, 3)...))
	if where["sink TxQueue"] < len(seeds) {
		t.Errorf("fewer than the %d crafted frames were sent: %v", len(seeds), where)
	}
	for _, n := range []string{"V4", "V6"} {
		if mach.Counters().Nodes[n] == 0 {
			t.Errorf("no frame ran through %s", n)
		}
	}
}

// TestNewRefusesOtherTables: generated code relies on its tables' shape
// (parameters' widths, key kinds), so New refuses a table of the same
// name and another shape.
func TestNewRefusesOtherTables(t *testing.T) {
	ts := opsfast.NewTables()
	for i, tb := range ts {
		spec := *tb.Spec()
		spec.Actions = slices.Clone(spec.Actions)
		for j, a := range spec.Actions {
			if len(a.Params) == 0 {
				continue
			}
			a.Params = slices.Clone(a.Params)
			a.Params[0].Width++
			spec.Actions[j] = a
			other := slices.Clone(ts)
			other[i] = table.New(&spec)
			if _, err := opsfast.New(other); err == nil || !strings.Contains(err.Error(), "action "+fmt.Sprint(j)) {
				t.Errorf("table %s with param %s wider: error %v", spec.Name, a.Params[0].Name, err)
			}
			return
		}
	}
	t.Fatal("no table with a parameter")
}
