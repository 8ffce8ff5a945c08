package fuzz

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/internal/pcapio"
)

// Check reruns one model on the given frames and returns the differences
// of the kind named (Diff.Check's first word: "lpg/embedded", "liar",
// "interp/go", "interp/xdp", "interp/p4", …), for the shrinker.
func Check(m Model, frames [][]byte, check, dir string) ([]Diff, error) {
	p, err := Prepare(m, 0, 0)
	if err != nil {
		return nil, err
	}
	p.Frames = frames
	switch {
	case strings.HasPrefix(check, "lpg/embedded"), strings.HasPrefix(check, "liar"):
		return p.CheckEmbeddings()
	case strings.HasPrefix(check, "interp/go"), check == "go build":
		em := p.Embeddings["Host"]
		if em == nil {
			return nil, fmt.Errorf("%s: no Host embedding", m.Name)
		}
		ds, _, err := RunGo(dir, []GoCase{{Name: m.Name, Graph: em.Graph, Tables: m.Tables, Frames: frames}})
		return ds, err
	case strings.HasPrefix(check, "interp/xdp"), strings.HasPrefix(check, "xdp"):
		em := p.Embeddings["XDP"]
		if em == nil {
			return nil, fmt.Errorf("%s: no XDP embedding", m.Name)
		}
		ds, _, err := RunXDP(dir, []XDPCase{{Name: m.Name, Graph: em.Graph, Limits: em.PRG.Limits, Tables: m.Tables, Frames: frames}})
		return ds, err
	case strings.HasPrefix(check, "interp/p4"), strings.HasPrefix(check, "p4"):
		c, why := P4CaseOf(m, frames)
		if why != "" {
			return nil, fmt.Errorf("%s: no P4 case: %s", m.Name, why)
		}
		var p4c *p4.P4c
		if check == "p4c" {
			p4c, _ = p4.FindP4c()
		}
		ds, _, err := RunP4([]P4Case{c}, p4c)
		return ds, err
	}
	return nil, fmt.Errorf("cannot rerun a %q difference", check)
}

var prgDecl = regexp.MustCompile(`(?m)^prg (\w+) \{`)

var nodeBlock = regexp.MustCompile(`(?m)^    node (N\d+) \{\n        op [^\n]*\n((?:        port [^\n]*\n)+)    \}\n`)

// Shrink makes a failing model smaller while it still fails the same
// check: one frame that shows the difference (or, where the model's
// registers or keyed state need the frames before it, the run's frames
// up to it: run, the model's frames in the run's order), then each
// generated node replaced by a nop that goes where its first port went,
// then the table entries one by one. It gives up after budget.
func Shrink(m Model, d Diff, run [][]byte, dir string, budget time.Duration) (Model, [][]byte, error) {
	deadline := time.Now().Add(budget)
	check := d.Check
	var frames [][]byte
	if d.Frame != nil {
		frames = [][]byte{d.Frame}
	}
	fails := func(c Model) bool {
		if time.Now().After(deadline) {
			return false
		}
		if _, err := Load(c); err != nil {
			return false
		}
		ds, err := Check(c, frames, check, dir)
		return err == nil && slices.ContainsFunc(ds, func(d Diff) bool { return d.Check == check })
	}
	if !fails(m) {
		i := slices.IndexFunc(run, func(f []byte) bool { return d.Frame != nil && string(f) == string(d.Frame) })
		if i < 0 {
			return m, frames, fmt.Errorf("%s: the difference does not show on its frame alone", m.Name)
		}
		if frames = run[:i+1]; !fails(m) {
			return m, frames, fmt.Errorf("%s: the difference does not show on the frames up to it", m.Name)
		}
	}
	for _, name := range nodeBlock.FindAllStringSubmatch(m.Source, -1) {
		c := m
		c.Source = nodeBlock.ReplaceAllStringFunc(m.Source, func(block string) string {
			sub := nodeBlock.FindStringSubmatch(block)
			if sub[1] != name[1] {
				return block
			}
			first := strings.TrimSpace(strings.SplitN(sub[2], "\n", 2)[0])
			_, to, _ := strings.Cut(first, "-> ")
			return fmt.Sprintf("    node %s {\n        op nop\n        port out -> %s\n    }\n", sub[1], to)
		})
		if c.Source != m.Source && fails(c) {
			m = c
		}
	}
	lines := strings.Split(strings.TrimRight(m.Tables, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		c := m
		c.Tables = strings.Join(append(append([]string{}, lines[:i]...), lines[i+1:]...), "\n") + "\n"
		if fails(c) {
			m, lines = c, append(lines[:i], lines[i+1:]...)
		}
	}
	return m, frames, nil
}

// SaveRegression writes a shrunk failing case as NAME.nsc, NAME.tables and
// NAME.pcap (its frames, in order) in dir, where TestRegressions runs it
// through every check.
func SaveRegression(dir string, m Model, frames [][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := save(dir, m); err != nil {
		return err
	}
	w, err := pcapio.Create(filepath.Join(dir, m.Name+".pcap"))
	if err != nil {
		return err
	}
	defer w.Abort()
	for _, f := range frames {
		w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, 0)}, f)
	}
	return w.Commit()
}

// LoadRegression reads a case SaveRegression wrote (NAME.nsc beside its
// .tables and .pcap) back as a model and its frames.
func LoadRegression(nsc string) (Model, [][]byte, error) {
	base := strings.TrimSuffix(nsc, ".nsc")
	src, err := os.ReadFile(nsc)
	if err != nil {
		return Model{}, nil, err
	}
	tables, err := os.ReadFile(base + ".tables")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Model{}, nil, err
	}
	m := Model{Name: filepath.Base(base), Source: string(src), LPG: "G", Tables: string(tables), PRGs: []string{"Host", "XDP"}}
	for _, p := range prgDecl.FindAllStringSubmatch(m.Source, -1) { // the model's own NICs too
		switch p[1] {
		case "Host":
		case "Liar":
			m.PRGs, m.Liar = append(m.PRGs, p[1]), p[1]
		default:
			m.PRGs = append(m.PRGs, p[1])
		}
	}
	for _, nic := range shippedNICs { // and the shipped NIC it includes
		if strings.Contains(m.Source, fmt.Sprintf("include %q", nic.file)) {
			m.PRGs = append(m.PRGs, nic.prg)
		}
	}
	var frames [][]byte
	if pk, err := pcapio.ReadFile(base + ".pcap"); err == nil {
		for _, f := range pk {
			frames = append(frames, f.Data)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Model{}, nil, err
	}
	return m, frames, nil
}
