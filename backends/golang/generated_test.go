package golang_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lang"
)

var update = flag.Bool("update", false, "rewrite the checked-in generated packages")

// generated lists the fast paths checked into the repository; file (one,
// or several separated by spaces, loaded together) is relative to models/
// unless it is a test model (testdata/), dir and profile to the
// repository root.
var generated = []struct {
	file, lpg, prg, dir, profile string
	sink                         string // Options.Sink
}{
	{"inet/udp.nsc", "UDPIPv4", "", "backends/golang/internal/udpfast", "", ""},
	{"backends/flow/testdata/popchain.nsc", "PopChain", "", "backends/golang/internal/popchainfast", "backends/flow/testdata/popchain.profile", ""},
	{"backends/flow/testdata/ops.nsc", "OpsRx", "", "backends/golang/internal/opsfast", "backends/flow/testdata/ops.profile", ""},
	{"backends/flow/testdata/ops.nsc", "CsumRx", "", "backends/golang/internal/csumfast", "", ""},
	{"backends/flow/testdata/popcount.nsc", "PopCountRx", "", "backends/golang/internal/popcountfast", "", ""},
	{"backends/flow/testdata/placepush.nsc", "PlacePush", "", "backends/golang/internal/placepushfast", "", ""},
	{"ejfat/reassembler.nsc", "Reassembler", "", "ejfat/reasmfast", "", ""},
	// The reassembler behind a receiver's sockets, from their sink on
	// (ejfat/recvnet's Model).
	{"ejfat/reassembler.nsc ejfat/hosts.nsc", "Reassembler", "LinuxUDPRecv", "ejfat/reasmsock", "", "RxSocket"},
	{"rdma/naa.nsc", "NAAResponder", "", "rdma/naafast", "", ""},
	{"rdma/naa.nsc", "NAAAck", "", "rdma/naaackfast", "", ""},
	{"rdma/irn.nsc", "IRNResponder", "", "rdma/irnfast", "", ""},
	{"ejfat/lb-2021.nsc", "LB2021", "HostRaw", "ejfat/lbfast/lb2021", "ejfat/lbfast/testdata/lb-2021.profile", ""},
	{"ejfat/lb-2025.nsc", "LB2025", "HostRaw", "ejfat/lbfast/lb2025", "ejfat/lbfast/testdata/lb-2025.profile", ""},
	{"ejfat/lb-2026.nsc", "LB2026", "HostRaw", "ejfat/lbfast/lb2026", "ejfat/lbfast/testdata/lb-2026.profile", ""},
	{"ejfat/lb-2021.nsc", "LB2021", "LinuxUDP", "ejfat/lbfast/lb2021udp", "ejfat/lbfast/testdata/lb-2021-udp.profile", ""},
	{"ejfat/lb-2025.nsc", "LB2025", "LinuxUDP", "ejfat/lbfast/lb2025udp", "ejfat/lbfast/testdata/lb-2025-udp.profile", ""},
	{"ejfat/lb-2026.nsc", "LB2026", "LinuxUDP", "ejfat/lbfast/lb2026udp", "ejfat/lbfast/testdata/lb-2026-udp.profile", ""},
	// The host part of lb-2026 split on XDPSmall (ejfat/split_test.go),
	// also the one on BMv2Small (backends/p4/split_test.go; cmd/nsc's
	// TestCompileP4Split holds the two the same).
	{"ejfat/lb-2026.nsc", "LB2026", "XDPSmall", "ejfat/lbfast/lb2026host", "", ""},
	// The host parts of the RDMA responders split on RDMAXDP
	// (rdma/split_test.go).
	{"rdma/naa.nsc rdma/xdp.nsc", "NAAResponder", "RDMAXDP", "rdma/naaxdphost", "", ""},
	{"rdma/irn.nsc rdma/xdp.nsc", "IRNResponder", "RDMAXDP", "rdma/irnxdphost", "", ""},
}

// TestGeneratedUpToDate fails when a checked-in fast path is not what
// nsc compile writes for its model today (go test -run UpToDate -update
// rewrites them).
func TestGeneratedUpToDate(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, gp := range generated {
		t.Run(gp.dir, func(t *testing.T) {
			files := []string{gp.file}
			var m *lang.Model
			if strings.Contains(gp.file, "testdata/") {
				src, err := os.ReadFile(filepath.Join(root, gp.file))
				if err != nil {
					t.Fatal(err)
				}
				m = testutil.ModelSource(t, string(src))
			} else {
				files = strings.Fields(gp.file)
				m = testutil.Model(t, files...)
				for i, f := range files {
					files[i] = "models/" + f
				}
			}
			g, ok := m.Graph(gp.lpg)
			if !ok {
				t.Fatalf("no lpg %s", gp.lpg)
			}
			if gp.prg != "" {
				p, _ := m.Graph(gp.prg)
				em, err := embed.Embed(g, p)
				if err != nil {
					t.Fatal(err)
				}
				g = em.Graph
			}
			var prof golang.Profile
			if gp.profile != "" {
				f, err := os.Open(filepath.Join(root, gp.profile))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if prof, err = golang.ReadProfile(gp.profile, f); err != nil {
					t.Fatal(err)
				}
			}
			src := generate(t, g, golang.Options{Profile: prof, Sink: gp.sink}, golang.Command(files, gp.lpg, gp.prg, gp.profile, gp.sink, gp.dir), gp.dir)
			out := filepath.Join(root, gp.dir, "fastpath.go")
			if *update {
				if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(out, src, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			have, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(have, src) {
				t.Errorf("%s is stale: run go generate ./... (or %s)", out, golang.Command(files, gp.lpg, gp.prg, gp.profile, gp.sink, gp.dir))
			}
		})
	}
}

func generate(t *testing.T, g *dataflow.Graph, opt golang.Options, command, dir string) []byte {
	t.Helper()
	opt.Package, opt.Command = strings.ReplaceAll(filepath.Base(dir), "-", ""), command
	src, err := golang.Generate(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(src, []byte("// Code generated by nsc compile")) || !bytes.Contains(src, []byte("DO NOT EDIT.")) {
		t.Error("generated code lacks the generated-code header")
	}
	return src
}
