package lang_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/lang"
)

// A model that includes a device, a directory or a file too large is
// refused at the include, with its position; nothing is read without end.
func TestIncludeBounds(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.nsc")
	if err := os.WriteFile(big, []byte(strings.Repeat("// padding\n", lang.MaxModelBytes/11+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for inc, want := range map[string]string{
		"/dev/zero": "not a regular file but a device",
		dir:         "not a regular file but a directory",
		big:         "larger than 8 MiB",
	} {
		m := filepath.Join(dir, "m.nsc")
		if err := os.WriteFile(m, []byte("header h { a: 8 }\ninclude \""+inc+"\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := lang.Loader{}.Load(m)
		if err == nil || !strings.Contains(err.Error(), m+":2:1: include") || !strings.Contains(err.Error(), want) {
			t.Errorf("include %s: %v, want %q at 2:1", inc, err, want)
		}
	}
}

// An error quotes a bounded excerpt of what it is about: a 5 MB name is
// cut, and says how much was left out.
func TestErrorExcerptBounded(t *testing.T) {
	name := strings.Repeat("x", 5<<20)
	m := filepath.Join(t.TempDir(), "m.nsc")
	src := "lpg L {\n node A { op test " + name + ".f == 1  port true -> B  port false -> B }\n node B { op drop }\n}\n"
	if err := os.WriteFile(m, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := lang.Loader{}.Load(m)
	if err == nil {
		t.Fatal("an unknown header loaded")
	}
	if msg := err.Error(); len(msg) > 1000 || !strings.Contains(msg, "bytes more)") || !strings.HasPrefix(msg, m+":2:") {
		t.Errorf("error of %d bytes: %.300s", len(msg), msg)
	}
}
