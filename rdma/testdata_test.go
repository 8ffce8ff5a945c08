package rdma_test

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/dragonet-go/nsc/ejfat"
)

var update = flag.Bool("update", false, "rewrite rdma/testdata from the tests' tables and crafted traffic")

// TestTestdataUpToDate: rdma/testdata holds the tests' tables and crafted
// traffic for nsc verify --tables --frames (docs/rdma.md): the go-back-N
// and the IRN scenarios' frames, in the order of their names, each
// scenario's in its order. go test ./rdma -run UpToDate -update rewrites
// them.
func TestTestdataUpToDate(t *testing.T) {
	pcap := func(sc map[string][]step) []byte {
		var frames [][]byte
		for _, name := range slices.Sorted(maps.Keys(sc)) {
			for _, s := range sc[name] {
				frames = append(frames, s.frame)
			}
		}
		var b bytes.Buffer
		if err := ejfat.WritePcap(&b, frames); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for file, want := range map[string][]byte{
		"testdata/rdma.tables": []byte(tablesText),
		"testdata/naa.pcap":    pcap(scenarios()),
		"testdata/irn.pcap":    pcap(irnScenarios()),
	} {
		if *update {
			if err := os.WriteFile(file, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, want) {
			t.Errorf("rdma/%s is stale (%v): go test ./rdma -run UpToDate -update", file, err)
		}
	}
}
