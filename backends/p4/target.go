package p4

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/packet"
)

// Target is the P4 program as a backends.Target: NAME.p4 for
// Options.Arch, and with a table_add script its entries in the program's
// names as NAME.entries. Its limits are the PRG's.
type Target struct {
	Options Options
	// Script is a table_add script for the model (Tables names it in
	// errors); nil: none.
	Script []byte
	Tables string
}

var _ backends.Target = Target{}

func (t Target) Name() string        { return "p4 (" + t.Options.Arch + ")" }
func (Target) Needs() backends.Needs { return backends.Needs{PRG: true} }

func (t Target) Generate(in backends.Input) ([]backends.Artifact, error) {
	opt := t.Options
	opt.Limits = in.Limits()
	if in.PRG != nil {
		opt.PRG = in.PRG.Name
	}
	p, err := Generate(in.Graph, opt)
	if err != nil {
		return nil, err
	}
	arts := []backends.Artifact{{Name: opt.Name + ".p4", Data: p.Source}}
	if t.Script != nil {
		es, err := packet.ParseEntries(t.Tables, bytes.NewReader(t.Script), in.Graph.Schema.TableSpec)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := p.Tables.Entries(&buf, es); err != nil {
			return nil, err
		}
		arts = append(arts, backends.Artifact{Name: opt.Name + ".entries", Data: buf.Bytes()})
	}
	return arts, nil
}

func init() {
	backends.Register(backends.Registration{Name: "p4", Generates: "a P4 program", Device: true, Flags: flags})
}

// flags are --arch and --tables.
func flags(fs *flag.FlagSet) func(backends.Request) (backends.Job, error) {
	arch := fs.String("arch", "", "P4 architecture: "+V1Model+" or "+XSA+" (default: the PRG's, U280 "+XSA+", BMv2 "+V1Model+")")
	tables := fs.String("tables", "", "table_add script to convert to the P4 program's names")
	return func(r backends.Request) (backends.Job, error) {
		if err := archFor(arch, r.PRG); err != nil {
			return backends.Job{}, err
		}
		extra := []string{"--target", "p4", "--arch", *arch}
		if *tables != "" {
			extra = append(extra, "--tables", *tables)
		}
		name := strings.ToLower(r.LPG)
		t := Target{Options: Options{Arch: *arch, Name: name, Command: r.Command(extra...)}, Tables: *tables}
		if *tables != "" {
			var err error
			if t.Script, err = os.ReadFile(*tables); err != nil {
				return backends.Job{}, err
			}
		}
		return backends.Job{Target: t, Inputs: []string{*tables}, Outputs: []string{name + ".p4", name + ".entries"}}, nil
	}
}

// archFor settles the architecture for a PRG: the one its device runs
// (the U280 VitisNet's xsa, BMv2 v1model), so that a program is never made
// for an architecture its device does not run; other PRGs must name one.
func archFor(arch *string, prg string) error {
	var want string
	switch {
	case prg == "U280":
		want = XSA
	case strings.HasPrefix(prg, "BMv2"):
		want = V1Model
	}
	switch {
	case prg == "":
		// Before --arch: the PRG gives the limits, and often the
		// architecture too.
		return backends.UsageError(fmt.Sprintf("--target p4 takes its limits from a PRG: give --prg (BMv2 runs %s, U280 %s; models/ejfat/p4.nsc)", V1Model, XSA))
	case *arch == "" && want == "":
		return backends.UsageError(fmt.Sprintf("--arch is required with --prg %q: %s or %s", prg, V1Model, XSA))
	case *arch == "":
		*arch = want
	case want != "" && *arch != want && (*arch == XSA || *arch == V1Model):
		return backends.UsageError(fmt.Sprintf("--arch %s: %s runs %s", *arch, prg, want))
	}
	return nil
}
