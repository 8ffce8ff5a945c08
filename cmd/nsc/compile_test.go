package main

import (
	"os"
	"path/filepath"
	"testing"
)

// nsc compile reports every node a target refuses, each as
// file:line:col: target: node: reason, and writes nothing.
func TestCompileReportsEveryRefusal(t *testing.T) {
	model := filepath.Join(t.TempDir(), "spawn.nsc")
	os.WriteFile(model, []byte(`include "lib/inet.nsc"
lpg L {
  node RxQueue { op input parse ethernet  port out -> A }
  node A { op test valid(ipv4)  port true -> B  spawn true -> TxQueue  port false -> TxQueue }
  node B { op test valid(udp)  port true -> TxQueue  spawn true -> TxQueue  port false -> TxQueue }
  node TxQueue { op emit }
}
`), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := nsc(t, "compile", model, "--lpg", "L", "--target", "go", "-o", out)
	want := "nsc compile: " + model + ":4:3: go: node A: port true has a spawn edge; the generated code runs one task per frame\n" +
		"nsc compile: " + model + ":5:3: go: node B: port true has a spawn edge; the generated code runs one task per frame\n"
	if code != exitModel || stderr != want {
		t.Errorf("exit %d, stderr\n%s\nwant exit %d and\n%s", code, stderr, exitModel, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s exists after a refusal (%v)", out, err)
	}
}
