package golang

import (
	"flag"
	"fmt"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/dragonet-go/nsc/backends"
)

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

func init() {
	backends.Register(backends.Registration{Name: Name, Generates: "a Go package", Flags: flags})
}

// flags are --package and --profile.
func flags(fs *flag.FlagSet) func(backends.Request) (backends.Job, error) {
	pkg := fs.String("package", "", "Go package name (default: the output directory's name)")
	profile := fs.String("profile", "", "node runs (nsc run --profile) whose most common path is laid out first")
	sink := fs.String("sink", "", "an Rx sink of the PRG (RxSocket): generate the graph from there on, for frames the device hands over")
	return func(r backends.Request) (backends.Job, error) {
		name := *pkg
		if name == "" {
			name = strings.ReplaceAll(path.Base(path.Clean(r.Out)), "-", "")
		}
		if !token.IsIdentifier(name) {
			return backends.Job{}, backends.UsageError(fmt.Sprintf("package name %q is not a Go identifier: give --package", name))
		}
		opt := Options{Package: name, Command: Command(r.Files, r.LPG, r.PRG, filepath.ToSlash(*profile), *sink, r.Out), Sink: *sink}
		if *profile != "" {
			f, err := os.Open(*profile)
			if err != nil {
				return backends.Job{}, err
			}
			defer f.Close()
			if opt.Profile, err = ReadProfile(*profile, f); err != nil {
				return backends.Job{}, err
			}
		}
		return backends.Job{Target: Target{Options: opt}, Inputs: []string{*profile}, Outputs: []string{"fastpath.go"}}, nil
	}
}
