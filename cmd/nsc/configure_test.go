package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nsc embed --configure prints the chosen filters, their cost and the
// embedding into the configured NIC; over IPv6 it says why no filter helps.
func TestEmbedConfigure(t *testing.T) {
	args := []string{"embed", "models/ejfat/reassembler.nsc", "models/inet/i82599.nsc", "--lpg", "Reassembler", "--prg", "I82599", "--configure"}
	code, out, stderr := nsc(t, append(args, "--port", "19000", "--ports", "2")...)
	if code != exitOK {
		t.Fatal(stderr)
	}
	for _, want := range []string{
		"chosen: RxFilters = [[udp, any, any, any, 19000, 1, q1], [udp, any, any, any, 19001, 1, q2]]",
		"cost: 52 (software 52 + demux 0; 2 filters, 2 queues); with no filter: 56 (software 52 + demux 4)",
		// The LPG's own parse stays only where the NIC's failed.
		"RxQueue         software  runs behind RxOut; not behind RxIPBad, RxIPGood, RxL4Good, RxL4Bad, RxQ1, RxQ2: I82599 parsed from ethernet before them\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, stderr = nsc(t, append(args, "--port", "19000", "--ipv6")...)
	if code != exitOK {
		t.Fatal(stderr)
	}
	for _, want := range []string{"chosen: RxFilters = []", "no configuration offloads a stage:\n  udp port 19000 over IPv6: its packets never reach RxFilters; I82599 delivers them behind RxOut, before the filters\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("IPv6: output lacks %q:\n%s", want, out)
		}
	}
	if code, _, stderr := nsc(t, append(args, "--ports", "0")...); code != exitUsage || !strings.Contains(stderr, "ports 19522 to 19521 are not UDP ports") {
		t.Errorf("--ports 0: exit %d %s", code, stderr)
	}
}

// nsc embed --config reads values from a file; a bad one is an error at
// its position.
func TestEmbedConfigFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.cfg"), filepath.Join(dir, "bad.cfg")
	if err := os.WriteFile(good, []byte("RxFilters = [[udp, any, any, any, 19000, 7, q5]]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("// queue 8 is not modelled\nRxFilters = [[udp, any, any, any, 19000, 7, q8]]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"embed", "models/ejfat/reassembler.nsc", "models/inet/i82599.nsc", "--lpg", "Reassembler", "--prg", "I82599"}
	code, out, stderr := nsc(t, append(args, "--config", good)...)
	if code != exitOK || !strings.Contains(out, "not behind RxIPBad, RxIPGood, RxL4Good, RxL4Bad, RxQ5: I82599 parsed") {
		t.Errorf("good config: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = nsc(t, append(args, "--config", bad)...)
	if want := bad + ":2:45: config RxFilters: filter port q8 is not a queue port of the node (miss, q1, q2, q3, q4, q5, q6, q7)"; code != exitModel || !strings.Contains(stderr, want) {
		t.Errorf("bad config: exit %d %s, want %s", code, stderr, want)
	}
}
