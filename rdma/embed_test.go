package rdma_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lpg"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/verify"
)

// TestDevices embeds each responder in the NICs and devices of
// models/rdma (nics.nsc, fpga.nsc, irn-nics.nsc, xdp.nsc): the ICRC check
// pruned where the NIC checks it, what goes to a device, what to the host
// and why; then nsc verify, with the QP and region tables, on synthesized
// packets and on the crafted traffic as it is and with its ICRCs broken,
// finds the honest ones sound and catches each liar, naming its claim.
func TestDevices(t *testing.T) {
	for _, c := range []struct {
		file, lpg, prg string
		sc             func() map[string][]step
		host           map[string]string // LPG node -> a piece of its reason, for nodes on the host
		device         []string          // nodes the device runs
		liar           string            // the claim verify must name ("" for honest)
		rightICRC      bool              // the liar is caught on a frame whose ICRC is right too
	}{
		{file: "rdma/nics.nsc", lpg: "NAAResponder", prg: "RoCENIC", sc: scenarios},
		{file: "rdma/nics.nsc", lpg: "NAAResponder", prg: "LyingNIC", sc: scenarios, liar: "icrc_ok(bth)"},
		{file: "rdma/fpga.nsc", lpg: "NAAResponder", prg: "NAAFPGA", sc: scenarios,
			host:   map[string]string{"RxConnection": "(limit table_size)"},
			device: []string{"RxICRC", "RxLoad", "RxRegion", "RxStore", "RxPlacementFields"}},
		{file: "rdma/fpga.nsc", lpg: "NAAResponder", prg: "NAAFPGASmall", sc: scenarios,
			host:   map[string]string{"RxLoad": "(limit register_entries)", "RxStore": "", "RxConnection": ""},
			device: []string{"RxICRC", "RxSizeOK"}},
		{file: "rdma/irn-nics.nsc", lpg: "IRNResponder", prg: "IRNNIC", sc: irnScenarios,
			device: []string{"RxLoad", "RxAdvance", "RxStore", "RxRegion"}},
		{file: "rdma/irn-nics.nsc", lpg: "IRNResponder", prg: "IRNNICSmall", sc: irnScenarios,
			host:   map[string]string{"RxLoad": "514-bit entries and IRNNICSmall holds at most 256 bits an entry (limit register_bits)", "RxAdvance": ""},
			device: []string{"RxRC", "RxKind"}},
		{file: "rdma/naa.nsc rdma/xdp.nsc", lpg: "NAAResponder", prg: "RDMAXDP", sc: scenarios,
			host:   map[string]string{"RxLoad": "(limit register_entries)", "RxStore": "(limit register_entries)", "RxConnection": ""},
			device: []string{"RxICRC", "RxExtractImm", "RxSizeOK"}},
		{file: "rdma/irn.nsc rdma/xdp.nsc", lpg: "IRNResponder", prg: "RDMAXDP", sc: irnScenarios,
			host:   map[string]string{"RxLoad": "(limit register_entries)", "RxRegion": ""},
			device: []string{"RxICRC", "RxRETH", "RxSizeOK"}},
		{file: "rdma/irn-nics.nsc", lpg: "IRNResponder", prg: "IRNLyingNIC", sc: irnScenarios, liar: "icrc_ok(bth)"},
		{file: "rdma/irn-nics.nsc", lpg: "IRNResponder", prg: "IRNOffsetNIC", sc: irnScenarios, liar: "icrc_ok(bth)", rightICRC: true},
	} {
		t.Run(c.prg, func(t *testing.T) {
			m := testutil.Model(t, strings.Fields(c.file)...)
			l, _ := m.Graph(c.lpg)
			p, _ := m.Graph(c.prg)
			em, err := embed.Embed(l, p)
			if err != nil {
				t.Fatal(err)
			}
			kind := map[string]embed.Placement{}
			for _, pl := range em.Placements {
				kind[pl.Node] = pl
			}
			if pl := kind["RxICRC"]; pl.Kind != embed.Pruned && pl.Kind != embed.Program {
				t.Errorf("RxICRC placed %v (%s), want pruned or in the program", pl.Kind, pl.Reason)
			}
			for n, why := range c.host {
				if pl := kind[n]; pl.Kind != embed.Host || !strings.Contains(pl.Reason, why) {
					t.Errorf("%s placed %v (%s), want host: …%s…", n, pl.Kind, pl.Reason, why)
				}
			}
			for _, n := range c.device {
				if pl := kind[n]; pl.Kind != embed.Program {
					t.Errorf("%s placed %v (%s), want in the program", n, pl.Kind, pl.Reason)
				}
			}
			cases := verify.Generate(em, 300, 26)
			for _, steps := range c.sc() {
				for _, s := range steps {
					f := append([]byte(nil), s.frame...)
					cases = append(cases, verify.Case{Source: lpg.RxEntry, Frame: s.frame})
					f[len(f)-1] ^= 0xff
					cases = append(cases, verify.Case{Source: lpg.RxEntry, Frame: f})
				}
			}
			tables := func() ([]*table.Table, error) {
				return table.Load(m.Schema, "tables", strings.NewReader(tablesText))
			}
			res, err := verify.RunTables(em, tables, cases, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d cases, %d to the host, %d mismatches", res.Cases, res.Hosted, len(res.Mismatches))
			switch {
			case c.liar == "" && len(res.Mismatches) > 0:
				t.Errorf("an honest device: %v", res.Mismatches[0])
			case c.liar != "" && len(res.Mismatches) == 0:
				t.Errorf("the liar was not caught in %d cases", res.Cases)
			case c.liar != "" && !strings.Contains(strings.Join(res.Mismatches[0].Passed, " "), c.liar):
				t.Errorf("the mismatch does not name the claim %s: %v", c.liar, res.Mismatches[0].Passed)
			}
			// Mismatches on frames with a right ICRC, up to the first on a
			// wrong one: after a liar let a bad frame change the QP's
			// state, right frames may differ too (verify's own packets
			// reach a known QP since classes are drawn as parsed frames).
			right := 0
			for _, mm := range res.Mismatches {
				f := mm.Case.Frame
				if len(f) <= 46 || f[12] != 0x08 || binary.LittleEndian.Uint32(f[len(f)-4:]) != packet.ICRC(f, 14, 42, len(f), false) {
					break
				}
				right++
			}
			if c.rightICRC != (right > 0) {
				t.Errorf("%d mismatches on frames with a right ICRC, want some: %v", right, c.rightICRC)
			}
		})
	}
}
