package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
)

// readFile reads a model from disk, falling back to the shipped models
// (`dragonet/offload.nsc` or `models/dragonet/offload.nsc`) when the path
// is not on disk.
func readFile(name string) ([]byte, error) {
	b, err := lang.ReadModel(name)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	if shipped, ok := shippedPath(name); ok {
		return fs.ReadFile(models.FS, shipped)
	}
	return nil, err
}

func shippedPath(name string) (string, bool) {
	p := path.Clean(filepath.ToSlash(name))
	if p == "models" {
		return ".", true
	}
	p = strings.TrimPrefix(p, "models/")
	if _, err := fs.Stat(models.FS, p); err == nil {
		return p, true
	}
	return "", false
}

var loader = lang.Loader{ReadFile: readFile, Library: models.FS}

// expand turns DIR/... into the .nsc files under DIR (on disk, or shipped).
func expand(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		dir, ok := strings.CutSuffix(filepath.ToSlash(a), "/...")
		if !ok {
			out = append(out, a)
			continue
		}
		var files []string
		walk := func(fsys fs.FS, root, prefix string) error {
			return fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if !d.IsDir() && strings.HasSuffix(p, ".nsc") {
					files = append(files, path.Join(prefix, p))
				}
				return nil
			})
		}
		var err error
		if st, statErr := os.Stat(dir); statErr == nil && st.IsDir() {
			err = walk(os.DirFS(dir), ".", dir)
		} else if shipped, ok := shippedPath(dir); ok {
			err = walk(models.FS, shipped, "models") // named as in the repository
		} else {
			return nil, fmt.Errorf("%s: no such directory", dir)
		}
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no .nsc files", a)
		}
		out = append(out, files...)
	}
	return out, nil
}

func loadModel(files []string) (*lang.Model, error) {
	if len(files) == 0 {
		return nil, usagef("no model file given")
	}
	files, err := expand(files)
	if err != nil {
		return nil, err
	}
	return loader.Load(files...)
}

// graphOf loads the model and picks graph name; with no name and one
// graph, that one.
func graphOf(files []string, name string) (*lang.Model, *dataflow.Graph, error) {
	m, err := loadModel(files)
	if err != nil {
		return nil, nil, err
	}
	if name == "" {
		if len(m.Graphs) == 1 {
			return m, m.Graphs[0], nil
		}
		return nil, nil, usagef("--graph is required: the model has %s", graphList(m))
	}
	g, ok := m.Graph(name)
	if !ok {
		return nil, nil, fmt.Errorf("no graph %s in the model (it has %s)", name, graphList(m))
	}
	return m, g, nil
}

func graphList(m *lang.Model) string {
	if len(m.Graphs) == 0 {
		return "no graphs"
	}
	return strings.Join(m.GraphNames(), ", ")
}
