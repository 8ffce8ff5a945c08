package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/difftest"
)

// nsc run sends what nsc run --interp sends, with the same counters, for
// the frames at the edges of length (difftest.Edges of ejfat.EdgeSeeds),
// up to past 64 KiB.
func TestRunEdges(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "edges.pcap")
	writeEdges(t, in)
	for _, v := range ejfat.Versions {
		t.Run(v, func(t *testing.T) {
			tables := "ejfat/testdata/" + v + ".tables"
			if v == "lb-2021" {
				tables = "ejfat/testdata/seed000.tables"
			}
			fast, interp := filepath.Join(dir, v+"-fast.pcap"), filepath.Join(dir, v+"-interp.pcap")
			code, fstdout, stderr := nsc(t, "run", "--lb", v, "--tables", tables, "--in", in, "--out", fast)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			code, istdout, stderr := nsc(t, "run", "--lb", v, "--tables", tables, "--in", in, "--out", interp, "--interp")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			f, _ := os.ReadFile(fast)
			i, _ := os.ReadFile(interp)
			if len(f) < 65536 || !bytes.Equal(f, i) {
				t.Errorf("nsc run wrote %d bytes, nsc run --interp %d, not the same", len(f), len(i))
			}
			if strings.ReplaceAll(fstdout, fast, "OUT") != strings.ReplaceAll(istdout, interp, "OUT") {
				t.Errorf("counters differ:\nrun:\n%s\nrun --interp:\n%s", fstdout, istdout)
			}
		})
	}
}

// writeEdges writes the frames at the edges of length to a pcap.
func writeEdges(t *testing.T, name string) {
	t.Helper()
	seeds, err := ejfat.EdgeSeeds(difftest.EdgeSizes)
	if err != nil {
		t.Fatal(err)
	}
	frames := difftest.Edges(seeds, difftest.EdgeSizes)
	var b bytes.Buffer
	w := pcapgo.NewWriter(&b)
	if err := w.WriteFileHeader(262144, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(int64(i), 0), CaptureLength: len(f), Length: len(f)}
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
