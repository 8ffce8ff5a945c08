package main

import (
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
