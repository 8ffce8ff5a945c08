package gorun

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Programs not run for a while go when another is built; the one built
// and those run lately stay.
func TestPrune(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-unused - time.Hour)
	for _, name := range []string{"stale", "recent", "built"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name, exe), nil, 0o755)
		if name != "recent" {
			os.Chtimes(filepath.Join(dir, name), old, old)
		}
	}
	prune(dir, "built")
	for name, want := range map[string]bool{"stale": false, "recent": true, "built": true} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s kept: %v, want %v", name, err == nil, want)
		}
	}
}
