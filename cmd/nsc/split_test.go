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
	shipped, err := os.ReadFile(filepath.Join("..", "..", "ejfat", "lbfast", "lb2026host", "fastpath.go"))
	if err != nil {
		t.Fatal(err)
	}
	body := func(src []byte, pkg string) string {
		_, rest, _ := strings.Cut(string(src), "\npackage "+pkg+"\n")
		return rest
	}
	if b := body(host, "host"); b == "" || b != body(shipped, "lb2026host") {
		t.Errorf("the host part differs from ejfat/lbfast/lb2026host")
	}
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
}
