package p4_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4/p4sim"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/difftest"
)

// TestEdgesAgainstInterpreter runs the frames at the edges of length
// (difftest.Edges of ejfat.EdgeSeeds: empty to past 64 KiB, every crafted
// frame cut at every byte) through each golden program in the P4 interpreter of
// the P4 interpreter (p4sim) and through nsc's interpreter: every frame leaves with
// the same bytes or is dropped by both. The programs have no longest
// frame of their own (the device's MAC has one, before the pipeline), so
// the interpreter takes frames of any length.
func TestEdgesAgainstInterpreter(t *testing.T) {
	seeds, err := ejfat.EdgeSeeds(difftest.EdgeSizes)
	if err != nil {
		t.Fatal(err)
	}
	frames := difftest.Edges(seeds, difftest.EdgeSizes)
	for _, gc := range golden {
		t.Run(name(gc.version, gc.arch), func(t *testing.T) {
			prog, m, _, err := build(t, "ejfat/"+gc.version+".nsc", gc.lpg, gc.prg, gc.arch)
			if err != nil {
				t.Fatal(err)
			}
			var lines bytes.Buffer
			if err := prog.Tables.Entries(&lines, entries(t, m, gc.tables)); err != nil {
				t.Fatal(err)
			}
			parsed, err := p4sim.Parse(string(prog.Source))
			if err != nil {
				t.Fatal(err)
			}
			run := p4sim.New(parsed, gc.arch, loadP4Tables(t, prog, lines.Bytes()))
			script, err := os.ReadFile(filepath.Join("..", "..", "ejfat", "testdata", gc.tables))
			if err != nil {
				t.Fatal(err)
			}
			mach, err := ejfat.Interpreter(gc.version, gc.prg, gc.tables, bytes.NewReader(script))
			if err != nil {
				t.Fatal(err)
			}
			// An outcome is the hex of the frame out, "dropped" if none.
			where := difftest.Frames(t, "P4", frames,
				func(f []byte) (string, string) {
					out := "dropped"
					mach.Run(f, func(_ *dataflow.Node, data []byte) { out = hex.EncodeToString(data) })
					return out, map[bool]string{true: "dropped", false: "sent"}[out == "dropped"]
				},
				func(f []byte) string {
					got, err := run.Run(f)
					switch {
					case err != nil:
						return "error: " + err.Error()
					case got == nil:
						return "dropped"
					}
					return hex.EncodeToString(got)
				})
			if where["sent"] < 100 {
				t.Errorf("the frames exercise too little: %v", where)
			}
			t.Logf("%d frames: %v", len(frames), where)
		})
	}
}
