package xdprun_test

import (
	"encoding/json"
	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/dragonet-go/nsc/internal/testutil"
)

// A damaged description is refused or read, never a panic; what is read
// can be solved for node runs.
func TestMetaDamaged(t *testing.T) {
	src, err := os.ReadFile("../../flow/testdata/ops.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.ModelSource(t, string(src))
	g, _ := m.Graph("OpsRx")
	p, err := xdp.Generate(g, xdp.Options{Limits: testutil.XDPLimits(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(p.Meta)
	if err != nil {
		t.Fatal(err)
	}
	good, err := xdprun.ParseMeta("ok", raw)
	if err != nil {
		t.Fatal(err)
	}
	if runs := good.Runs(make([]uint64, good.NumCounters)); len(runs) != len(good.Nodes) {
		t.Fatalf("%d runs for %d nodes", len(runs), len(good.Nodes))
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		b := append([]byte(nil), raw...)
		for k := 1 + rnd.IntN(4); k > 0; k-- {
			i := rnd.IntN(len(b))
			b[i] = "0123456789-,:[]{}\"ax"[rnd.IntN(20)]
		}
		if mm, err := xdprun.ParseMeta("x", b); err == nil {
			sum := make([]uint64, mm.NumCounters)
			for i := range sum {
				sum[i] = rnd.Uint64()
			}
			mm.Runs(sum)
			mm.Schema()
		}
	}
	// Not an object at all.
	bad := filepath.Join(t.TempDir(), "x.o")
	os.WriteFile(bad, []byte("not an ELF file"), 0o644)
	if _, err := xdprun.ReadMeta(bad); err == nil {
		t.Error("read a description out of a non-object")
	}
}
