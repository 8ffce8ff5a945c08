package xdp

import (
	"flag"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/internal/fileout"
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

func init() {
	backends.Register(backends.Registration{Name: Name, Generates: "an XDP program", Device: true, Flags: flags, Post: clang})
}

// flags are none of its own: PROGRAM is the LPG's name.
func flags(*flag.FlagSet) func(backends.Request) (backends.Job, error) {
	return func(r backends.Request) (backends.Job, error) {
		name := strings.ToLower(r.LPG)
		t := Target{Options: Options{Command: r.Command("--target", Name)}, Program: name}
		return backends.Job{Target: t, Outputs: []string{name + ".c", name + ".o"}}, nil
	}
}

// clang compiles the program's C into its .o beside it, when clang is
// installed.
func clang(dir string, arts []backends.Artifact, log io.Writer) error {
	src := filepath.Join(dir, arts[0].Name)
	if _, err := exec.LookPath("clang"); err != nil {
		fmt.Fprintf(log, "clang is not on PATH: compile it with clang -O2 -g -target bpf -c %s\n", src)
		return nil
	}
	obj := strings.TrimSuffix(src, ".c") + ".o"
	o, err := fileout.Create(obj) // all or nothing: clang writes the temporary file
	if err != nil {
		return err
	}
	defer o.Abort()
	if err := xdprun.Clang(src, o.TempName()); err != nil {
		return err
	}
	if err := o.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s: run it with nsc xdp run --obj %s --tables FILE --in in.pcap --out out.pcap\n", obj, obj)
	return nil
}
