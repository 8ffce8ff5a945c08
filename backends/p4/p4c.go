package p4

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// P4c is p4c's BMv2 back end (p4c-bm2-ss), where one is installed.
type P4c struct {
	Path string
	// Include is the directory of core.p4 and v1model.p4, for a p4c
	// that is not installed where it looks for them ("": its own).
	Include string
}

// oracleBin is where the project's tools script (p4-oracle.sh) builds
// p4c, with p4include beside bin.
const oracleBin = "/tmp/p4build/bin"

// FindP4c finds p4c-bm2-ss on PATH, else where p4-oracle.sh builds it.
func FindP4c() (*P4c, error) {
	path, err := exec.LookPath("p4c-bm2-ss")
	if err != nil {
		path = filepath.Join(oracleBin, "p4c-bm2-ss")
		if _, serr := os.Stat(path); serr != nil {
			return nil, err
		}
	}
	c := &P4c{Path: path}
	if inc := filepath.Join(filepath.Dir(filepath.Dir(path)), "p4include"); exists(filepath.Join(inc, "v1model.p4")) {
		c.Include = inc
	}
	return c, nil
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// otherThanReject is what p4c said, less the warning p4c-bm2-ss gives
// every parser that may reject (BMv2 then ends the parse and runs the
// control with parser_error set, which the generated control checks
// first: docs/p4.md, "Parse failures"). A message is its line with
// "warning:" or "error:" and the source lines under it.
func otherThanReject(out string) string {
	var keep []string
	drop := false
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "warning:") || strings.Contains(line, "error:") {
			drop = strings.Contains(line, "transition to reject not supported on this target") ||
				strings.Contains(line, "implicit transition to `reject'")
		}
		if !drop && strings.TrimSpace(line) != "" {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// Compile compiles the v1model program in file into BMv2's JSON at out.
// It returns what p4c said besides the warning every parser that may
// reject gets, and p4c's exit error when it refused the program.
func (c *P4c) Compile(file, out string) (string, error) {
	cmd := exec.Command(c.Path, "--std", "p4-16", "-o", out, file)
	if c.Include != "" {
		cmd.Env = append(os.Environ(), "P4C_16_INCLUDE_PATH="+c.Include)
	}
	b, err := cmd.CombinedOutput()
	return strings.TrimSpace(otherThanReject(string(b))), err
}
