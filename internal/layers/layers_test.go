package layers

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/dragonet-go/nsc/"

// layers lists nsc's packages from the bottom up, in the pipeline's order
// (docs/architecture.md): the packet IR and the graphs, the language that
// builds them, the interpreter, the embedder, the backends' contract and
// lowering, the runtimes generated code imports, the printers, then what
// uses them. A package may import a package of an earlier layer, or one
// matched by its own pattern ("ejfat/..." among themselves), nothing else:
// siblings in a layer (two printers, lpg and prg) do not import each
// other. A new package goes into the layer it belongs to.
var layers = [][]string{
	{"internal/errlist", "internal/fileout", "internal/udpbatch", "internal/xsk", "internal/layers"},
	{"packet"},
	{"packet/frame", "packet/table"},
	{"internal/pcapio"},
	{"predicate"},
	{"dataflow"},
	{"lpg", "prg"},
	{"prg/search"},
	{"lang/internal/syntax", "models"},
	{"lang"},
	{"sim"},
	{"embed"},
	{"verify"},
	{"backends"},
	{"backends/flow"},
	runtimes,
	{"backends/lower"},
	{"backends/golang", "backends/xdp", "backends/p4", "backends/dot", "backends/wireshark"},
	{"backends/golang/gorun", "backends/p4/p4sim", "backends/golang/internal/..."},
	{"internal/difftest"},
	{"internal/testutil"},
	{"internal/xdptest"},
	{"ejfat/...", "rdma/..."},
	{"fuzz"},
	{"cmd/...", "examples/..."},
}

// runtimes are the packages under backends/ that generated code and
// applications import at run time; the rest of backends/ generates code.
var runtimes = []string{"backends/golang/fastpath", "backends/xdp/xdprun", "backends/p4/tableadd"}

// applications import no code generator, directly or not: they run what
// was generated, through the runtimes. backends/flow is allowed as what
// xdprun reads a program's counters with.
var (
	applications = []string{"ejfat/...", "rdma/..."}
	allowed      = append([]string{"backends/flow"}, runtimes...)
)

// pkg is what go list says of one package: its module-relative path, its
// direct imports and all it depends on, both also module-relative.
type pkg struct {
	Path    string
	Imports []string
	Deps    []string
}

func TestLayers(t *testing.T) {
	pkgs := list(t)
	if len(pkgs) < 50 {
		t.Fatalf("go list found %d packages; expected nsc's", len(pkgs))
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestBackEdgesFound plants back edges into the real import graph and
// checks that each is reported.
func TestBackEdgesFound(t *testing.T) {
	plants := []struct{ from, to, want string }{
		{"packet", "sim", "packet imports sim"},
		{"packet", "packet/table", "packet imports packet/table"},
		{"lpg", "prg", "lpg imports prg"},
		{"backends/golang", "backends/xdp", "backends/golang imports backends/xdp"},
		{"embed", "backends/lower", "embed imports backends/lower"},
		{"ejfat/cp", "backends/xdp", "ejfat/cp depends on backends/xdp"},
		{"ejfat/lbnet", "backends/lower", "ejfat/lbnet depends on backends/lower"},
		{"rdma", "cmd/nsc", "rdma imports cmd/nsc"},
	}
	real := list(t)
	for _, pl := range plants {
		pkgs := slices.Clone(real)
		for i := range pkgs {
			if pkgs[i].Path == pl.from {
				pkgs[i].Imports = append(slices.Clip(pkgs[i].Imports), pl.to)
				pkgs[i].Deps = append(slices.Clip(pkgs[i].Deps), pl.to)
			}
		}
		vs := violations(pkgs)
		if !slices.ContainsFunc(vs, func(v string) bool { return strings.HasPrefix(v, pl.want) }) {
			t.Errorf("%s -> %s planted: want %q among %q", pl.from, pl.to, pl.want, vs)
		}
	}
}

// violations says which packages import one above them, are in no
// layer, or, as applications, depend on a code generator.
func violations(pkgs []pkg) []string {
	var vs []string
	for _, p := range pkgs {
		li, pi := layer(p.Path)
		if li < 0 {
			vs = append(vs, p.Path+" is in no layer: add it to layers in internal/layers")
			continue
		}
		for _, imp := range p.Imports {
			lj, pj := layer(imp)
			if lj > li || lj == li && pj != pi {
				vs = append(vs, p.Path+" imports "+imp+", a package above or beside it")
			}
		}
		if !matchAny(p.Path, applications) {
			continue
		}
		for _, d := range p.Deps {
			if match(d, "backends/...") && !matchAny(d, allowed) {
				vs = append(vs, p.Path+" depends on "+d+", part of the code generators: applications import only their runtimes")
			}
		}
	}
	return vs
}

// layer returns the index of path's layer and of the pattern in it that
// matched, or -1.
func layer(path string) (int, int) {
	for i, l := range layers {
		for j, pat := range l {
			if match(path, pat) {
				return i, j
			}
		}
	}
	return -1, -1
}

func matchAny(path string, pats []string) bool {
	return slices.ContainsFunc(pats, func(pat string) bool { return match(path, pat) })
}

func match(path, pat string) bool {
	if tree, ok := strings.CutSuffix(pat, "/..."); ok {
		return path == tree || strings.HasPrefix(path, tree+"/")
	}
	return path == pat
}

// list runs go list over the module and keeps nsc's packages and imports.
func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Imports,Deps", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath    string
			Imports, Deps []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, pkg{Path: local(p.ImportPath)[0], Imports: local(p.Imports...), Deps: local(p.Deps...)})
	}
	return pkgs
}

// local keeps the paths inside the module, without its prefix.
func local(paths ...string) []string {
	var ps []string
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, module); ok {
			ps = append(ps, rest)
		}
	}
	return ps
}
