package fuzz

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRegressions runs every case under testdata/regress (models nsc fuzz
// found a difference on, shrunk) through every check: the LPG alone
// against each embedding, the generated Go, XDP and P4 against the
// interpreter, on the model's frames and the fixed corpus (P4 where the
// backend takes the model: a refusal is not a failure there).
func TestRegressions(t *testing.T) {
	files, err := filepath.Glob("testdata/regress/*.nsc")
	if err != nil || len(files) == 0 {
		t.Fatalf("no regression cases: %v", err)
	}
	var goCases []GoCase
	var xdpCases []XDPCase
	var p4Cases []P4Case
	for _, f := range files {
		m, frames, err := LoadRegression(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Prepare(m, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The case's own frames first, in order: registers and keyed
		// state see them as the run that found it did.
		p.Frames = append(frames, p.Frames...)
		ds, err := p.CheckEmbeddings()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			t.Error(d)
		}
		if em := p.Embeddings["Host"]; em != nil {
			goCases = append(goCases, GoCase{Name: m.Name, Graph: em.Graph, Tables: m.Tables, Frames: p.Frames})
		}
		if em := p.Embeddings["XDP"]; em != nil {
			xdpCases = append(xdpCases, XDPCase{Name: m.Name, Graph: em.Graph, Limits: em.PRG.Limits, Tables: m.Tables, Frames: p.Frames})
		}
		if c, why := P4CaseOf(m, p.Frames); why == "" {
			p4Cases = append(p4Cases, c)
		}
	}
	ds, refused, err := RunP4(p4Cases, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		t.Error(d)
	}
	t.Logf("p4: %d of %d cases compiled and run", len(p4Cases)-len(refused), len(files))
	ds, refused, err = RunGo(t.TempDir(), goCases)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append(ds, refusedDiffs("go", refused)...) {
		t.Error(d)
	}
	if why := xdpUnavailable(); why != "" {
		t.Skipf("xdp: %s", why)
	}
	ds, refused, err = RunXDP(t.TempDir(), xdpCases)
	if err != nil {
		t.Fatal(err)
	}
	// A place, a register or a cut the XDP backend does not generate, by
	// design: a refusal that says so is not a failure.
	for name, why := range refused {
		if strings.Contains(why, "not generated for this target") {
			t.Logf("xdp: %s refused: %s", name, why)
			delete(refused, name)
		}
	}
	for _, d := range append(ds, refusedDiffs("xdp", refused)...) {
		t.Error(d)
	}
}

func refusedDiffs(target string, refused map[string]string) []Diff {
	var out []Diff
	for name, why := range refused {
		out = append(out, Diff{Model: name, Check: target, Want: "compiles", Got: why})
	}
	return out
}
