package lang

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/models"
)

// The library files' syntax is parsed once and shared by every load: it
// must come out of loading every shipped model as the parser made it.
func TestLibraryParsesShared(t *testing.T) {
	ld := Loader{ReadFile: os.ReadFile, Library: models.FS}
	err := fs.WalkDir(models.FS, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(name, ".nsc") {
			return err
		}
		// Some files only load with others; what matters is that they
		// are resolved, whatever the outcome.
		ld.Load(filepath.Join("../models", name))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	parsed.Lock()
	defer parsed.Unlock()
	if len(parsed.files) < 10 {
		t.Fatalf("%d library files kept", len(parsed.files))
	}
	for k, f := range parsed.files {
		src, err := fs.ReadFile(models.FS, strings.TrimPrefix(k.name, libPrefix))
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := parseFile(k.name, src)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(f, fresh) {
			t.Errorf("%s: changed after it was parsed", k.name)
		}
	}
}
