package dot

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// ErrNoGraphviz means the Graphviz `dot` command is not on PATH.
var ErrNoGraphviz = errors.New("graphviz dot not found")

// Formats are the outputs Render makes, by file extension.
var Formats = []string{"svg", "png", "pdf"}

// SVG renders DOT source to SVG with `dot -Tsvg`. It returns an error
// matching ErrNoGraphviz when Graphviz is not installed.
func SVG(dotSrc []byte) ([]byte, error) { return Render(dotSrc, "svg") }

// Render renders DOT source with `dot -T<format>`, format one of Formats.
// It returns an error matching ErrNoGraphviz when Graphviz is not
// installed.
func Render(dotSrc []byte, format string) ([]byte, error) {
	if !slices.Contains(Formats, format) {
		return nil, fmt.Errorf("format %q: want one of %v", format, Formats)
	}
	path, err := exec.LookPath("dot")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoGraphviz, err)
	}
	cmd := exec.Command(path, "-T"+format)
	cmd.Stdin = bytes.NewReader(dotSrc)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("dot -T%s: %w: %s", format, err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}
