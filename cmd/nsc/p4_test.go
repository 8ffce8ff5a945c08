package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withoutRegenerate drops the header line that names the command, which
// differs between the CLI's output directory and the golden test's.
func withoutRegenerate(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("// To regenerate: ")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// nsc compile --target p4 writes the program and, with --tables, the
// entries: the same as backends/p4's golden files (which a person
// reviewed and its tests hold to the interpreter).
func TestCompileP4(t *testing.T) {
	for _, c := range []struct{ version, lpg, prg, arch string }{
		{"lb-2025", "LB2025", "U280", "xsa"},
		{"lb-2026", "LB2026", "BMv2", "v1model"},
	} {
		dir := t.TempDir()
		code, out, stderr := nsc(t, "compile", "models/ejfat/"+c.version+".nsc", "--lpg", c.lpg, "--prg", c.prg,
			"--target", "p4", "--arch", c.arch, "--tables", "ejfat/testdata/"+c.version+".tables", "-o", dir)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", c.version, code, stderr)
		}
		base := strings.ToLower(c.lpg)
		for _, want := range []string{"wrote " + filepath.Join(dir, base+".p4"), "wrote " + filepath.Join(dir, base+".entries")} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		for ext, golden := range map[string]string{".p4": ".p4", ".entries": ".entries"} {
			got, err := os.ReadFile(filepath.Join(dir, base+ext))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("..", "..", "backends", "p4", "testdata", c.version+"-"+c.arch+golden))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(withoutRegenerate(got), withoutRegenerate(want)) {
				t.Errorf("%s%s differs from the golden file", c.version, ext)
			}
			if ext == ".p4" && !bytes.Contains(got, []byte("// To regenerate: nsc compile models/ejfat/"+c.version+".nsc --lpg "+c.lpg+" --prg "+c.prg+" --target p4 --arch "+c.arch+" --tables ejfat/testdata/")) {
				t.Errorf("the header does not say how to regenerate:\n%s", got[:300])
			}
		}
	}
}

func TestCompileP4Errors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"compile", "models/ejfat/lb-2025.nsc", "--lpg", "LB2025", "--target", "go", "--tables", "x.tables", "-o", dir}, exitUsage, "--tables is for --target p4"},
		{[]string{"compile", "models/ejfat/lb-2025.nsc", "--lpg", "LB2025", "--prg", "U280", "--target", "p4", "--arch", "tofino", "-o", dir}, exitModel, `unknown architecture "tofino"`},
		{[]string{"compile", "models/rdma/fpga.nsc", "--lpg", "NAAResponder", "--prg", "NAAFPGA", "--target", "p4", "--arch", "v1model", "-o", dir}, exitModel, "models/rdma/naa.nsc:29:9: p4 (v1model): node RxICRC: checksum verify icrc bth: the ICRC covers the whole IP payload"},
		{[]string{"compile", "models/ejfat/lb-2025.nsc", "--lpg", "LB2025", "--prg", "U280", "--target", "p4", "--arch", "xsa", "--tables=missing.tables", "-o", dir}, exitModel, "missing.tables"},
		{[]string{"compile", "models/ejfat/lb-2025.nsc", "--lpg", "LB2025", "--prg", "U280", "--target", "p4", "--arch", "xsa", "--tables", "ejfat/testdata/seed000.tables", "-o", dir}, exitModel, "ejfat/testdata/seed000.tables:"},
	} {
		code, _, stderr := nsc(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("nsc %v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
}

// The U280 and BMv2 PRGs take the LB models: nsc embed joins them.
func TestEmbedP4PRGs(t *testing.T) {
	for _, prg := range []string{"U280", "BMv2"} {
		code, out, stderr := nsc(t, "embed", "models/ejfat/lb-2025.nsc", "--lpg", "LB2025", "--prg", prg)
		if code != exitOK || !strings.Contains(out, "RxQueue         pruned    joined to the PRG's Rx sinks RxPipeline") {
			t.Errorf("%s: exit %d %s\n%s", prg, code, stderr, out)
		}
	}
}

// The architecture follows the PRG unless given, and never contradicts it.
func TestP4ArchFromPRG(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		prg, arch string
		code      int
		want      string // in the program's first line, or in stderr
	}{
		{"U280", "", exitOK, "--arch xsa"},
		{"BMv2", "", exitOK, "--arch v1model"},
		{"U280", "v1model", exitUsage, "--arch v1model: U280 runs xsa"},
		{"BMv2", "xsa", exitUsage, "--arch xsa: BMv2 runs v1model"},
		{"HostRaw", "", exitUsage, `--arch is required with --prg "HostRaw"`},
		{"", "", exitUsage, "--target p4 takes its limits from a PRG: give --prg (BMv2 runs v1model"},
	} {
		out := filepath.Join(dir, c.prg+c.arch)
		args := []string{"compile", "models/ejfat/lb-2025.nsc", "--lpg", "LB2025", "--prg", c.prg, "--target", "p4", "-o", out}
		if c.arch != "" {
			args = append(args, "--arch", c.arch)
		}
		code, _, stderr := nsc(t, args...)
		if code != c.code {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
			continue
		}
		if code != exitOK {
			if !strings.Contains(stderr, c.want) {
				t.Errorf("%v: %s, want %q", args, stderr, c.want)
			}
			continue
		}
		prog, _ := os.ReadFile(filepath.Join(out, "lb2025.p4"))
		if first, _, _ := strings.Cut(string(prog), "\n"); !strings.Contains(first, c.want) {
			t.Errorf("%v: program begins %q, want %q", args, first, c.want)
		}
	}
}
