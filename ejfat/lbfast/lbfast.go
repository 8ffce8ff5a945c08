// Package lbfast holds the generated Go fast paths of the shipped EJFAT LB
// models, one package per version and PRG: lbNNNN on HostRaw (whole frames
// in and out, nothing offloaded) and lbNNNNudp on LinuxUDP (behind kernel
// UDP sockets: the kernel's parsing and checks pruned from the LB). It
// picks one by version name. lb2026host is the host part of lb-2026 split
// on XDPSmall or on BMv2Small (docs/embedding.md, "Devices and the host"):
// the two embeddings give the same host program but for the name of the
// device's sink node, RxFrames on XDPSmall and RxPipeline on BMv2Small
// (cmd/nsc's TestCompileP4Split), so one package serves both; the split
// tests and `nsc xdp attach --host` run it, and Host picks it by the
// device's graph. The packages below are generated
// by nsc compile and checked in; backends/golang's TestGeneratedUpToDate
// fails when one is stale.
package lbfast

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2021"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2021udp"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2025"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2025udp"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2026"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2026host"
	"github.com/dragonet-go/nsc/ejfat/lbfast/lb2026udp"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

type version struct {
	schema *packet.Schema
	new    func([]*table.Table) (fastpath.Pipeline, error)
	socket func([]*table.Table) (fastpath.Pipeline, error) // on LinuxUDP
}

var versions = map[string]version{
	"lb-2021": {lb2021.Schema,
		func(ts []*table.Table) (fastpath.Pipeline, error) { return lb2021.New(ts) },
		func(ts []*table.Table) (fastpath.Pipeline, error) { return lb2021udp.New(ts) }},
	"lb-2025": {lb2025.Schema,
		func(ts []*table.Table) (fastpath.Pipeline, error) { return lb2025.New(ts) },
		func(ts []*table.Table) (fastpath.Pipeline, error) { return lb2025udp.New(ts) }},
	"lb-2026": {lb2026.Schema,
		func(ts []*table.Table) (fastpath.Pipeline, error) { return lb2026.New(ts) },
		func(ts []*table.Table) (fastpath.Pipeline, error) { return lb2026udp.New(ts) }},
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
func Tables(v, name string, r io.Reader) ([]*table.Table, error) {
	x, err := lookup(v)
	if err != nil {
		return nil, err
	}
	return table.Load(x.schema, name, r)
}

// New returns a version's fast path on HostRaw over tables made by Tables.
func New(v string, tables []*table.Table) (fastpath.Pipeline, error) {
	x, err := lookup(v)
	if err != nil {
		return nil, err
	}
	return x.new(tables)
}

// NewSocket returns a version's fast path on LinuxUDP over tables made by
// Tables (both fast paths have the same tables): frames enter as the wire
// had them and leave for the kernel, which frames them anew.
func NewSocket(v string, tables []*table.Table) (fastpath.Pipeline, error) {
	x, err := lookup(v)
	if err != nil {
		return nil, err
	}
	return x.socket(tables)
}

// Part is a generated fast path and the schema its tables are made from.
type Part struct {
	Schema *packet.Schema
	New    func([]*table.Table) (fastpath.Pipeline, error)
}

// hosts are the host parts of each version, by the graph of the device's
// program whose passed or punted frames they run (version@PRG).
var hosts = map[string]map[string]Part{
	"lb-2026": {"LB2026@XDPSmall": lb2026Host, "LB2026@BMv2Small": lb2026Host},
}

var lb2026Host = Part{lb2026host.Schema, func(ts []*table.Table) (fastpath.Pipeline, error) { return lb2026host.New(ts) }}

// Host returns the host part of version v split with the device whose
// program runs graph (its name in the program, as nsc compile wrote it).
func Host(v, graph string) (Part, error) {
	if _, err := lookup(v); err != nil {
		return Part{}, err
	}
	p, ok := hosts[v][graph]
	if !ok {
		have := slices.Sorted(maps.Keys(hosts[v]))
		return Part{}, fmt.Errorf("no host part of %s for a device running graph %s (have %q)", v, graph, have)
	}
	return p, nil
}
