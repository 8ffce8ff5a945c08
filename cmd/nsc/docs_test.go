package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocLinksStayInRepo: every relative link of the README and the docs
// names a file of the repository; none leaves it.
func TestDocLinksStayInRepo(t *testing.T) {
	root, _ := filepath.Abs("../..")
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	examples, _ := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, doc := range append(append([]string{filepath.Join(root, "README.md")}, docs...), examples...) {
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		if strings.Contains(string(src), "../shared") {
			t.Errorf("%s names ../shared, outside the repository", rel)
		}
		for _, m := range link.FindAllStringSubmatch(string(src), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			abs := filepath.Join(filepath.Dir(doc), target)
			if r, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(r, "..") {
				t.Errorf("%s: link %s leaves the repository", rel, target)
			} else if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s: link %s: %v", rel, target, err)
			}
		}
	}
	for _, f := range []string{"LICENSE", "docs/architecture.md", "docs/sources.md"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestInstallLine: the README's go install line names the module go.mod
// declares.
func TestInstallLine(t *testing.T) {
	mod, _ := os.ReadFile("../../go.mod")
	readme, _ := os.ReadFile("../../README.md")
	path := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(mod)
	if path == nil || !strings.Contains(string(readme), "go install "+string(path[1])+"/cmd/nsc@latest") {
		t.Errorf("README has no go install line for the module %s", path)
	}
}

// TestDocP4Sample runs docs/p4.md's first command and compares what it
// prints with the output the page shows.
func TestDocP4Sample(t *testing.T) {
	page, _ := os.ReadFile("../../docs/p4.md")
	m := regexp.MustCompile("(?s)```sh\n(nsc compile .*?)\n((?:# .*\n)+)```").FindSubmatch(page)
	if m == nil {
		t.Fatal("docs/p4.md has no nsc compile example")
	}
	args := strings.Fields(strings.ReplaceAll(string(m[1]), "\\\n", " "))[1:]
	out := t.TempDir()
	args[len(args)-1] = out + "/"
	code, stdout, stderr := nsc(t, args...)
	if code != exitOK {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	want := regexp.MustCompile(`(?m)^# `).ReplaceAllString(string(m[2]), "")
	if got := strings.ReplaceAll(stdout, out+"/", "out/"); got != want {
		t.Errorf("docs/p4.md shows\n%s\nthe command prints\n%s", want, got)
	}
}

// TestShippedModelsFromAnywhere: outside the repository, models/... and
// models/FILE name the models compiled into the binary, every one of
// them (the repository's files are the oracle).
func TestShippedModelsFromAnywhere(t *testing.T) {
	onDisk, err := filepath.Glob("../../models/*/*.nsc")
	if err != nil || len(onDisk) == 0 {
		t.Fatalf("no models on disk: %v", err)
	}
	t.Chdir(t.TempDir())
	var o, e strings.Builder
	if code := run([]string{"check", "models/..."}, &env{&o, &e}); code != exitOK {
		t.Fatalf("nsc check models/... outside the repository: exit %d: %s", code, e.String())
	}
	for _, f := range onDisk {
		name := strings.TrimPrefix(filepath.ToSlash(f), "../../")
		if !strings.Contains(o.String(), "ok  "+name+": ") {
			t.Errorf("nsc check models/... did not check %s:\n%s", name, o.String())
		}
	}
	o.Reset()
	if code := run([]string{"check", "models/inet/udp.nsc"}, &env{&o, &e}); code != exitOK || !strings.HasPrefix(o.String(), "ok  models/inet/udp.nsc: lpg UDPIPv4") {
		t.Errorf("nsc check models/inet/udp.nsc: exit %d: %s%s", code, o.String(), e.String())
	}
}
