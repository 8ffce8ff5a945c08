package lang_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
)

// testNode wraps a condition into a model that loads when the condition
// is fine.
func testNode(cond string) string {
	return "header h { a: 8 }\nlpg G {\n node Q { op input port out -> T }\n node T { op test " + cond + " port true port false }\n}"
}

// Nesting deeper than the limit is a positioned error at the first token
// past it, whatever nests: brackets, operator runs, type arguments,
// clusters, lists. The lpg and node braces are two levels already.
func TestNestingLimit(t *testing.T) {
	deep := func(open, mid, close string, n int) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	cases := []struct{ name, src, want string }{
		{"parens at the limit", testNode(deep("(", "h.a == 1", ")", 98)), ""},
		{"parens over it", testNode(deep("(", "h.a == 1", ")", 99)),
			"main.nsc:4:117: nested more than 100 levels deep (brackets, !, ~ and < count)"},
		{"100k parens", testNode(deep("(", "h.a == 1", ")", 100_000)),
			"main.nsc:4:117: nested more than 100 levels deep (brackets, !, ~ and < count)"},
		{"nots at the limit", testNode(deep("!", "(h.a == 1)", "", 97)), ""},
		{"nots over it", testNode(deep("!", "(h.a == 1)", "", 99)),
			"main.nsc:4:117: nested more than 100 levels deep (brackets, !, ~ and < count)"},
		{"nots and parens", testNode(deep("!(", "h.a == 1", ")", 50)),
			"main.nsc:4:117: nested more than 100 levels deep (brackets, !, ~ and < count)"},
		{"nots after && do not add up", testNode("!!!!!!!!!!" + strings.Repeat(" h.a == 1 && !!!!!!!!!!", 50) + "h.a == 1"), ""},
		{"inversions", "header h { a: 8 }\naction f() { h.a = " + deep("~", "1", "", 200) + " }",
			"main.nsc:2:119: nested more than 100 levels deep (brackets, !, ~ and < count)"},
		{"type arguments", "prg P {\n config C: " + deep("t<", "x", ">", 200) + " { port out }\n}",
			"main.nsc:2:211: nested more than 100 levels deep (brackets, !, ~ and < count)"},
		{"type arguments after commas", "prg P {\n config C: " + deep("t<x, ", "x", ">", 200) + " { port out }\n}",
			"main.nsc:2:508: nested more than 100 levels deep (brackets, !, ~ and < count)"},
		{"clusters", "lpg G {\n" + deep("cluster C {", "", "}", 200) + "\n}",
			"main.nsc:2:1100: nested more than 100 levels deep (brackets, !, ~ and < count)"},
		{"lists", "prg P {\n config C: t = " + deep("[", "1", "]", 200) + " { port out }\n}",
			"main.nsc:2:115: nested more than 100 levels deep (brackets, !, ~ and < count)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(map[string]string{"main.nsc": c.src})
			if c.want == "" {
				if err != nil {
					t.Fatalf("got %v, want the model to load", err)
				}
				return
			}
			var el lang.ErrorList
			if !errors.As(err, &el) || el[0].Error() != c.want {
				t.Fatalf("got %v, want %s", err, c.want)
			}
		})
	}
}

// Every `/*` after one left open used to scan to the end of the file for
// its `*/`: a 60 kB file took half a minute. The first one is the error.
func TestUnclosedCommentsAreOneError(t *testing.T) {
	_, err := load(map[string]string{"main.nsc": "header h { a: 8 }\n" + strings.Repeat(`/*"`, 20_000)})
	if want := "main.nsc:2:1: comment /* is not closed"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A million `!` is refused at the nesting limit, allocating a small
// multiple of the input (it used to take gigabytes, then the stack).
func TestLongNotRunBoundedMemory(t *testing.T) {
	src := testNode(strings.Repeat("!", 1_000_000) + "h.a == 1")
	var err error
	n := allocated(func() { _, err = load(map[string]string{"main.nsc": src}) })
	if err == nil || !strings.Contains(err.Error(), "nested more than 100 levels deep") {
		t.Fatalf("got %v, want the nesting error", err)
	}
	if limit := 50 * uint64(len(src)); n > limit {
		t.Errorf("loading %d bytes allocated %d, want < %d", len(src), n, limit)
	}
	t.Logf("%d bytes in, %d allocated (%.1fx)", len(src), n, float64(n)/float64(len(src)))
}

// A long flat chain costs memory linear in its length: doubling the
// operands doubles the allocation. (Each node's text once copied its
// operands' texts, which made a chain quadratic.)
func TestLongChainLinearMemory(t *testing.T) {
	size := func(n int) uint64 {
		src := chainModel(n)
		return allocated(func() {
			if _, err := load(map[string]string{"main.nsc": src}); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := size(1000), size(2000)
	if ratio := float64(large) / float64(small); ratio > 2.5 {
		t.Errorf("1000 operands allocate %d bytes, 2000 allocate %d: %.1f times as much, want about 2", small, large, ratio)
	}
}

// chainModel tests a sum of n+1 fields with long names, so that the
// chain's text outweighs its tokens.
func chainModel(n int) string {
	field := strings.Repeat("f", 64)
	return "header h { " + field + ": 8 }\nlpg G {\n node Q { op input port out -> T }\n node T { op test h." + field +
		strings.Repeat(" + h."+field, n) + " == 1 port true port false }\n}"
}

// BenchmarkLoad measures loading a shipped model with what it includes
// (the baseline) and long chains, per byte of input.
func BenchmarkLoad(b *testing.B) {
	shipped := lang.Loader{ReadFile: func(name string) ([]byte, error) { return fs.ReadFile(models.FS, name) }, Library: models.FS}
	m, err := shipped.Load("ejfat/lb-2026.nsc")
	if err != nil {
		b.Fatal(err)
	}
	size := 0
	for _, f := range lang.Files(m) {
		src, _ := fs.ReadFile(models.FS, strings.TrimPrefix(f, "nsc:"))
		size += len(src)
	}
	chain := func(n int) func() (*lang.Model, error) {
		src := chainModel(n)
		return func() (*lang.Model, error) { return load(map[string]string{"main.nsc": src}) }
	}
	for _, c := range []struct {
		name string
		size int
		load func() (*lang.Model, error)
	}{
		{"lb-2026", size, func() (*lang.Model, error) { return shipped.Load("ejfat/lb-2026.nsc") }},
		{"chain-1000", len(chainModel(1000)), chain(1000)},
		{"chain-2000", len(chainModel(2000)), chain(2000)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(c.size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.load(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// An absolute include is read from that path, not joined to the including
// file's directory.
func TestAbsoluteInclude(t *testing.T) {
	dir := t.TempDir()
	hdr := filepath.Join(dir, "lib", "h.nsc")
	if err := os.MkdirAll(filepath.Dir(hdr), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hdr, []byte("header h { a: 8 }"), 0o644); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(dir, "models", "main.nsc")
	if err := os.MkdirAll(filepath.Dir(main), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "include " + strconv.Quote(hdr) + "\nlpg G {\n node Q { op input parse h port out -> E }\n node E { op emit }\n}"
	if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := lang.Loader{}.Load(main)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{hdr, main}; strings.Join(lang.Files(m), " ") != strings.Join(want, " ") {
		t.Errorf("files read %q, want %q", lang.Files(m), want)
	}
}
