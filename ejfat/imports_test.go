package ejfat_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// runtimes are the packages under backends/ an application may import:
// what generated code and loaded programs run on, and the analysis their
// counters are solved with. The rest of backends/ generates code.
var runtimes = []string{
	"backends/flow",
	"backends/golang/fastpath",
	"backends/p4/tableadd",
	"backends/xdp/xdprun",
}

// TestImportsNoGenerator: the EJFAT application (data planes, control
// plane, runners) imports runtimes, never a code generator; cmd/nsc
// generates and hands it the result.
func TestImportsNoGenerator(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	const mod = "github.com/dragonet-go/nsc/"
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, mod)
		if !ok || !strings.HasPrefix(rel, "backends/") || slices.Contains(runtimes, rel) {
			continue
		}
		t.Errorf("ejfat/... imports %s, which generates code", rel)
	}
}
