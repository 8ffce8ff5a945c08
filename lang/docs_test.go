package lang_test

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
)

// The language reference is checked against the loader: every ```nsc block
// of docs/language.md is a complete model that must load, and every
// ```nsc-error block is followed by a ```text block holding exactly the
// errors the loader reports for it.

const docPath = "../docs/language.md"

// docFile is the name each example is loaded as; the error messages in the
// document are written with it.
const docFile = "x.nsc"

// docFence is one fenced block of the document.
type docFence struct {
	tag  string
	line int // the line of the opening ```, 1-based
	body string
}

func readDocFences(t *testing.T) []docFence {
	t.Helper()
	f, err := os.Open(docPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docFence
	var cur *docFence
	var body strings.Builder
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(text, "```"):
			cur = &docFence{tag: strings.TrimSpace(strings.TrimPrefix(text, "```")), line: line}
			body.Reset()
		case cur != nil && strings.TrimSpace(text) == "```":
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(text)
			body.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("docs/language.md:%d: ```%s block is not closed", cur.line, cur.tag)
	}
	return out
}

// loadDocExample loads src as the model file x.nsc; includes come from the
// shipped library.
func loadDocExample(src string) (*lang.Model, error) {
	ld := lang.Loader{
		ReadFile: func(name string) ([]byte, error) {
			if name == docFile {
				return []byte(src), nil
			}
			// As os.ReadFile reports a missing file, so that messages read
			// as nsc check prints them.
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
		},
		Library: models.FS,
	}
	return ld.Load(docFile)
}

func TestDocExamplesLoad(t *testing.T) {
	n := 0
	for _, b := range readDocFences(t) {
		if b.tag != "nsc" {
			continue
		}
		n++
		if _, err := loadDocExample(b.body); err != nil {
			t.Errorf("docs/language.md:%d: ```nsc block does not load:\n%v", b.line, err)
		}
	}
	if n < 15 {
		t.Errorf("docs/language.md has %d ```nsc blocks; the extraction is broken or examples went missing", n)
	}
}

func TestDocErrorExamples(t *testing.T) {
	blocks := readDocFences(t)
	n := 0
	for i, b := range blocks {
		if b.tag != "nsc-error" {
			continue
		}
		n++
		if i+1 >= len(blocks) || blocks[i+1].tag != "text" {
			t.Errorf("docs/language.md:%d: ```nsc-error block is not followed by a ```text block with the expected errors", b.line)
			continue
		}
		want := strings.TrimSpace(blocks[i+1].body)
		_, err := loadDocExample(b.body)
		if err == nil {
			t.Errorf("docs/language.md:%d: ```nsc-error block loads without error; want\n%s", b.line, want)
			continue
		}
		var el lang.ErrorList
		if !errors.As(err, &el) {
			t.Errorf("docs/language.md:%d: error is %T, not a lang.ErrorList: %v", b.line, err, err)
		}
		if got := strings.TrimSpace(err.Error()); got != want {
			t.Errorf("docs/language.md:%d: ```nsc-error block reports\n%s\nthe document says (line %d)\n%s", b.line, got, blocks[i+1].line, want)
		}
	}
	if n < 5 {
		t.Errorf("docs/language.md has %d ```nsc-error blocks; the extraction is broken or examples went missing", n)
	}
}

// Every block has a tag the tests or readers know, so that a typo in a tag
// (```nsc-fragmnet) does not silently skip a check.
func TestDocBlockTags(t *testing.T) {
	known := map[string]bool{"nsc": true, "nsc-fragment": true, "nsc-error": true, "text": true, "ebnf": true}
	for _, b := range readDocFences(t) {
		if !known[b.tag] {
			t.Errorf("docs/language.md:%d: unknown block tag %q (want nsc, nsc-fragment, nsc-error, text or ebnf)", b.line, b.tag)
		}
	}
}
