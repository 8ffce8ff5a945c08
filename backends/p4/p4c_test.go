package p4_test

import (
	"path/filepath"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4"
)

// TestP4c compiles the v1model golden programs with p4c's BMv2 back end,
// where it is installed (on PATH, or built by the project's p4-oracle.sh
// into /tmp/p4build): each compiles, and p4c says nothing of it but the
// warning every parser that may reject gets from p4c-bm2-ss. Elsewhere it
// skips; the P4 interpreter (p4sim) holds the programs to nsc's
// interpreter meanwhile.
func TestP4c(t *testing.T) {
	p4c, err := p4.FindP4c()
	if err != nil {
		t.Skip("p4c-bm2-ss is not installed (not packaged for Debian 12; see docs/p4.md)")
	}
	for _, gc := range golden {
		if gc.arch != p4.V1Model {
			continue // VitisNet's compiler is AMD's, licensed with Vivado
		}
		file := filepath.Join("testdata", name(gc.version, gc.arch)+".p4")
		said, err := p4c.Compile(file, filepath.Join(t.TempDir(), "out.json"))
		if err != nil || said != "" {
			t.Errorf("%s: %v\n%s", file, err, said)
		}
	}
}
