package fuzz

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"testing/fstest"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
	"github.com/dragonet-go/nsc/verify"
)

// Load loads a model's source with the shipped library.
func Load(m Model) (*lang.Model, error) {
	fsys := fstest.MapFS{m.Name + ".nsc": {Data: []byte(m.Source)}}
	return lang.Loader{ReadFile: func(n string) ([]byte, error) { return fs.ReadFile(fsys, n) }, Library: models.FS}.Load(m.Name + ".nsc")
}

// Diff is one difference between two runs of the same frame.
type Diff struct {
	Model string
	// Check names the two sides: "lpg/embedded Host", "interp/go", ….
	Check string
	Frame []byte
	Want  string // the reference's outcome
	Got   string
}

func (d Diff) String() string {
	return fmt.Sprintf("%s: %s: frame %x:\n  want %s\n  got  %s", d.Model, d.Check, d.Frame, d.Want, d.Got)
}

// Outcome is where a frame ended: a sink with the bytes, or a drop with
// its reason.
type Outcome = sim.Outcome

// Interp runs one frame through the interpreter.
func Interp(m *sim.Machine, frame []byte) Outcome { return m.Outcome(frame) }

// tables loads the model's table_add script for graph g's schema.
func tables(g *dataflow.Graph, m Model) ([]*table.Table, error) {
	return loadTables(g, m.Name, m.Tables)
}

func loadTables(g *dataflow.Graph, name, script string) ([]*table.Table, error) {
	return table.Load(g.Schema, name+".tables", bytes.NewReader([]byte(script)))
}

// Prepared is a loaded model with its packets and embeddings.
type Prepared struct {
	Model  Model
	LPG    *dataflow.Graph
	Frames [][]byte
	// Embeddings into each of Model.PRGs that embeds (nil where it
	// refused, with the reason in Refused).
	Embeddings map[string]*embed.Embedding
	Refused    map[string]string
}

// Prepare loads m, embeds its LPG into each PRG and makes n frames from
// the embedding into the first PRG (predicate classes, claims, random and
// malformed) and from the corpus of frames every model gets.
func Prepare(m Model, n int, seed uint64) (*Prepared, error) {
	lm, err := Load(m)
	if err != nil {
		return nil, fmt.Errorf("%s: load: %w", m.Name, err)
	}
	g, ok := lm.Graph(m.LPG)
	if !ok {
		return nil, fmt.Errorf("%s: no lpg %s", m.Name, m.LPG)
	}
	p := &Prepared{Model: m, LPG: g, Embeddings: map[string]*embed.Embedding{}, Refused: map[string]string{}}
	for _, name := range m.PRGs {
		pg, ok := lm.Graph(name)
		if !ok {
			return nil, fmt.Errorf("%s: no prg %s", m.Name, name)
		}
		em, err := embed.Embed(g, pg)
		if err != nil {
			p.Refused[name] = err.Error()
			continue
		}
		p.Embeddings[name] = em
	}
	seen := map[string]bool{}
	add := func(f []byte) {
		if !seen[string(f)] {
			seen[string(f)] = true
			p.Frames = append(p.Frames, f)
		}
	}
	for _, f := range Corpus(m) {
		add(f)
	}
	for _, name := range m.PRGs {
		if em := p.Embeddings[name]; em != nil {
			for _, c := range verify.Generate(em, n, seed) {
				if c.Source == "RxQueue" {
					add(c.Frame)
				}
			}
			break
		}
	}
	return p, nil
}

// CheckEmbeddings runs every frame through the LPG alone and through each
// embedding (verify.RunTables, the split device and host where there is
// one) and returns the differences.
func (p *Prepared) CheckEmbeddings() ([]Diff, error) {
	var diffs []Diff
	var cases []verify.Case
	for _, f := range p.Frames {
		cases = append(cases, verify.Case{Source: "RxQueue", Frame: f, Why: "fuzz"})
	}
	for _, name := range slices.Sorted(maps.Keys(p.Embeddings)) {
		em := p.Embeddings[name]
		// Besides the shared frames, those that lack each fact this PRG
		// claims: where a lie would show.
		all := slices.Clone(cases)
		for _, c := range verify.Generate(em, 200, uint64(len(p.Frames))) {
			if c.Claim != "" && c.Source == "RxQueue" {
				all = append(all, c)
			}
		}
		res, err := verify.RunTables(em, func() ([]*table.Table, error) { return tables(em.Graph, p.Model) }, all, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: verify %s: %w", p.Model.Name, name, err)
		}
		if name == p.Model.Liar {
			// Differences are what a lie looks like. Where these frames show
			// it, verify's own packets (no frames given) must show it too.
			if len(res.Mismatches) > 0 {
				own, err := verify.RunTables(em, func() ([]*table.Table, error) { return tables(em.Graph, p.Model) }, verify.Generate(em, 2000, 1), nil)
				if err != nil {
					return nil, fmt.Errorf("%s: verify %s: %w", p.Model.Name, name, err)
				}
				if len(own.Mismatches) == 0 {
					mm := res.Mismatches[0]
					diffs = append(diffs, Diff{Model: p.Model.Name, Check: "liar " + name, Frame: mm.Case.Frame,
						Want: "verify's own packets catch the lie this frame shows", Got: "no mismatch in 2000"})
				}
			}
			continue
		}
		for _, mm := range res.Mismatches {
			diffs = append(diffs, Diff{Model: p.Model.Name, Check: "lpg/embedded " + name, Frame: mm.Case.Frame,
				Want: fmt.Sprint(mm.LPG), Got: fmt.Sprint(mm.Embd)})
		}
	}
	return diffs, nil
}
