package golang_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// The ops and pop-chain fast paths are compiled with profiles of their
// test corpora (backends/flow/testdata/*.profile), so that the
// differential tests run the code of a hot path (a header without its
// variable part, an index's hit running the action in place, moves at
// constant offsets) besides the general code. TestCorpusProfiles fails
// when a profile is not the interpreter's node runs on the corpus today;
// -update rewrites them, before TestGeneratedUpToDate reads them.
func TestCorpusProfiles(t *testing.T) {
	for _, tc := range []struct {
		model, lpg, script, profile string
		corpus                      func(testing.TB) [][]byte
	}{
		{"../flow/testdata/ops.nsc", "OpsRx", "../flow/testdata/ops.tables", "../flow/testdata/ops.profile", testutil.OpsCorpus},
		{"../flow/testdata/popchain.nsc", "PopChain", "", "../flow/testdata/popchain.profile", testutil.PopChainCorpus},
	} {
		t.Run(tc.lpg, func(t *testing.T) {
			src, err := os.ReadFile(tc.model)
			if err != nil {
				t.Fatal(err)
			}
			m := testutil.ModelSource(t, string(src))
			g, ok := m.Graph(tc.lpg)
			if !ok {
				t.Fatalf("no lpg %s", tc.lpg)
			}
			mach, _ := testutil.Interpreter(t, m, g, tc.script)
			for _, f := range tc.corpus(t) {
				mach.Run(f, func(*dataflow.Node, []byte) {})
			}
			var got bytes.Buffer
			if _, err := golang.Profile(mach.Counters().Nodes).WriteTo(&got); err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(tc.profile, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("%s is stale: run go generate ./... (-have +want):\n%s", tc.profile, diff)
			}
		})
	}
}
