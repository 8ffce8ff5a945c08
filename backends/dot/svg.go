package dot

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ErrNoGraphviz means the Graphviz `dot` command is not on PATH.
var ErrNoGraphviz = errors.New("graphviz dot not found")

// SVG renders DOT source to SVG with `dot -Tsvg`. It returns an error
// matching ErrNoGraphviz when Graphviz is not installed.
func SVG(dotSrc []byte) ([]byte, error) {
	path, err := exec.LookPath("dot")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoGraphviz, err)
	}
	cmd := exec.Command(path, "-Tsvg")
	cmd.Stdin = bytes.NewReader(dotSrc)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("dot -Tsvg: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}
