package xdp

import (
	"strings"

	"github.com/dragonet-go/nsc/backends"
)

// Target is the XDP program as a backends.Target: PROGRAM.c, PROGRAM the
// LPG's name in lower case (its .o is clang's, Clang). Its limits are the
// PRG's.
type Target struct {
	Options Options
	// Program is the file's name without .c.
	Program string
}

var _ backends.Target = Target{}

func (Target) Name() string          { return Name }
func (Target) Needs() backends.Needs { return backends.Needs{PRG: true} }

func (t Target) Generate(in backends.Input) ([]backends.Artifact, error) {
	opt := t.Options
	opt.Limits = in.Limits()
	p, err := Generate(in.Graph, opt)
	if err != nil {
		return nil, err
	}
	name := t.Program
	if name == "" {
		name = strings.ToLower(in.Graph.Name)
	}
	return []backends.Artifact{{Name: name + ".c", Data: p.C}}, nil
}
