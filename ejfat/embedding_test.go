package ejfat_test

import (
	"os"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/lpg"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/verify"
)

// TestEmbeddingAgainstLPG: the backends' differential tests hold each
// generated LB to the interpreter on the embedded graph it was generated
// from, so they cannot see a wrong embedding. This holds that graph (each
// version on every PRG its model runs whole frames on) to the LPG alone,
// on the crafted corpus and frames derived from it, with the reference
// tables: where each frame ends and its bytes.
func TestEmbeddingAgainstLPG(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for _, v := range ejfat.Versions {
		prgs := []string{ejfat.HostPRG}
		if v == "lb-2026" {
			prgs = append(prgs, "XDP", "XDPSmall", "U280", "BMv2", "BMv2Small")
		}
		for _, p := range prgs {
			t.Run(v+"/"+p, func(t *testing.T) {
				m, g, err := ejfat.LPG(v)
				if err != nil {
					t.Fatal(err)
				}
				pg, _ := m.Graph(p)
				em, err := embed.Embed(g, pg)
				if err != nil {
					t.Fatal(err)
				}
				file := map[string]string{"lb-2021": "testdata/seed000.tables", "lb-2025": "testdata/lb-2025.tables", "lb-2026": "testdata/lb-2026.tables"}[v]
				script, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				tables := func() ([]*table.Table, error) { return ejfat.Tables(m, file, strings.NewReader(string(script))) }
				seeds, err := ejfat.Corpus()
				if err != nil {
					t.Fatal(err)
				}
				var cases []verify.Case
				for _, f := range append(seeds, difftest.Mutate(seeds, n, 7)...) {
					cases = append(cases, verify.Case{Source: lpg.RxEntry, Frame: f})
				}
				res, err := verify.RunTables(em, tables, cases, nil)
				if err != nil {
					t.Fatal(err)
				}
				if em.Device != nil && res.Hosted == 0 {
					t.Errorf("no frame went on to the host of the split")
				}
				t.Logf("%d frames, %d to the host, %d mismatches", res.Cases, res.Hosted, len(res.Mismatches))
				for i, mm := range res.Mismatches {
					if i == 3 {
						t.Errorf("... %d mismatches in all", len(res.Mismatches))
						break
					}
					t.Errorf("%s", mm)
				}
			})
		}
	}
}
