package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/ejfat"
)

// toy is a target only this test knows: it lists the graph's F-nodes,
// joined by its --toy-sep, in nodes.txt.
type toy struct{ sep string }

func (toy) Name() string          { return "toy" }
func (toy) Needs() backends.Needs { return backends.Needs{} }

func (t toy) Generate(in backends.Input) ([]backends.Artifact, error) {
	var names []string
	for _, n := range in.Graph.Nodes {
		names = append(names, n.Name)
	}
	return []backends.Artifact{{Name: "nodes.txt", Data: []byte(strings.Join(names, t.sep))}}, nil
}

// A target plugs into nsc compile through the registry alone: its flag,
// help, output files and post-step, with cmd/nsc unchanged.
func TestRegistryToyTarget(t *testing.T) {
	t.Cleanup(backends.Register(backends.Registration{
		Name:      "toy",
		Generates: "a list of nodes",
		Flags: func(fs *flag.FlagSet) func(backends.Request) (backends.Job, error) {
			sep := fs.String("toy-sep", "\n", "between two node names")
			return func(backends.Request) (backends.Job, error) {
				return backends.Job{Target: toy{sep: *sep}, Outputs: []string{"nodes.txt"}}, nil
			}
		},
		Post: func(dir string, arts []backends.Artifact, log io.Writer) error {
			_, err := fmt.Fprintf(log, "toy post-step on %s\n", filepath.Join(dir, arts[0].Name))
			return err
		},
	}))
	out := t.TempDir()
	code, stdout, stderr := nsc(t, "compile", "models/ejfat/lb-2021.nsc", "--lpg", "LB2021", "--prg", ejfat.HostPRG, "--target", "toy", "--toy-sep", ",", "-o", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, em, err := ejfat.Embedding("lb-2021", ejfat.HostPRG)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range em.Graph.Nodes {
		want = append(want, n.Name)
	}
	got, err := os.ReadFile(filepath.Join(out, "nodes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != strings.Join(want, ",") {
		t.Errorf("nodes.txt is %q, want the embedded graph's %d nodes", got, len(want))
	}
	if !strings.Contains(stdout, "toy post-step on "+filepath.Join(out, "nodes.txt")) {
		t.Errorf("the post-step did not run: %s", stdout)
	}
	if code, _, stderr := nsc(t, "compile", "models/ejfat/lb-2021.nsc", "--lpg", "LB2021", "--target", "go", "--toy-sep", ",", "-o", t.TempDir()); code != exitUsage || !strings.Contains(stderr, "--toy-sep is for --target toy") {
		t.Errorf("--toy-sep with --target go: exit %d, %s", code, stderr)
	}
	if code, stdout, _ := nsc(t, "compile", "-h"); code != exitOK || !strings.Contains(stdout, "what to generate: go, p4, toy, xdp") {
		t.Errorf("compile -h does not list the toy target: %s", stdout)
	}
}
