package fuzz

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/sim"
)

// XDPCase is one embedding into an XDP PRG to compile, load and run in
// the kernel (BPF_PROG_TEST_RUN).
type XDPCase struct {
	Name  string
	Graph *dataflow.Graph
	// Ref is the graph the interpreter runs (nil: Graph).
	Ref    *dataflow.Graph
	Limits map[string]int
	Tables string
	Frames [][]byte
}

// RunXDP compiles each case with clang, loads it and runs its frames
// (those of 14 bytes and more: no driver hands XDP a shorter one) in the
// kernel, and compares verdicts and bytes with the interpreter on the
// same graph held to the program's longest frame. A case the generator
// refuses is reported in refused; an error means the kernel or clang
// could not be used at all.
func RunXDP(dir string, cases []XDPCase) (diffs []Diff, refused map[string]string, err error) {
	refused = map[string]string{}
	for i, c := range cases {
		prog, err := xdp.Generate(c.Graph, xdp.Options{Limits: c.Limits})
		if err != nil {
			refused[c.Name] = err.Error()
			continue
		}
		src := filepath.Join(dir, fmt.Sprintf("x%d.c", i))
		if err := os.WriteFile(src, prog.C, 0o644); err != nil {
			return nil, nil, err
		}
		obj := src[:len(src)-2] + ".o"
		if err := xdprun.Clang(src, obj); err != nil {
			diffs = append(diffs, Diff{Model: c.Name, Check: "xdp clang", Want: "compiles", Got: err.Error()})
			continue
		}
		ds, err := runXDP(obj, c)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		diffs = append(diffs, ds...)
	}
	return diffs, refused, nil
}

func runXDP(obj string, c XDPCase) ([]Diff, error) {
	r, err := xdprun.Load(obj)
	if err != nil {
		// The verifier's refusal is a finding; anything else (no
		// privileges) is the caller's to report.
		if os.Geteuid() == 0 {
			return []Diff{{Model: c.Name, Check: "xdp load", Want: "loads", Got: err.Error()}}, nil
		}
		return nil, err
	}
	defer r.Close()
	ts, err := r.Tables(c.Name+".tables", bytes.NewReader([]byte(c.Tables)))
	if err != nil {
		return nil, err
	}
	if err := r.SetTables(ts); err != nil {
		return nil, err
	}
	ref := c.Graph
	if c.Ref != nil {
		ref = c.Ref
	}
	if ts, err = loadTables(ref, c.Name, c.Tables); err != nil {
		return nil, err
	}
	m, err := sim.New(ref, ts)
	if err != nil {
		return nil, err
	}
	m.SetMaxFrame(r.Meta.MaxFrame)
	var diffs []Diff
	short, err := tooShort(r)
	if err != nil {
		return nil, err
	}
	for _, f := range c.Frames {
		if len(f) < 14 {
			continue
		}
		want := xdpWant(m, r.Meta, f)
		res, err := r.Run(f)
		if err != nil {
			return nil, err
		}
		got := xdprun.VerdictName(res.Verdict)
		if res.Verdict != xdprun.VerdictDrop {
			got += " " + hex.EncodeToString(res.Data)
		}
		before := short
		if short, err = tooShort(r); err != nil {
			return nil, err
		}
		// The program's documented drop of a frame a pop would leave
		// shorter than an Ethernet header (bpf_xdp_adjust_head keeps
		// ETH_HLEN bytes, docs/xdp.md), even where a later push would
		// have made it long again (seed 20261129, model 5947), is not a
		// difference.
		if want == got || got == "XDP_DROP" && short > before {
			continue
		}
		diffs = append(diffs, Diff{Model: c.Name, Check: "interp/xdp", Frame: f, Want: want, Got: got})
	}
	return diffs, nil
}

// tooShort is how many frames the program dropped as too short for XDP.
func tooShort(r *xdprun.Runner) (uint64, error) {
	c, _, err := r.Counters()
	var n uint64
	for k, v := range c.Drops {
		if k.Reason == xdp.TooShort {
			n += v
		}
	}
	return n, err
}

// xdpWant is the verdict (and bytes) the interpreter's outcome calls for:
// a sink's verdict, XDP_DROP for a drop, XDP_PASS with the frame as it
// came for one longer than the program runs.
func xdpWant(m *sim.Machine, meta *xdprun.Meta, frame []byte) string {
	o := Interp(m, frame)
	if k, ok := m.LastDrop(); ok && strings.HasPrefix(o.Where, "drop ") {
		if k.Reason == sim.ReasonOversize {
			return "XDP_PASS " + hex.EncodeToString(frame)
		}
		return "XDP_DROP"
	}
	for _, s := range meta.Sinks {
		if "sink "+s.Node == o.Where {
			return s.Verdict + " " + o.Data
		}
	}
	return "a sink without a verdict: " + o.String()
}

// xdpUnavailable says why XDP programs cannot be built and run here, or
// "" when they can.
func xdpUnavailable() string {
	if os.Geteuid() != 0 {
		return "loading a program needs root"
	}
	if _, err := exec.LookPath("clang"); err != nil {
		return "no clang"
	}
	return ""
}
