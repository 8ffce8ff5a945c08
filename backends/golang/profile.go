package golang

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
)

// A Profile holds, per node name, the frames the node ran on in some
// traffic (nsc run --profile writes one). The generator lays out the path
// most of them took as straight-line code first (hotPath): a frame on it
// runs no join of the graph, so the Go compiler knows every header's
// offset and validity there and folds the tests. Other frames leave it at
// their first different turn for the general code. Any profile, stale or
// empty, gives a fast path that behaves the same; only speed differs.
type Profile map[string]uint64

const profileHeader = "# nsc profile: frames each node ran on"

// WriteTo writes the profile as text, a node per line, sorted by name.
func (p Profile) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	fmt.Fprintln(&b, profileHeader)
	for _, name := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%s %d\n", name, p[name])
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// ReadProfile reads what WriteTo writes; file names the input in errors.
// Blank lines and #-comments are skipped.
func ReadProfile(file string, r io.Reader) (Profile, error) {
	p := Profile{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want NODE RUNS, have %q", file, line, text)
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: runs of %s: %q is not a count", file, line, f[0], f[1])
		}
		if _, dup := p[f[0]]; dup {
			return nil, fmt.Errorf("%s:%d: node %s listed twice", file, line, f[0])
		}
		p[f[0]] = n
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return p, nil
}

// hotPath returns the F-nodes from the start along the jumps to the
// target that ran most by the profile, while one ran at all (or there is
// only one). Node runs do not say which edge a frame took: when targets
// ran equally often, the one the others are reached from comes first (a
// join below a branch ran as often as the branch's arm that leads to it),
// else the one jumped to first.
func (c *gen) hotPath(prof Profile, targets map[*dataflow.Node][]*dataflow.Node) []*dataflow.Node {
	if len(prof) == 0 {
		return nil
	}
	reaches := func(from, to *dataflow.Node) bool {
		seen := map[*dataflow.Node]bool{}
		todo := []*dataflow.Node{from}
		for len(todo) > 0 {
			n := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			if n == to {
				return true
			}
			for _, t := range targets[n] {
				if !seen[t] {
					seen[t] = true
					todo = append(todo, t)
				}
			}
		}
		return false
	}
	path := []*dataflow.Node{c.start}
	on := map[*dataflow.Node]bool{c.start: true}
	for n := c.start; ; {
		var best []*dataflow.Node
		for _, t := range targets[n] {
			switch {
			case on[t] || slices.Contains(best, t) || prof[t.Name] == 0:
			case len(best) == 0 || prof[t.Name] > prof[best[0].Name]:
				best = []*dataflow.Node{t}
			case prof[t.Name] == prof[best[0].Name]:
				best = append(best, t)
			}
		}
		if len(best) == 0 {
			// A node with one place to go leads there whatever the
			// profile says: a profile of the LPG alone passes the
			// PRG's nodes that way.
			ts := slices.Compact(slices.Clone(targets[n]))
			if len(ts) != 1 || on[ts[0]] {
				return path
			}
			best = ts
		}
		next := best[0]
		for _, t := range best {
			if !slices.ContainsFunc(best, func(o *dataflow.Node) bool { return o != t && !reaches(t, o) }) {
				next = t
				break
			}
		}
		path = append(path, next)
		on[next] = true
		n = next
	}
}

// writeHot writes copies of the hot path's nodes, each jumping to the next
// one's copy (tN) where it jumped to the next node, unless the jump is
// marked generalJump; every other jump leads to the general code (nN). The
// copies keep the code for the hot path only (between hotOpen and
// hotClose). It returns where the general code starts: the copies' other
// targets, or the start node when there is no hot path.
func (c *gen) writeHot(hot []*dataflow.Node, code map[*dataflow.Node][]byte, targets map[*dataflow.Node][]*dataflow.Node) []*dataflow.Node {
	if len(hot) == 0 {
		return []*dataflow.Node{c.start}
	}
	var exits []*dataflow.Node
	for i, n := range hot {
		if i > 0 {
			fmt.Fprintf(&c.b, "t%d:\n", n.ID)
		}
		b := code[n]
		if i+1 < len(hot) {
			next := hot[i+1].ID
			b = bytes.ReplaceAll(b, fmt.Appendf(nil, "goto n%d\n", next), fmt.Appendf(nil, "goto t%d\n", next))
			if bytes.Contains(b, fmt.Appendf(nil, "goto n%d%s\n", next, generalJump)) {
				exits = append(exits, hot[i+1])
			}
		}
		b = bytes.ReplaceAll(b, []byte(generalJump), nil)
		b = bytes.ReplaceAll(b, []byte(hotOpen+"\n"), nil)
		c.b.Write(bytes.ReplaceAll(b, []byte(hotClose+"\n"), nil))
		for _, t := range targets[n] {
			if i+1 == len(hot) || t != hot[i+1] {
				exits = append(exits, t)
			}
		}
	}
	return exits
}

// Code for the hot path only lies between these lines; the general code
// leaves it out (generalCode). A jump marked generalJump leads to the
// general code even from the hot path.
const (
	hotOpen     = "//nsc:hot{"
	hotClose    = "//nsc:hot}"
	generalJump = " //nsc:general"
)

// generalCode is a node's code without its code for the hot path only.
func generalCode(b []byte) []byte {
	var out []byte
	for {
		before, rest, found := bytes.Cut(b, []byte(hotOpen+"\n"))
		out = append(out, before...)
		if !found {
			return bytes.ReplaceAll(out, []byte(generalJump), nil)
		}
		_, b, _ = bytes.Cut(rest, []byte(hotClose+"\n"))
	}
}
