package rdma_test

import (
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lpg"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/verify"
)

// TestEmbedICRC: behind a RoCE NIC that checks the ICRC, the responder's
// ICRC check is pruned, and nsc verify finds the embedding sound; behind a
// NIC that claims the check and does not make it, verify catches the
// claim on packets with a bad ICRC for a known QP.
func TestEmbedICRC(t *testing.T) {
	m := testutil.Model(t, "rdma/nics.nsc")
	resp, _ := m.Graph("NAAResponder")
	tables := func() ([]*packet.Table, error) {
		return packet.LoadTables(m.Schema, "tables", strings.NewReader(tablesText))
	}
	for _, c := range []struct {
		prg  string
		liar bool
	}{{"RoCENIC", false}, {"LyingNIC", true}} {
		p, _ := m.Graph(c.prg)
		em, err := embed.Embed(resp, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, pl := range em.Placements {
			if pl.Node == "RxICRC" && pl.Kind != embed.Pruned {
				t.Errorf("%s: RxICRC placed %+v, want pruned", c.prg, pl)
			}
		}
		// The synthesized packets, and the crafted traffic (known QPs)
		// with its ICRCs broken.
		cases := verify.Generate(em, 500, 26)
		for _, steps := range scenarios() {
			for _, s := range steps {
				f := append([]byte(nil), s.frame...)
				f[len(f)-1] ^= 0xff
				cases = append(cases, verify.Case{Source: lpg.RxEntry, Frame: f})
			}
		}
		res, err := verify.RunTables(em, tables, cases, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Mismatches) > 0; got != c.liar {
			t.Errorf("%s: %d mismatches of %d cases, want some: %v", c.prg, len(res.Mismatches), res.Cases, c.liar)
		}
		if c.liar && len(res.Mismatches) > 0 && !strings.Contains(strings.Join(res.Mismatches[0].Passed, " "), "icrc_ok(bth)") {
			t.Errorf("%s: the mismatch does not name the claim: %v", c.prg, res.Mismatches[0].Passed)
		}
	}
}
