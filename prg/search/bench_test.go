package search_test

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/models"

	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/prg"
	"github.com/dragonet-go/nsc/prg/search"
)

// BenchmarkSearch4Ports: the reassembler's four receive ports on the
// 82599, every assignment tried (52, each embedded and costed).
func BenchmarkSearch4Ports(b *testing.B) { benchmarkSearch(b, 4) }

// BenchmarkSearch10Ports: ten ports, the greedy pass.
func BenchmarkSearch10Ports(b *testing.B) { benchmarkSearch(b, 10) }

func benchmarkSearch(b *testing.B, ports int) {
	m, l, p := reassembler(b)
	flows, err := search.PortFlows(m.Schema, false, 19000, ports)
	if err != nil {
		b.Fatal(err)
	}
	var r *search.Result
	for b.Loop() {
		if r, err = search.Search(l, p, flows, embed.ForSearch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(r.Tried), "configs")
}

// BenchmarkEmbedLB2026 embeds lb-2026 into the 82599 as the model
// declares it (no filter, the baseline) and configured with a filter per
// data port to a queue of its own (four more Rx sinks to embed behind).
// lb-2026 brings its own UDP header (udp-raw.nsc), so the 82599's graph is
// loaded over it, without its include of lib/inet.nsc.
func BenchmarkEmbedLB2026(b *testing.B) {
	nic, err := fs.ReadFile(models.FS, "inet/i82599.nsc")
	if err != nil {
		b.Fatal(err)
	}
	nic = []byte(strings.Replace(string(nic), `include "../lib/inet.nsc"`, "", 1))
	ld := lang.Loader{Library: models.FS, ReadFile: func(name string) ([]byte, error) {
		if name == "i82599.nsc" {
			return nic, nil
		}
		return fs.ReadFile(models.FS, name)
	}}
	m, err := ld.Load("ejfat/lb-2026.nsc", "i82599.nsc")
	if err != nil {
		b.Fatal(err)
	}
	l, _ := m.Graph("LB2026")
	p, _ := m.Graph("I82599")
	var fs []prg.Filter
	for i := range 4 {
		port := uint16(19522 + i)
		fs = append(fs, prg.Filter{Proto: "udp", DPort: &port, Priority: 1, Port: fmt.Sprintf("q%d", i+1)})
	}
	configured, err := prg.Configure(p, prg.Values{"RxFilters": prg.Literal(fs)})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		g    *dataflow.Graph
	}{{"declared", p}, {"configured", configured}} {
		g := c.g
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := embed.Embed(l, g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
