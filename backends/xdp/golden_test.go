package xdp_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/embed"
)

var update = flag.Bool("update", false, "rewrite testdata's XDP programs")

// embedXDP embeds LB version v into the shipped XDP PRG.
func embedXDP(t *testing.T, v string) *embed.Embedding {
	t.Helper()
	m, g, err := ejfat.LPG(v)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := m.Graph("XDP")
	em, err := embed.Embed(g, p)
	if err != nil {
		t.Fatal(err)
	}
	return em
}

// TestGolden fails when a checked-in XDP program (testdata/lb-20XX.c) is
// not what nsc compile writes for its model today; go generate ./...
// rewrites them (review the diff).
func TestGolden(t *testing.T) {
	for _, v := range ejfat.Versions {
		t.Run(v, func(t *testing.T) {
			em := embedXDP(t, v)
			cmd := "nsc compile models/ejfat/" + v + ".nsc --lpg " + ejfat.LPGName(v) + " --prg XDP --target xdp -o DIR"
			arts, err := xdp.Target{Options: xdp.Options{Command: cmd}, Program: v}.Generate(backends.Input{Graph: em.Graph, PRG: em.PRG})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("testdata", arts[0].Name)
			if *update {
				if err := os.WriteFile(file, arts[0].Data, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			have, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(have, arts[0].Data) {
				t.Errorf("backends/xdp/%s is stale: run go generate ./... (or go test ./backends/xdp -run Golden -update)", file)
			}
			if !strings.Contains(string(have), "DO NOT EDIT") {
				t.Errorf("%s lacks the generated-code header", file)
			}
		})
	}
}
