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
	blocks := regexp.MustCompile("(?s)```sh\n(go run ./cmd/nsc [^\n]*)\n```\n\n```text\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 5 {
		t.Fatalf("found %d command blocks in README.md", len(blocks))
	}
	for _, b := range blocks {
		args := strings.Fields(b[1])[3:]
		cmd := exec.Command(nsc, args...)
		cmd.Dir = "../.."
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%s: %v", b[1], err)
			continue
		}
		if string(out) != b[2] {
			t.Errorf("%s prints\n%s\nbut README.md shows\n%s", b[1], out, b[2])
		}
	}
}
