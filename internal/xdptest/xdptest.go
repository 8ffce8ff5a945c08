// Package xdptest holds what the XDP backend's kernel tests share: the
// check that they can run here (root, clang, BPF headers), skipping with
// the reason when not, failing instead when the environment variable CI
// is set; and building a graph's program into a test's directory.
package xdptest

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/sim"
)

// Require skips t (fails it under CI) unless BPF programs can be built and
// loaded here.
func Require(t testing.TB) {
	t.Helper()
	why := ""
	switch {
	case os.Geteuid() != 0:
		why = "loading XDP programs needs root"
	case !hasClang():
		why = "clang is not on PATH"
	case !exists("/usr/include/bpf/bpf_helpers.h"):
		why = "libbpf's headers (libbpf-dev) are missing"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and this test cannot run: %s", why)
	}
	t.Skip(why)
}

func hasClang() bool {
	_, err := exec.LookPath("clang")
	return err == nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Build generates g's XDP program, compiles it into dir and returns the
// object's path and the program.
func Build(t testing.TB, g *dataflow.Graph, limits map[string]int, dir, name string) (string, *xdp.Program) {
	t.Helper()
	if limits == nil {
		limits = testutil.XDPLimits(t, nil)
	}
	prog, err := xdp.Generate(g, xdp.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := xdprun.Build(prog.C, dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return obj, prog
}

// Outcome is where a frame went: the XDP verdict the interpreter's result
// calls for (a sink's, or XDP_DROP) and where, and the bytes that left.
type Outcome struct {
	Verdict string
	Where   string
	Data    string
}

// Interp runs a frame through the interpreter and says what the XDP
// program must do with it: a frame the interpreter did not run, being
// longer than the program's MaxFrame (the machine held to it, Compare),
// the program passes to the kernel untouched.
func Interp(m *sim.Machine, meta *xdprun.Meta, frame []byte) Outcome {
	var out Outcome
	m.Run(frame, func(n *dataflow.Node, data []byte) {
		out = Outcome{Verdict: "a sink without a verdict", Where: "sink " + n.Name, Data: hex.EncodeToString(data)}
		for _, s := range meta.Sinks {
			if s.Node == n.Name {
				out.Verdict = s.Verdict
			}
		}
	})
	k, ok := m.LastDrop()
	switch {
	case !ok || out.Where != "":
	case k.Reason == sim.ReasonOversize:
		out = Outcome{Verdict: "XDP_PASS", Where: fmt.Sprintf("drop %s: %s", k.Node, k.Reason), Data: hex.EncodeToString(frame)}
	default:
		out = Outcome{Verdict: "XDP_DROP", Where: fmt.Sprintf("drop %s: %s", k.Node, k.Reason)}
	}
	return out
}

// EdgeSizes are difftest.EdgeSizes and either side of the program's
// longest frame.
var EdgeSizes = append([]int{xdp.MaxFrame, xdp.MaxFrame + 1}, difftest.EdgeSizes...)

// CompareEdges is Compare on the frames at the edges of length made from
// seeds (difftest.Edges, EdgeSizes); some of them must be passed as
// oversize.
func CompareEdges(t testing.TB, r *xdprun.Runner, m *sim.Machine, seeds [][]byte) map[string]int {
	t.Helper()
	frames := difftest.Edges(seeds, EdgeSizes)
	where := Compare(t, r, m, frames)
	if where["drop "+r.Meta.Graph+": "+sim.ReasonOversize] == 0 {
		t.Errorf("no frame was passed as oversize: %v", where)
	}
	t.Logf("%d frames: %v", len(frames), where)
	return where
}

// Compare runs frames (14 bytes and longer: XDP never sees shorter ones)
// through the loaded program and the interpreter, held to the program's
// MaxFrame, and fails t on differing verdicts, bytes or counters (the
// program's oversize counter is the interpreter's oversize drop). It
// returns the interpreter's outcomes by where they went.
func Compare(t testing.TB, r *xdprun.Runner, m *sim.Machine, frames [][]byte) map[string]int {
	t.Helper()
	m.SetMaxFrame(r.Meta.MaxFrame)
	var long [][]byte
	for _, f := range frames {
		if len(f) >= 14 {
			long = append(long, f)
		}
	}
	where := difftest.Frames(t, "xdp", long,
		func(f []byte) (Outcome, string) {
			o := Interp(m, r.Meta, f)
			where := o.Where
			o.Where = "" // the program does not know the graph's node names
			return o, where
		},
		func(f []byte) Outcome {
			res, err := r.Run(f)
			if err != nil {
				t.Fatalf("frame %x: %v", f, err)
			}
			got := Outcome{Verdict: xdprun.VerdictName(res.Verdict)}
			if res.Verdict != xdprun.VerdictDrop {
				got.Data = hex.EncodeToString(res.Data)
			}
			return got
		})
	got, oversize, err := r.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if oversize > 0 {
		got.Drops[sim.DropKey{Node: r.Meta.Graph, Reason: sim.ReasonOversize}] = oversize
	}
	if diff := cmp.Diff(m.Counters(), got); diff != "" {
		t.Errorf("counters differ (-interp +xdp):\n%s", diff)
	}
	return where
}

// BPFFS mounts a BPF filesystem of the test's own on a temporary
// directory and returns it; unmounting it when the test ends drops
// whatever is pinned there (a pinned link detaches).
func BPFFS(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("bpf", dir, "bpf", 0, ""); err != nil {
		t.Fatalf("mount a BPF filesystem: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}
