package fuzz

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/golang/gorun"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/sim"
)

// GoCase is one graph to compile to Go and run: the interpreter's side is
// run here, the generated code's in a program built from all the cases at
// once (one go build for a batch).
type GoCase struct {
	Name  string
	Graph *dataflow.Graph
	// Ref is the graph the interpreter runs (nil: Graph); a test gives
	// another to see a difference caught.
	Ref    *dataflow.Graph
	Tables string
	Frames [][]byte
}

// RunGo generates every case's Go fast path, builds one program that runs
// them all on their frames, and compares each frame's outcome and the
// counters with the interpreter on the same graph. dir is a scratch
// directory. A case the generator refuses is reported in refused.
func RunGo(dir string, cases []GoCase) (diffs []Diff, refused map[string]string, err error) {
	// The generated packages import nsc's runtime.
	mod, err := gorun.FindModule()
	if err != nil {
		return nil, nil, err
	}
	refused = map[string]string{}
	var built []GoCase
	var imports, runs strings.Builder
	for _, c := range cases {
		pkg := fmt.Sprintf("m%d", len(built))
		src, err := golang.Generate(c.Graph, golang.Options{Package: pkg})
		if err != nil {
			refused[c.Name] = err.Error()
			continue
		}
		if err := writeFile(filepath.Join(dir, pkg, "fastpath.go"), src); err != nil {
			return nil, nil, err
		}
		if err := writeFile(filepath.Join(dir, pkg, "tables.txt"), []byte(c.Tables)); err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(&imports, "\t%s \"nscfuzz/%s\"\n", pkg, pkg)
		fmt.Fprintf(&runs, "\trun(%d, %s.Schema, func(ts []*table.Table) (fastpath.Pipeline, error) { return %s.New(ts) })\n", len(built), pkg, pkg)
		var frames bytes.Buffer
		for _, f := range c.Frames {
			frames.Write(binary.BigEndian.AppendUint32(nil, uint32(len(f))))
			frames.Write(f)
		}
		if err := writeFile(filepath.Join(dir, pkg, "frames.bin"), frames.Bytes()); err != nil {
			return nil, nil, err
		}
		built = append(built, c)
	}
	if len(built) == 0 {
		return nil, refused, nil
	}
	sum, err := mod.GoSum()
	if err != nil {
		return nil, nil, err
	}
	main := strings.Replace(strings.Replace(driver, "//IMPORTS\n", imports.String(), 1), "//RUNS\n", runs.String(), 1)
	for name, data := range map[string][]byte{"go.mod": mod.GoMod("nscfuzz"), "go.sum": sum, "main.go": []byte(main)} {
		if err := writeFile(filepath.Join(dir, name), data); err != nil {
			return nil, nil, err
		}
	}
	out, broken, err := runDriver(dir, len(built))
	if err != nil {
		return nil, nil, err
	}
	for i, msg := range broken {
		diffs = append(diffs, Diff{Model: built[i].Name, Check: "go build", Want: "compiles", Got: msg})
	}
	got := parseDriver(out)
	for i, c := range built {
		if broken[i] != "" {
			continue
		}
		ref := c.Graph
		if c.Ref != nil {
			ref = c.Ref
		}
		ts, err := loadTables(ref, c.Name, c.Tables)
		if err != nil {
			return nil, nil, err
		}
		m, err := sim.New(ref, ts)
		if err != nil {
			return nil, nil, err
		}
		// The driver's clock: keyed state times out at the same frame.
		now := time.Unix(0, 0)
		m.SetClock(func() time.Time { return now })
		res := got[i]
		if res.err != "" {
			diffs = append(diffs, Diff{Model: c.Name, Check: "interp/go", Want: "tables load", Got: res.err})
			continue
		}
		for j, f := range c.Frames {
			now = now.Add(time.Millisecond)
			want := Interp(m, f).String()
			if j >= len(res.outs) {
				diffs = append(diffs, Diff{Model: c.Name, Check: "interp/go", Frame: f, Want: want, Got: "(no result)"})
				break
			}
			if want != res.outs[j] {
				diffs = append(diffs, Diff{Model: c.Name, Check: "interp/go", Frame: f, Want: want, Got: res.outs[j]})
			}
		}
		if want := fmt.Sprint(m.Counters()); want != res.counters {
			diffs = append(diffs, Diff{Model: c.Name, Check: "interp/go counters", Want: want, Got: res.counters})
		}
	}
	return diffs, refused, nil
}

var brokenPkg = regexp.MustCompile(`(?m)^(?:\./)?m(\d+)/fastpath\.go:\d+:\d+: .*$`)

// runDriver builds and runs the batch program; a generated package that
// does not compile (the compiler names it) is a finding: it is left out
// of the build and its first error returned in broken.
func runDriver(dir string, n int) (out []byte, broken map[int]string, err error) {
	broken = map[int]string{}
	for {
		cmd := exec.Command("go", "run", "-mod=mod", ".")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err = cmd.Output()
		if err == nil {
			return out, broken, nil
		}
		ms := brokenPkg.FindAllStringSubmatch(stderr.String(), -1)
		if len(ms) == 0 || len(broken) >= n {
			return nil, nil, fmt.Errorf("building the generated Go: %v\n%s", err, stderr.String())
		}
		for _, m := range ms {
			i, _ := strconv.Atoi(m[1])
			if broken[i] == "" {
				broken[i] = m[0]
			}
		}
		main, err := os.ReadFile(filepath.Join(dir, "main.go"))
		if err != nil {
			return nil, nil, err
		}
		var keep []string
		for _, line := range strings.Split(string(main), "\n") {
			drop := false
			for i := range broken {
				if strings.Contains(line, fmt.Sprintf("%q", fmt.Sprintf("nscfuzz/m%d", i))) || strings.HasPrefix(strings.TrimSpace(line), fmt.Sprintf("run(%d,", i)) {
					drop = true
				}
			}
			if !drop {
				keep = append(keep, line)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(strings.Join(keep, "\n")), 0o644); err != nil {
			return nil, nil, err
		}
	}
}

// driverResult is what the batch program printed for one case.
type driverResult struct {
	outs     []string
	counters string
	err      string
}

// parseDriver reads the batch program's lines: "o CASE text" per frame,
// "c CASE text" for the counters, "e CASE text" for an error.
func parseDriver(out []byte) map[int]*driverResult {
	res := map[int]*driverResult{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		num, text, _ := strings.Cut(rest, " ")
		i, err := strconv.Atoi(num)
		if err != nil {
			continue
		}
		if res[i] == nil {
			res[i] = &driverResult{}
		}
		switch kind {
		case "o":
			res[i].outs = append(res[i].outs, strings.TrimSpace(text))
		case "c":
			res[i].counters = text
		case "e":
			res[i].err = text
		}
	}
	return res
}

func writeFile(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, data, 0o644)
}

// driver is the batch program: for each case, its tables and frames from
// the case's directory, each frame's outcome as Interp prints it, then the
// counters as golang.Counters gives them. Keyed state runs on a logical
// clock, a millisecond a frame, as RunGo's interpreter does.
const driver = `package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
//IMPORTS
)

func run(i int, s *packet.Schema, mk func([]*table.Table) (fastpath.Pipeline, error)) {
	dir := fmt.Sprintf("m%d/", i)
	raw, err := os.ReadFile(dir + "tables.txt")
	if err != nil {
		fmt.Printf("e %d %v\n", i, err)
		return
	}
	ts, err := table.Load(s, "tables", bytes.NewReader(raw))
	if err != nil {
		fmt.Printf("e %d %v\n", i, err)
		return
	}
	pl, err := mk(ts)
	if err != nil {
		fmt.Printf("e %d %v\n", i, err)
		return
	}
	now := time.Unix(0, 0)
	if c, ok := pl.(interface{ SetClock(func() time.Time) }); ok {
		c.SetClock(func() time.Time { return now })
	}
	frames, _ := os.ReadFile(dir + "frames.bin")
	buf := make([]byte, 2*packet.Headroom+1<<16)
	for len(frames) >= 4 {
		now = now.Add(time.Millisecond)
		n := int(binary.BigEndian.Uint32(frames))
		f := frames[4 : 4+n]
		frames = frames[4+n:]
		copy(buf[packet.Headroom:], f)
		r, msg := process(pl, buf, n)
		if msg != "" {
			fmt.Printf("o %d panic: %s\n", i, msg)
			continue
		}
		if r.Sink >= 0 {
			fmt.Printf("o %d sink %s %s\n", i, pl.SinkName(int(r.Sink)), hex.EncodeToString(r.Data))
			continue
		}
		d := pl.DropSite(int(r.Drop))
		fmt.Printf("o %d drop %s: %s\n", i, d.Node, d.Reason)
	}
	fmt.Printf("c %d %v\n", i, golang.Counters(pl))
}

// process runs one frame; a panic of the generated code is its outcome,
// so that the other frames and models still run.
func process(pl fastpath.Pipeline, buf []byte, n int) (r fastpath.Result, msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
		}
	}()
	return pl.Process(buf, packet.Headroom, n), ""
}

func main() {
//RUNS
}
`
