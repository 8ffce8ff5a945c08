package p4_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/p4/p4sim"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2026host"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// TestSplitAgainstInterpreter: lb-2026 split between BMv2Small, whose
// tables cannot hold the calendar, and the host (docs/embedding.md,
// "Devices and the host"). The device's part (Embedding.Device) is
// compiled to v1model P4 and run by the P4 interpreter with the entries
// of the tables it looks up; every frame it sends to the CPU port
// (p4.PuntPort) goes to the generated Go host part
// (ejfat/lbfast/lb2026host), which runs the whole pipeline on it with
// every table. Together they must do what nsc's interpreter does on the
// LPG embedded in BMv2Small, on the crafted corpus and 100,000 frames
// derived from it: the same frames leave with the same bytes, or both
// drop; a punted frame is the frame the device was given.
func TestSplitAgainstInterpreter(t *testing.T) {
	m := testutil.Model(t, "ejfat/lb-2026.nsc")
	l, _ := m.Graph("LB2026")
	p, _ := m.Graph("BMv2Small")
	em, err := embed.Embed(l, p)
	if err != nil {
		t.Fatal(err)
	}
	if em.Device == nil {
		t.Fatal("lb-2026 fits BMv2Small whole: nothing to split")
	}
	prog, err := p4.Generate(em.Device, p4.Options{Arch: p4.V1Model, Name: "lb2026", PRG: p.Name, Limits: p.Limits})
	if err != nil {
		t.Fatal(err)
	}
	// The device holds the entries of the tables it looks up; the host
	// and the interpreter all of them.
	used := map[string]bool{}
	for _, n := range em.Device.Nodes {
		if n.Kind == dataflow.FNode && n.Op.Kind == packet.OpLookup {
			used[m.Schema.Tables[n.Op.Table].Spec.Name] = true
		}
	}
	if used["load_balance_calendar_table"] {
		t.Fatal("the device's part looks up the calendar")
	}
	var mine []packet.TableEntry
	for _, te := range entries(t, m, "lb-2026.tables") {
		if used[te.Table] {
			mine = append(mine, te)
		}
	}
	var lines bytes.Buffer
	if err := prog.Tables.Entries(&lines, mine); err != nil {
		t.Fatal(err)
	}
	parsed, err := p4sim.Parse(string(prog.Source))
	if err != nil {
		t.Fatal(err)
	}
	dev := p4sim.New(parsed, p4.V1Model, loadP4Tables(t, prog, lines.Bytes()))
	script := scriptBytes(t, "lb-2026.tables")
	hts, err := table.Load(lb2026host.Schema, "lb-2026.tables", bytes.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	host, err := lb2026host.New(hts)
	if err != nil {
		t.Fatal(err)
	}
	its, err := table.Load(m.Schema, "lb-2026.tables", bytes.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	want, err := sim.New(em.Graph, its)
	if err != nil {
		t.Fatal(err)
	}

	var buf []byte
	seeds, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	where, punted := deviceThenHost(t, dev, want, append(seeds, difftest.Mutate(seeds, 100000, 7)...),
		func(f []byte) difftest.Outcome { return difftest.Fast(host, f, &buf) })
	wc, hc := want.Counters(), golang.Counters(host)
	for _, n := range em.Graph.Nodes {
		if em.Device.Node(n.Name) == nil && wc.Nodes[n.Name] != hc.Nodes[n.Name] {
			t.Errorf("host node %s: %d runs in the interpreter, %d on the host", n.Name, wc.Nodes[n.Name], hc.Nodes[n.Name])
		}
	}
	for _, n := range []string{"LbCalendar", "LbPopCommon", "L2PopVlan", "LbTxCount"} {
		if hc.Nodes[n] == 0 {
			t.Errorf("no frame took the host path through %s", n)
		}
	}
	if punted < 1000 || where["sink TxWire"] < 100 {
		t.Errorf("the corpus exercises too little: %d punted, %v", punted, where)
	}
	t.Logf("%d crafted + 100000 derived frames, %d punted to the host: %d sent, %d to ToHost", len(seeds), punted, where["sink TxWire"], where["sink ToHost"])
}

// deviceThenHost runs frames through a split's device part (the P4
// program in the test interpreter) and what it punts through host, and
// holds the pair to want: whether each frame left and with which bytes.
// It returns where want sent the frames and how many the device punted
// (unchanged, or the test fails).
func deviceThenHost(t *testing.T, dev *p4sim.Machine, want *sim.Machine, frames [][]byte, host func([]byte) difftest.Outcome) (map[string]int, int) {
	t.Helper()
	type outcome struct {
		Left bool
		Data string
	}
	punted := 0
	where := difftest.Frames(t, "P4+host", frames,
		func(f []byte) (outcome, string) {
			o := difftest.Interp(want, f)
			return outcome{Left: strings.HasPrefix(o.Where, "sink "), Data: o.Data}, o.Where
		},
		func(f []byte) outcome {
			out, err := dev.Run(f)
			switch {
			case err != nil:
				return outcome{Data: "the P4 program stopped: " + err.Error()}
			case out == nil:
				return outcome{}
			case dev.Egress() != p4.PuntPort:
				return outcome{Left: true, Data: hex.EncodeToString(out)}
			}
			punted++
			if !bytes.Equal(out, f) {
				t.Errorf("the device punted frame %x changed: %x", f, out)
			}
			h := host(f)
			return outcome{Left: strings.HasPrefix(h.Where, "sink "), Data: h.Data}
		})
	return where, punted
}

// On the xsa architecture the backend sets no port to the host CPU, so a
// split device's punt is refused, by node.
func TestSplitXSARefused(t *testing.T) {
	m := testutil.Model(t, "ejfat/lb-2026.nsc")
	l, _ := m.Graph("LB2026")
	p, _ := m.Graph("BMv2Small")
	em, err := embed.Embed(l, p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p4.Generate(em.Device, p4.Options{Arch: p4.XSA, Name: "lb2026", PRG: p.Name, Limits: p.Limits})
	if err == nil || !strings.Contains(err.Error(), "node PuntToHost: the punt to the host needs a port to the host CPU; the backend sets one for v1model only (egress port 510)") {
		t.Errorf("got %v", err)
	}
}
