package rdma_test

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/p4/p4sim"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/rdma"
	"github.com/dragonet-go/nsc/sim"
)

// TestP4Split: each responder on BMv2RoCE (models/rdma/p4.nsc), a P4
// pipeline behind a RoCE core that checks the ICRC. The device's part is
// compiled to v1model P4 and run in the P4 interpreter (p4sim) on every
// frame the core lets through; nsc's interpreter runs the responder
// embedded in BMv2RoCE, state carried across. On the crafted traffic,
// the same with each ICRC broken, and 20,000 frames derived from it (half
// with the ICRC made right again), frame by frame: a frame the
// interpreter drops in the core (bad ICRC) is not the program's; one it
// drops in the program's part the program drops, counted under the same
// reason; one that reaches the host (the QP register on) the program
// hands the CPU port unchanged.
func TestP4Split(t *testing.T) {
	for _, c := range []struct {
		file, lpg string
		sc        func() map[string][]step
	}{
		{"rdma/naa.nsc", "NAAResponder", scenarios},
		{"rdma/irn.nsc", "IRNResponder", irnScenarios},
	} {
		t.Run(c.lpg, func(t *testing.T) {
			m := testutil.ModelSource(t, "include \""+c.file+"\"\ninclude \"rdma/p4.nsc\"\n")
			l, _ := m.Graph(c.lpg)
			p, _ := m.Graph("BMv2RoCE")
			em, err := embed.Embed(l, p)
			if err != nil {
				t.Fatal(err)
			}
			if em.Device == nil || !em.Device.Node("RxICRC").Hardware || em.Device.Node("RxLoad") != nil {
				t.Fatal("want the ICRC check in the core and the QP register on the host")
			}
			prog, err := p4.Generate(em.Device, p4.Options{Arch: p4.V1Model, Name: strings.ToLower(c.lpg), PRG: p.Name, Limits: p.Limits})
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := p4sim.Parse(string(prog.Source))
			if err != nil {
				t.Fatal(err)
			}
			run := p4sim.New(parsed, p4.V1Model, map[string]*table.Table{})
			labels := p4sim.CounterLabels(prog.Source)
			want, err := sim.New(em.Graph, splitTables(t, m.Schema))
			if err != nil {
				t.Fatal(err)
			}
			// The core alone: the frames it drops do not reach the program.
			core, err := sim.New(p, nil)
			if err != nil {
				t.Fatal(err)
			}

			var seeds [][]byte
			sc := c.sc()
			for _, name := range slices.Sorted(maps.Keys(sc)) {
				for _, s := range sc[name] {
					seeds = append(seeds, s.frame)
				}
			}
			w := withRETH(write(qpn, rdma.WriteOnly, ipsn, fill(1024, 1)), regionBase, rkey, 1024)
			seeds = append(seeds, frame(w), rdma.AppendFrame(nil, host6, naa6, w))
			frames := difftest.ICRCTraffic(seeds, 20000, 27, func([]byte) bool { return true })

			// An outcome: "core" (dropped before the program), "drop REASON",
			// or "host" (punted unchanged).
			where := difftest.Frames(t, "P4", frames,
				func(f []byte) (string, string) {
					o := difftest.Interp(want, bytes.Clone(f))
					k, dropped := want.LastDrop()
					switch {
					case dropped && p.Node(k.Node) != nil:
						return "core", "core"
					case dropped && (em.Device.Node(k.Node) != nil || strings.Contains(k.Node, ".")): // a node, or its unconnected port
						return "drop " + k.Reason, "program drop " + k.Reason
					}
					return "host", "host " + o.Where
				},
				func(f []byte) string {
					if o := difftest.Interp(core, bytes.Clone(f)); strings.HasPrefix(o.Where, "drop ") {
						return "core"
					}
					before := run.Counts()
					out, err := run.Run(f)
					switch {
					case err != nil:
						return "stopped: " + err.Error()
					case out == nil:
						for ctr, n := range run.Counts() {
							if n > before[ctr] {
								return "drop " + labels[ctr]
							}
						}
						return "drop uncounted"
					case run.Egress() != p4.PuntPort || !bytes.Equal(out, f):
						return "sent or changed"
					}
					return "host"
				})
			program, host := map[string]int{}, 0
			for k, n := range where {
				if r, ok := strings.CutPrefix(k, "program drop "); ok {
					program[r] += n
				}
				if strings.HasPrefix(k, "host ") {
					host += n
				}
			}
			if where["core"] < len(seeds) || len(program) < 3 || host < 1000 {
				t.Errorf("the traffic exercises too little: %v", where)
			}
			t.Logf("%d frames: %v", len(frames), where)
		})
	}
}
