package lang_test

import (
	"io/fs"
	"testing"

	"github.com/dragonet-go/nsc/models"
)

// FuzzLoad feeds arbitrary text to the loader as a model file (the shipped
// library behind it). Nothing may panic; a graph that loads must also give
// every port a predicate. The seed corpus in testdata/fuzz/FuzzLoad holds
// broken variants of the shipped models, and inputs that nest too deep or
// run long (operators, chains, unclosed brackets).
func FuzzLoad(f *testing.F) {
	err := fs.WalkDir(models.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			src, _ := fs.ReadFile(models.FS, p)
			f.Add(string(src))
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range errorCases {
		f.Add(c.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		m, err := load(map[string]string{"main.nsc": src})
		if err != nil {
			return
		}
		for _, g := range m.Graphs {
			ps := g.Predicates()
			for _, n := range g.Nodes {
				_ = ps.Reaching(n)
			}
		}
	})
}
