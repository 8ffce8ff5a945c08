package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDotFormats: -o renders by extension through Graphviz (the magic
// bytes of each format), refuses an extension it does not know, and
// says so when Graphviz is missing instead of writing DOT text.
func TestDotFormats(t *testing.T) {
	dir := t.TempDir()
	args := []string{"dot", "models/inet/udp.nsc", "--graph", "UDPIPv4", "-o"}
	if code, _, stderr := nsc(t, append(args, filepath.Join(dir, "x.jpg"))...); code != exitUsage || !strings.Contains(stderr, `unknown picture format "jpg"`) {
		t.Errorf("-o x.jpg: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.jpg")); err == nil {
		t.Error("-o x.jpg wrote a file")
	}
	if _, err := exec.LookPath("dot"); err != nil {
		t.Skipf("skipping the rendering: %v", err)
	}
	for ext, magic := range map[string]string{"png": "\x89PNG\r\n", "pdf": "%PDF-", "svg": "<?xml", "dot": "// Code generated"} {
		out := filepath.Join(dir, "x."+ext)
		if code, _, stderr := nsc(t, append(args, out)...); code != exitOK {
			t.Fatalf("-o x.%s: %s", ext, stderr)
		}
		if b, _ := os.ReadFile(out); !bytes.HasPrefix(b, []byte(magic)) {
			t.Errorf("x.%s begins %q, want %q", ext, b[:min(len(b), 10)], magic)
		}
	}
	t.Setenv("PATH", t.TempDir())
	out := filepath.Join(dir, "none.png")
	if code, _, stderr := nsc(t, append(args, out)...); code != exitModel || !strings.Contains(stderr, "graphviz dot not found") {
		t.Errorf("-o x.png without Graphviz: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("-o x.png without Graphviz wrote a file")
	}
}

// TestFocus draws a part of a large embedded graph: the node, what is
// within --depth edges, "…" where edges leave the part, no pruned nodes.
func TestFocus(t *testing.T) {
	code, out, stderr := nsc(t, "dot", "models/ejfat/lb-2026.nsc", "--embedded", "--lpg", "LB2026", "--prg", "XDPSmall", "--focus", "LbCalendar", "--depth", "1")
	if code != exitOK {
		t.Fatal(stderr)
	}
	for _, want := range []string{`label="LbCalendar\n`, `label="LbSlot\n`, `label="LbMember\n`, `label="…"`, `label="legend"`} {
		if !strings.Contains(out, want) {
			t.Errorf("focus output lacks %s", want)
		}
	}
	for _, not := range []string{`label="LbEpoch\n`, "pruned"} {
		if strings.Contains(out, not) {
			t.Errorf("focus output has %s", not)
		}
	}
	if code, _, stderr := nsc(t, "dot", "models/inet/udp.nsc", "--graph", "UDPIPv4", "--focus", "Nope"); code != exitModel || !strings.Contains(stderr, "no node Nope") {
		t.Errorf("--focus Nope: exit %d, %s", code, stderr)
	}
}

// TestREADMEPicture: the picture in the README is what nsc draws today.
// Regenerate with go generate ./cmd/nsc.
//
//go:generate sh -c "cd ../.. && go run ./cmd/nsc dot models/ejfat/lb-2026.nsc --embedded --lpg LB2026 --prg XDPSmall --focus LbCalendar --depth 3 -o docs/pictures/lb-2026-in-xdpsmall.dot && dot -Tsvg docs/pictures/lb-2026-in-xdpsmall.dot -o docs/pictures/lb-2026-in-xdpsmall.svg"
func TestREADMEPicture(t *testing.T) {
	code, out, stderr := nsc(t, "dot", "models/ejfat/lb-2026.nsc", "--embedded", "--lpg", "LB2026", "--prg", "XDPSmall", "--focus", "LbCalendar", "--depth", "3")
	if code != exitOK {
		t.Fatal(stderr)
	}
	want, err := os.ReadFile("../../docs/pictures/lb-2026-in-xdpsmall.dot")
	if err != nil || string(want) != out {
		t.Errorf("docs/pictures/lb-2026-in-xdpsmall.dot is stale (%v): run go generate ./cmd/nsc", err)
	}
	readme, _ := os.ReadFile("../../README.md")
	if !bytes.Contains(readme, []byte("](docs/pictures/lb-2026-in-xdpsmall.svg)")) {
		t.Error("README does not show docs/pictures/lb-2026-in-xdpsmall.svg")
	}
}
