package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nsc run --profile on seed 000's capture, then nsc compile --profile:
// the fast path checked in as ejfat/lbfast/lb2021, which the ejfat tests
// compile from the interpreter's runs on the same frames, but for the
// command line in its header. nsc sim --profile of the LPG alone gives
// the same.
func TestProfileCompile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "seed.profile")
	code, _, stderr := nsc(t, "run", "--lb", "lb-2021", "--tables", "ejfat/testdata/seed000.tables", "--in", "ejfat/testdata/seed000-scapy.pcap", "--out", filepath.Join(dir, "out.pcap"), "--interp", "--profile", prof)
	if code != exitOK {
		t.Fatalf("nsc run: exit %d: %s", code, stderr)
	}
	out := filepath.Join(dir, "lb2021")
	code, _, stderr = nsc(t, "compile", "models/ejfat/lb-2021.nsc", "--lpg", "LB2021", "--prg", "HostRaw", "--profile", prof, "-o", out)
	if code != exitOK {
		t.Fatalf("nsc compile: exit %d: %s", code, stderr)
	}
	got, err := os.ReadFile(filepath.Join(out, "fastpath.go"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../ejfat/lbfast/lb2021/fastpath.go")
	if err != nil {
		t.Fatal(err)
	}
	header := func(b []byte) (string, []byte) {
		lines := bytes.SplitN(b, []byte("\n"), 3)
		return string(lines[1]), lines[2]
	}
	cmd, body := header(got)
	if !strings.Contains(cmd, "--profile "+filepath.ToSlash(prof)) {
		t.Errorf("header %q does not name the profile", cmd)
	}
	if _, wantBody := header(want); !bytes.Equal(body, wantBody) {
		t.Errorf("compiled with nsc run's profile, the fast path differs from ejfat/lbfast/lb2021")
	}
	// nsc sim on the LPG alone counts no PRG node; the hot path passes
	// them, each with one place to go, and the code is the same.
	simProf := filepath.Join(dir, "sim.profile")
	code, _, stderr = nsc(t, "sim", "models/ejfat/lb-2021.nsc", "--graph", "LB2021", "--tables", "ejfat/testdata/seed000.tables", "--in", "ejfat/testdata/seed000-scapy.pcap", "--out", filepath.Join(dir, "sim"), "--profile", simProf)
	if code != exitOK {
		t.Fatalf("nsc sim: exit %d: %s", code, stderr)
	}
	simOut := filepath.Join(dir, "simlb")
	if code, _, stderr = nsc(t, "compile", "models/ejfat/lb-2021.nsc", "--lpg", "LB2021", "--prg", "HostRaw", "--profile", simProf, "--package", "lb2021", "-o", simOut); code != exitOK {
		t.Fatalf("nsc compile: exit %d: %s", code, stderr)
	}
	fromSim, err := os.ReadFile(filepath.Join(simOut, "fastpath.go"))
	if err != nil {
		t.Fatal(err)
	}
	if _, simBody := header(fromSim); !bytes.Equal(simBody, body) {
		t.Errorf("compiled with nsc sim's profile of the LPG alone, the fast path differs from the one compiled with nsc run's")
	}
	if code, _, stderr := nsc(t, "compile", "models/ejfat/lb-2021.nsc", "--lpg", "LB2021", "--target", "xdp", "--profile", prof, "-o", out); code != exitUsage || !strings.Contains(stderr, "--profile is for --target go") {
		t.Errorf("--profile with --target xdp: exit %d, %s", code, stderr)
	}
	bad := filepath.Join(dir, "bad.profile")
	os.WriteFile(bad, []byte("RxWire x\n"), 0o644)
	if code, _, stderr := nsc(t, "compile", "models/ejfat/lb-2021.nsc", "--lpg", "LB2021", "--profile", bad, "-o", out); code == exitOK || !strings.Contains(stderr, bad+":1: runs of RxWire") {
		t.Errorf("bad profile: exit %d, %s", code, stderr)
	}
}
