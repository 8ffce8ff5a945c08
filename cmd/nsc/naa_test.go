package main

import (
	"os"
	"strings"
	"testing"
)

// TestNAA: nsc naa on loopback, both responders, 1 MiB: the call's result
// is right (the command checks the bytes), and the error paths print
// NAAICE's codes.
func TestNAA(t *testing.T) {
	for _, args := range [][]string{{"naa", "--size", "1048576", "--calls", "1"}, {"naa", "--size", "1048576", "--calls", "1", "--irn", "--loss", "100"}} {
		code, out, errs := nsc(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		for _, want := range []string{"status 0, result right", "sum: ", "(no kernel): status 0x1\n", "MRSP error 0x03 (too many regions)", "MRSP error 0x02 (invalid address)"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: no %q in:\n%s", args, want, out)
			}
		}
	}
	if code, _, _ := nsc(t, "naa", "--size", "4"); code != 2 {
		t.Errorf("--size 4: exit %d, want 2", code)
	}
}

// TestRDMAPictures: the pictures docs/rdma.md shows are what nsc draws
// today. Regenerate with go generate ./cmd/nsc.
//
//go:generate sh -c "cd ../.. && go run ./cmd/nsc dot models/rdma/fpga.nsc --embedded --lpg NAAResponder --prg NAAFPGA --focus RxConnection --depth 2 -o docs/pictures/naa-in-naafpga.dot && dot -Tsvg docs/pictures/naa-in-naafpga.dot -o docs/pictures/naa-in-naafpga.svg"
//go:generate sh -c "cd ../.. && go run ./cmd/nsc dot models/rdma/irn-nics.nsc --embedded --lpg IRNResponder --prg IRNNICSmall --focus RxLoad --depth 2 -o docs/pictures/irn-in-irnnicsmall.dot && dot -Tsvg docs/pictures/irn-in-irnnicsmall.dot -o docs/pictures/irn-in-irnnicsmall.svg"
func TestRDMAPictures(t *testing.T) {
	doc, _ := os.ReadFile("../../docs/rdma.md")
	for _, p := range []struct{ file, lpg, prg, focus, name string }{
		{"models/rdma/fpga.nsc", "NAAResponder", "NAAFPGA", "RxConnection", "naa-in-naafpga"},
		{"models/rdma/irn-nics.nsc", "IRNResponder", "IRNNICSmall", "RxLoad", "irn-in-irnnicsmall"},
	} {
		code, out, stderr := nsc(t, "dot", p.file, "--embedded", "--lpg", p.lpg, "--prg", p.prg, "--focus", p.focus, "--depth", "2")
		if code != exitOK {
			t.Fatal(stderr)
		}
		if want, err := os.ReadFile("../../docs/pictures/" + p.name + ".dot"); err != nil || string(want) != out {
			t.Errorf("docs/pictures/%s.dot is stale (%v): run go generate ./cmd/nsc", p.name, err)
		}
		if !strings.Contains(string(doc), "](pictures/"+p.name+".svg)") {
			t.Errorf("docs/rdma.md does not show pictures/%s.svg", p.name)
		}
	}
}

// TestVerifyRDMA: nsc verify with the tests' tables and crafted IRN
// traffic (rdma/testdata) finds the IRN NIC sound and catches the NIC
// that places a page off, on frames that reach a known queue pair.
func TestVerifyRDMA(t *testing.T) {
	for prg, want := range map[string]int{"IRNNIC": exitOK, "IRNOffsetNIC": exitModel} {
		code, out, _ := nsc(t, "verify", "models/rdma/irn-nics.nsc", "--lpg", "IRNResponder", "--prg", prg,
			"--tables", "rdma/testdata/rdma.tables", "--frames", "rdma/testdata/irn.pcap", "--packets", "200", "--mismatches", t.TempDir())
		if code != want {
			t.Errorf("%s: exit %d, want %d:\n%s", prg, code, want, out)
		}
	}
}
