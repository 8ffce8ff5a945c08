package golang

import "github.com/dragonet-go/nsc/backends"

// Target is the Go fast path as a backends.Target: one file,
// fastpath.go, in package Options.Package.
type Target struct{ Options Options }

var _ backends.Target = Target{}

func (Target) Name() string          { return Name }
func (Target) Needs() backends.Needs { return backends.Needs{} }

func (t Target) Generate(in backends.Input) ([]backends.Artifact, error) {
	src, err := Generate(in.Graph, t.Options)
	if err != nil {
		return nil, err
	}
	return []backends.Artifact{{Name: "fastpath.go", Data: src}}, nil
}
