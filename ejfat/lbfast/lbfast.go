// Package lbfast holds the generated Go fast paths of the shipped EJFAT LB
// models on the HostRaw PRG (whole frames in and out), one package per
// version, and picks one by version name. The packages below are generated
// by nsc compile and checked in; backends/golang's TestGeneratedUpToDate
// fails when one is stale.
package lbfast

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2021"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2025"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2026"
	"github.com/dragonet-go/nsc/packet"
)

type version struct {
	schema *packet.Schema
	new    func([]*packet.Table) (fastpath.Pipeline, error)
}

var versions = map[string]version{
	"lb-2021": {lb2021.Schema, func(ts []*packet.Table) (fastpath.Pipeline, error) { return lb2021.New(ts) }},
	"lb-2025": {lb2025.Schema, func(ts []*packet.Table) (fastpath.Pipeline, error) { return lb2025.New(ts) }},
	"lb-2026": {lb2026.Schema, func(ts []*packet.Table) (fastpath.Pipeline, error) { return lb2026.New(ts) }},
}

func lookup(v string) (version, error) {
	x, ok := versions[v]
	if !ok {
		var have []string
		for k := range versions {
			have = append(have, k)
		}
		sort.Strings(have)
		return version{}, fmt.Errorf("no fast path for LB model %q (have %s)", v, strings.Join(have, ", "))
	}
	return x, nil
}

// Tables makes the runtime tables of a version's fast path, filled from a
// table_add script (nil r: empty).
func Tables(v, name string, r io.Reader) ([]*packet.Table, error) {
	x, err := lookup(v)
	if err != nil {
		return nil, err
	}
	return packet.LoadTables(x.schema, name, r)
}

// New returns a version's fast path over tables made by Tables.
func New(v string, tables []*packet.Table) (fastpath.Pipeline, error) {
	x, err := lookup(v)
	if err != nil {
		return nil, err
	}
	return x.new(tables)
}
