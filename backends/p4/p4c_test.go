package p4_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4"
)

// TestP4c compiles the v1model golden programs with p4c's BMv2 back end,
// when it is installed. It is not on this project's machines: p4c is not
// packaged for Debian 12 and its releases come from outside the package
// registries they reach (docs/p4.md says how to install it elsewhere), so
// the test skips; the P4 interpreter (p4sim) holds the programs to nsc's
// interpreter meanwhile.
func TestP4c(t *testing.T) {
	p4c, err := exec.LookPath("p4c-bm2-ss")
	if err != nil {
		t.Skip("p4c-bm2-ss is not installed (not packaged for Debian 12; see docs/p4.md)")
	}
	for _, gc := range golden {
		if gc.arch != p4.V1Model {
			continue // VitisNet's compiler is AMD's, licensed with Vivado
		}
		file := filepath.Join("testdata", name(gc.version, gc.arch)+".p4")
		out := filepath.Join(t.TempDir(), "out.json")
		cmd := exec.Command(p4c, "--std", "p4-16", "-o", out, file)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", file, err, b)
		}
	}
}
