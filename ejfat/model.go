// Package ejfat is the EJFAT application around the load balancer's data
// plane: the shipped LB models (models/ejfat/), their wire formats and the
// test set-ups of seed 000 and the ESnet specs.
package ejfat

import (
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// Versions are the shipped LB pipelines: the 2021 design of seed 000, the
// ESnet udplb of 2025-06 (c4ee776) and of 2026-06 (255e11b).
var Versions = []string{"lb-2021", "lb-2025", "lb-2026"}

// File is the shipped model file of a version, a path inside models/.
func File(version string) string { return "ejfat/" + version + ".nsc" }

// LPGName is the name of a version's LPG: lb-2025 -> LB2025.
func LPGName(version string) string {
	return "LB" + strings.TrimPrefix(version, "lb-")
}

// HostPRG is the PRG for whole frames in and out with no offload.
const HostPRG = "HostRaw"

// Model loads a version's model from the shipped models.
func Model(version string) (*lang.Model, error) {
	if !slices.Contains(Versions, version) {
		return nil, fmt.Errorf("unknown LB model %q (have %s)", version, strings.Join(Versions, ", "))
	}
	ld := lang.Loader{ReadFile: func(name string) ([]byte, error) { return fs.ReadFile(models.FS, name) }, Library: models.FS}
	return ld.Load(File(version))
}

// LPG loads a version's model and returns it with its LPG.
func LPG(version string) (*lang.Model, *dataflow.Graph, error) {
	m, err := Model(version)
	if err != nil {
		return nil, nil, err
	}
	g, ok := m.Graph(LPGName(version))
	if !ok {
		return nil, nil, fmt.Errorf("%s has no lpg %s", File(version), LPGName(version))
	}
	return m, g, nil
}

// Tables makes the runtime tables of model m filled from a table_add
// script (nil r: empty tables).
func Tables(m *lang.Model, name string, r io.Reader) ([]*table.Table, error) {
	return table.Load(m.Schema, name, r)
}

// Embedding loads a version's model and returns it with its LPG embedded
// in prg (HostPRG, "LinuxUDP", "XDP", "BMv2", …).
func Embedding(version, prg string) (*lang.Model, *embed.Embedding, error) {
	m, g, err := LPG(version)
	if err != nil {
		return nil, nil, err
	}
	p, ok := m.Graph(prg)
	if !ok {
		return nil, nil, fmt.Errorf("%s has no prg %s", File(version), prg)
	}
	em, err := embed.Embed(g, p)
	return m, em, err
}

// Interpreter returns the reference interpreter running a version's LPG
// embedded in prg (HostPRG, "LinuxUDP", …) — the graph its fast path is
// generated from — with tables filled from a table_add script (nil r:
// empty).
func Interpreter(version, prg, name string, r io.Reader) (*sim.Machine, error) {
	m, em, err := Embedding(version, prg)
	if err != nil {
		return nil, err
	}
	ts, err := Tables(m, name, r)
	if err != nil {
		return nil, err
	}
	return sim.New(em.Graph, ts)
}
