package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nsc compile --target xdp on a device that cannot run the whole LB
// writes both parts: the XDP program, which punts at PuntToHost by
// XDP_PASS and has no calendar map, and the Go host part, the whole
// graph as `nsc compile --target go` writes it for the same PRG.
func TestCompileXDPSplit(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := nsc(t, "compile", "models/ejfat/lb-2026.nsc", "--lpg", "LB2026", "--prg", "XDPSmall", "--target", "xdp", "-o", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"wrote " + filepath.Join(dir, "lb2026.c") + " (xdp, graph LB2026@XDPSmall, 155 nodes)",
		"wrote " + filepath.Join(dir, "host", "fastpath.go") + " (go, the host part: runs graph LB2026@XDPSmall, 189 nodes, on every frame the device hands the host at PuntToHost)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	c, err := os.ReadFile(filepath.Join(dir, "lb2026.c"))
	if err != nil {
		t.Fatal(err)
	}
	// The calendar is table 6 of the model: the program has no map for it.
	if !strings.Contains(string(c), "{ /* PuntToHost: emit */\nNSC_SINK(2, XDP_PASS);") || !strings.Contains(string(c), "} nsc_t5 SEC(\".maps\");") || strings.Contains(string(c), "} nsc_t6 SEC(") {
		t.Errorf("the device's program does not punt at PuntToHost, or has a map for the calendar")
	}
	host, err := os.ReadFile(filepath.Join(dir, "host", "fastpath.go"))
	if err != nil {
		t.Fatal(err)
	}
	// The checked-in host part (ejfat/lbfast/lb2026host) is the same
	// graph: the same code but for its package name and command line.
	if b := hostBody(host); b == "" || b != shippedHost(t) {
		t.Errorf("the host part differs from ejfat/lbfast/lb2026host")
	}
}

// hostBody is a host part written by nsc compile after its package
// clause: what its package name and command line leave the same.
func hostBody(src []byte) string {
	_, rest, _ := strings.Cut(string(src), "\npackage host\n")
	return rest
}

// shippedHost is the checked-in host part of lb-2026 after its package
// clause.
func shippedHost(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "ejfat", "lbfast", "lb2026host", "fastpath.go"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(src), "\npackage lb2026host\n")
	return rest
}

// The same on BMv2Small for v1model P4: the program sends what it punts
// to the CPU port, and the host part is written beside it.
func TestCompileP4Split(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := nsc(t, "compile", "models/ejfat/lb-2026.nsc", "--lpg", "LB2026", "--prg", "BMv2Small", "--target", "p4", "-o", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "wrote "+filepath.Join(dir, "host", "fastpath.go")+" (go, the host part: runs graph LB2026@BMv2Small, 189 nodes") {
		t.Errorf("output:\n%s", out)
	}
	src, err := os.ReadFile(filepath.Join(dir, "lb2026.p4"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "standard_metadata.egress_spec = 9w510; // to the host CPU") || strings.Contains(string(src), "load_balance_calendar_table") {
		t.Errorf("the program does not punt to the CPU port, or looks up the calendar")
	}
	// One host part serves both splits (ejfat/lbfast.Host): BMv2Small's is
	// XDPSmall's but for the name of the device's sink node, which the
	// host part runs first and counts.
	host, err := os.ReadFile(filepath.Join(dir, "host", "fastpath.go"))
	if err != nil {
		t.Fatal(err)
	}
	b := hostBody(host)
	if strings.Count(b, "RxPipeline") != 2 || strings.Contains(b, "RxFrames") || strings.ReplaceAll(b, "RxPipeline", "RxFrames") != shippedHost(t) {
		t.Errorf("the host part on BMv2Small is not ejfat/lbfast/lb2026host's with its sink named RxPipeline")
	}
}
