package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The story's facts, as the example prints them.
func TestStory(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	if err := run(&out, dir); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"TxSwOut:\nOR\n  AND\n    net.prot != 2\n    pred(TxQueue,out)\n  AND\n    net.prot == 2\n    pred(TxPsetCtx,out)\n    pred(TxQueue,out)\n",
		"TxPCsum        hardware TxPCsum",
		"TxPCsum        software  no hardware node of IPNicTxPlain does this",
		"RxPCsum        pruned    unreachable behind RxOut_; always true behind RxCsumValid; always false behind RxCsumInvalid",
		"RxPCsumFailed  software  runs behind RxCsumInvalid;",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	pictures, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(pictures) != 7 {
		t.Errorf("%d pictures, want 7 (4 graphs, 3 embeddings): %v", len(pictures), pictures)
	}
}

// Every command in the README prints what the README shows.
func TestReadmeIsTrue(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH; cannot build nsc to check the README")
	}
	nsc := filepath.Join(t.TempDir(), "nsc")
	build := exec.Command(goBin, "build", "-o", nsc, "./cmd/nsc")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build nsc: %v\n%s", err, out)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	// Fenced blocks in order: the language after ``` and the text.
	fences := regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	var blocks [][2]string // command, what it prints
	for i, f := range fences {
		if !strings.HasPrefix(f[2], "go run ./cmd/nsc ") {
			continue
		}
		cmd := strings.TrimSpace(f[2])
		if strings.Contains(cmd, "\n") || i+1 == len(fences) || fences[i+1][1] != "text" {
			t.Errorf("README.md: %q must be one command followed by a ```text block with its output", cmd)
			continue
		}
		blocks = append(blocks, [2]string{cmd, fences[i+1][2]})
	}
	if len(blocks) < 5 {
		t.Fatalf("found %d command blocks in README.md, want at least 5", len(blocks))
	}
	for _, b := range blocks {
		args := strings.Fields(b[0])[3:]
		cmd := exec.Command(nsc, args...)
		cmd.Dir = "../.."
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%s: %v", b[0], err)
			continue
		}
		if string(out) != b[1] {
			t.Errorf("%s prints\n%s\nbut README.md shows\n%s", b[0], out, b[1])
		}
	}
}
