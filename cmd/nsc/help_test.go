package main

import (
	"os/exec"
	"strings"
	"testing"
)

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, stderr := nsc(t, args...)
		if code != exitOK || stderr != "" {
			t.Errorf("nsc %v: exit %d, stderr %q; want exit 0 and nothing on stderr", args, code, stderr)
		}
		for _, c := range commands {
			if !strings.Contains(out, "nsc "+c.name+" ") {
				t.Errorf("nsc %v does not list %s", args, c.name)
			}
		}
	}
	for _, c := range append(commands[:len(commands):len(commands)], subcommands...) {
		name := strings.Fields(c.name)
		for _, args := range [][]string{append(name, "--help"), append([]string{"help"}, name...)} {
			code, out, stderr := nsc(t, args...)
			if code != exitOK || stderr != "" {
				t.Errorf("nsc %v: exit %d, stderr %q", args, code, stderr)
			}
			if !strings.HasPrefix(out, "nsc "+c.name+" — "+c.help+"\n") || !strings.Contains(out, "\nexample:\n  "+c.example+"\n") {
				t.Errorf("nsc %v: no purpose or example:\n%s", args, out)
			}
		}
		// The example names the command and only flags it has: with
		// --help after them they parse.
		ex := strings.Fields(c.example)
		if ex[0] != "nsc" || strings.Join(ex[1:1+len(name)], " ") != c.name {
			t.Errorf("%s: example %q runs another command", c.name, c.example)
			continue
		}
		if code, _, stderr := nsc(t, append(ex[1:], "--help")...); code != exitOK {
			t.Errorf("%s: example %q does not parse: %s", c.name, c.example, stderr)
		}
	}
	// Flags are listed with their descriptions.
	if _, out, _ := nsc(t, "sim", "--help"); !strings.Contains(out, "flags:\n") || !strings.Contains(out, "  -graph string\n") {
		t.Errorf("nsc sim --help lists no flags:\n%s", out)
	}
}

func TestUsageErrorsOnStderr(t *testing.T) {
	code, out, stderr := nsc(t, "check", "--nope", "x.nsc")
	if code != exitUsage || out != "" || !strings.HasPrefix(stderr, "nsc check: flag provided but not defined: -nope\nusage: nsc check ") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, stderr = nsc(t, "xdp", "frob")
	if code != exitUsage || out != "" || !strings.HasPrefix(stderr, `nsc xdp: unknown xdp command "frob"`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	// A model error names the command too, once.
	code, _, stderr = nsc(t, "check", "missing.nsc")
	if code != exitModel || !strings.HasPrefix(stderr, "nsc check: missing.nsc:1:1: ") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestVersion builds nsc as a user does and holds --version to the go
// command's own account of the module and the toolchain.
func TestVersion(t *testing.T) {
	bin := buildNSC(t)
	module, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatal(err)
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for _, arg := range []string{"--version", "version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("nsc %s: %v", arg, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "nsc ") || !strings.HasSuffix(lines[0], "("+strings.TrimSpace(string(module))+")") ||
			!strings.HasPrefix(lines[1], "revision ") || !strings.HasPrefix(lines[2], strings.TrimSpace(string(goVersion))+" ") {
			t.Errorf("nsc %s:\n%s", arg, out)
		}
		// A binary stamped with its revision (go build -buildvcs) names
		// the commit it was built from.
		if rev, ok := strings.CutPrefix(lines[1], "revision "); ok && !strings.HasPrefix(rev, "unknown") {
			head, err := exec.Command("git", "rev-parse", "HEAD").Output()
			if err == nil && !strings.HasPrefix(rev, strings.TrimSpace(string(head))+" ") {
				t.Errorf("nsc %s says revision %s; git says %s", arg, rev, head)
			}
		}
		if first == "" {
			first = string(out)
		} else if string(out) != first {
			t.Errorf("nsc version and --version differ:\n%s\n%s", first, out)
		}
	}
}
