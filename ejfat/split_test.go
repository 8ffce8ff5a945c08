package ejfat

import (
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2026host"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// TestXDPSplitAgainstInterpreter: lb-2026 split between XDPSmall, whose
// maps cannot hold the calendar, and the host (docs/embedding.md,
// "Devices and the host"). The device's part (Embedding.Device) runs as
// XDP in the kernel (BPF_PROG_TEST_RUN); every frame it passes (XDP_PASS)
// goes to the generated Go host part (ejfat/lbfast/lb2026host), which
// runs the whole pipeline on it. Together they must do what the
// interpreter does on the LPG embedded in XDPSmall, frame by frame (where
// it leaves, its bytes) and in the counters: the crafted corpus and
// 100,000 frames derived from it. A frame the device passes must be the
// frame it was given. Without root, clang or libbpf's headers, the
// interpreter runs the device's part instead of the kernel, and the Go
// host part is still tested.
func TestXDPSplitAgainstInterpreter(t *testing.T) {
	const version = "lb-2026"
	m, g, err := LPG(version)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := m.Graph("XDPSmall")
	em, err := embed.Embed(g, p)
	if err != nil {
		t.Fatal(err)
	}
	if em.Device == nil {
		t.Fatal("lb-2026 fits XDPSmall whole: nothing to split")
	}
	script, err := os.ReadFile(xdpTables[version])
	if err != nil {
		t.Fatal(err)
	}
	tables := func() []*table.Table {
		ts, err := Tables(m, xdpTables[version], bytes.NewReader(script))
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	want, err := sim.New(em.Graph, tables())
	if err != nil {
		t.Fatal(err)
	}
	want.SetMaxFrame(xdp.MaxFrame)
	hts, err := table.Load(lb2026host.Schema, xdpTables[version], bytes.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	host, err := lb2026host.New(hts)
	if err != nil {
		t.Fatal(err)
	}

	// The device: the kernel, or the interpreter on its part.
	var device func([]byte) xdptest.Outcome
	var deviceCounters func() sim.Counters
	prog, err := xdp.Generate(em.Device, xdp.Options{Limits: p.Limits})
	if err != nil {
		t.Fatal(err)
	}
	meta := prog.Meta
	if r := splitKernel(t, em, p.Limits, script); r != nil {
		meta = r.Meta
		device = func(f []byte) xdptest.Outcome {
			res, err := r.Run(f)
			if err != nil {
				t.Fatalf("frame %x: %v", f, err)
			}
			o := xdptest.Outcome{Verdict: xdprun.VerdictName(res.Verdict)}
			if res.Verdict != xdprun.VerdictDrop {
				o.Data = hex.EncodeToString(res.Data)
			}
			return o
		}
		deviceCounters = func() sim.Counters {
			c, _, err := r.Counters()
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	} else {
		dm, err := sim.New(em.Device, tables())
		if err != nil {
			t.Fatal(err)
		}
		device = func(f []byte) xdptest.Outcome { o := xdptest.Interp(dm, meta, f); o.Where = ""; return o }
		deviceCounters = dm.Counters
	}
	verdict := map[string]string{}
	for _, s := range meta.Sinks {
		verdict[s.Node] = s.Verdict
	}
	if verdict[embed.PuntNode] != "XDP_PASS" || verdict["ToHost"] != "XDP_PASS" || verdict["TxWire"] != "XDP_TX" {
		t.Fatalf("the device's verdicts: %v", verdict)
	}

	var buf []byte
	hosted := 0
	split := func(f []byte) xdptest.Outcome {
		d := device(f)
		if d.Verdict != "XDP_PASS" {
			return d
		}
		if d.Data != hex.EncodeToString(f) {
			t.Errorf("the device passed frame %x changed: %s", f, d.Data)
		}
		hosted++
		h := difftest.Fast(host, f, &buf)
		if node, ok := strings.CutPrefix(h.Where, "sink "); ok {
			return xdptest.Outcome{Verdict: verdict[node], Data: h.Data}
		}
		return xdptest.Outcome{Verdict: "XDP_DROP"}
	}
	seeds := xdpSeeds(t)
	// The frames XDP runs the graph on: the crafted ones, then 100,000
	// derived ones.
	fits := func(f []byte) bool { return len(f) >= 14 && len(f) <= xdp.MaxFrame }
	var frames [][]byte
	for _, f := range seeds {
		if fits(f) {
			frames = append(frames, f)
		}
	}
	crafted := len(frames)
	for _, f := range difftest.Mutate(seeds, 120000, 7) {
		if fits(f) && len(frames) < crafted+100000 {
			frames = append(frames, f)
		}
	}
	where := difftest.Frames(t, "device+host", frames,
		func(f []byte) (xdptest.Outcome, string) {
			o := xdptest.Interp(want, meta, f)
			w := o.Where
			o.Where = ""
			return o, w
		}, split)

	// Each frame ends once: at the device, or (passed) at the host.
	ends := sim.Counters{Sinks: map[string]uint64{}, Drops: map[sim.DropKey]uint64{}}
	dc, hc := deviceCounters(), golang.Counters(host)
	for k, v := range dc.Sinks {
		if verdict[k] != "XDP_PASS" {
			ends.Sinks[k] += v
		}
	}
	for _, c := range []sim.Counters{dc, hc} {
		for k, v := range c.Drops {
			ends.Drops[k] += v
		}
	}
	for k, v := range hc.Sinks {
		ends.Sinks[k] += v
	}
	wc := want.Counters()
	if diff := cmp.Diff(sim.Counters{Sinks: wc.Sinks, Drops: wc.Drops}, ends); diff != "" {
		t.Errorf("ends differ (-interp +device and host):\n%s", diff)
	}
	// The nodes only the host runs ran as often as in the interpreter.
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
	if dc.Sinks[embed.PuntNode] < 100 || where["sink TxWire"] < 100 {
		t.Errorf("the corpus exercises too little: %d punted, %v", dc.Sinks[embed.PuntNode], where)
	}
	t.Logf("%d crafted + %d derived frames, %d passed to the host (%d punted at the cut): %v", crafted, len(frames)-crafted, hosted, dc.Sinks[embed.PuntNode], where)
}

// splitKernel loads the device's part of em into the kernel with the
// script's entries, or returns nil (the reason logged) where it cannot.
func splitKernel(t *testing.T, em *embed.Embedding, limits map[string]int, script []byte) *xdprun.Runner {
	t.Helper()
	can := false
	if !t.Run("kernel", func(t *testing.T) { xdptest.Require(t); can = true }) || !can {
		return nil
	}
	obj, _ := xdptest.Build(t, em.Device, limits, t.TempDir(), "lb2026small")
	r, err := xdprun.Load(obj)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the device's part in the kernel: the verifier processed %d instructions", r.VerifiedInsns)
	t.Cleanup(r.Close)
	ts, err := r.Tables(xdpTables["lb-2026"], bytes.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTables(ts); err != nil {
		t.Fatal(err)
	}
	return r
}
