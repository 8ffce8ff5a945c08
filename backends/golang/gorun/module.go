package gorun

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// Path is nsc's module path.
const Path = "github.com/dragonet-go/nsc"

// ErrNoGo is returned when the Go toolchain is not on PATH.
var ErrNoGo = errors.New("the generated Go is built with the Go toolchain, and no go command was found on PATH (install Go 1.26 from https://go.dev/dl, or run the model in the interpreter: nsc sim)")

// Module is where a program built from generated Go gets nsc's runtime
// (packet, the fast-path runtime) from: nsc's source on disk (a replace
// directive) or a released version the go command fetches.
type Module struct {
	Dir     string // the source's root, or ""
	Version string // without Dir: the version to require
}

// FindModule finds nsc's runtime for a program built from generated Go,
// trying in turn:
//   - the source this binary was built from, when it is still on disk (a
//     clone, or the module cache after go install …@version): the
//     generated code and the runtime then come from one source;
//   - the module of the working directory, when it is nsc (a binary
//     built with -trimpath, run in a clone);
//   - the version of nsc this binary was built from, when it is a
//     released one (go fetches it through the module proxy).
func FindModule() (Module, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		// This file is backends/golang/gorun/module.go in the module.
		if root := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(file)))); isNSC(root) {
			return Module{Dir: root}, nil
		}
	}
	if out, err := exec.Command("go", "env", "GOMOD").Output(); err == nil {
		if root := filepath.Dir(strings.TrimSpace(string(out))); isNSC(root) {
			return Module{Dir: root}, nil
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
			if m.Path == Path && m.Version != "" && m.Version != "(devel)" {
				return Module{Version: m.Version}, nil
			}
		}
	}
	return Module{}, fmt.Errorf("the generated Go needs nsc's runtime packages, and neither the source this nsc was built from, nor a released version of it, nor the working directory's module is nsc: run it inside a clone of %s, or install a released nsc", Path)
}

// isNSC reports whether dir is the root of nsc's module source.
func isNSC(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && bytes.HasPrefix(b, []byte("module "+Path+"\n"))
}

// GoMod is the go.mod of a module name that imports nsc's packages.
func (m Module) GoMod(name string) []byte {
	if m.Dir == "" {
		return fmt.Appendf(nil, "module %s\n\ngo 1.26\n\nrequire %s %s\n", name, Path, m.Version)
	}
	return fmt.Appendf(nil, "module %s\n\ngo 1.26\n\nrequire %s v0.0.0\n\nreplace %s => %s\n", name, Path, Path, m.Dir)
}

// GoSum is the go.sum to start from: nsc's own with its source (it
// lists every module nsc's packages need), else none (go fetches and
// checks them).
func (m Module) GoSum() ([]byte, error) {
	if m.Dir == "" {
		return nil, nil
	}
	return os.ReadFile(filepath.Join(m.Dir, "go.sum"))
}

// fingerprint names the runtime a program is built against: the version,
// or a hash of the source's Go files, go.mod and go.sum (a clone's
// source changes under a binary built from it).
func (m Module) fingerprint() (string, error) {
	if m.Dir == "" {
		return "version " + m.Version, nil
	}
	h := sha256.New()
	err := filepath.WalkDir(m.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != m.Dir && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if (strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")) || p == filepath.Join(m.Dir, "go.mod") || p == filepath.Join(m.Dir, "go.sum") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(p[len(m.Dir):]), len(b))
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return "source " + m.Dir + " " + hex.EncodeToString(h.Sum(nil)), nil
}
