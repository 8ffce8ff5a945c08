package fuzz

import "testing"

// TestGeneratedModelsLoad: every generated model loads, and its LPG
// embeds into the host PRG.
func TestGeneratedModelsLoad(t *testing.T) {
	bad := 0
	for i := 0; i < 300; i++ {
		m := Generate(1, i)
		if _, err := Load(m); err != nil {
			bad++
			if bad < 10 {
				t.Errorf("%s: %v\n%s", m.Name, err, m.Source)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of 300 models do not load", bad)
	}
}

func TestFuzzEmbedQuick(t *testing.T) {
	n := 0
	for i := 0; i < 300; i++ {
		m := Generate(1, i)
		p, err := Prepare(m, 300, 1)
		if err != nil {
			t.Fatal(err)
		}
		for prg, why := range p.Refused {
			t.Logf("%s into %s refused: %s", m.Name, prg, why)
		}
		diffs, err := p.CheckEmbeddings()
		if err != nil {
			t.Fatal(err)
		}
		for j, d := range diffs {
			if j < 2 {
				t.Errorf("%v", d)
			}
		}
		if len(diffs) > 0 {
			n++
			t.Logf("model:\n%s", m.Source)
		}
	}
	t.Logf("%d models differ", n)
}

func TestFuzzGoQuick(t *testing.T) {
	var cases []GoCase
	for i := 0; i < 40; i++ {
		m := Generate(1, i)
		p, err := Prepare(m, 200, 1)
		if err != nil {
			t.Fatal(err)
		}
		em := p.Embeddings["Host"]
		cases = append(cases, GoCase{Name: m.Name, Graph: em.Graph, Tables: m.Tables, Frames: p.Frames})
	}
	diffs, refused, err := RunGo(t.TempDir(), cases)
	if err != nil {
		t.Fatal(err)
	}
	for n, r := range refused {
		t.Logf("%s refused: %s", n, r)
	}
	for i, d := range diffs {
		if i < 5 {
			t.Errorf("%v", d)
		}
	}
	t.Logf("%d diffs", len(diffs))
}

func TestFuzzXDPQuick(t *testing.T) {
	var cases []XDPCase
	for i := 0; i < 40; i++ {
		m := Generate(1, i)
		p, err := Prepare(m, 200, 1)
		if err != nil {
			t.Fatal(err)
		}
		em := p.Embeddings["XDP"]
		cases = append(cases, XDPCase{Name: m.Name, Graph: em.Graph, Limits: em.PRG.Limits, Tables: m.Tables, Frames: p.Frames})
	}
	diffs, refused, err := RunXDP(t.TempDir(), cases)
	if err != nil {
		t.Fatal(err)
	}
	for n, r := range refused {
		t.Logf("%s refused: %s", n, r)
	}
	for i, d := range diffs {
		if i < 5 {
			t.Errorf("%v", d)
		}
	}
	t.Logf("%d diffs", len(diffs))
}
