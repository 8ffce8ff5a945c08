package testutil

import (
	"errors"
	"io/fs"
	"os"
	"testing"
)

// DirNames lists the names in dir, sorted, temporary files included; none
// when dir does not exist.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
