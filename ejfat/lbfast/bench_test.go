package lbfast_test

import (
	"encoding/hex"
	"os"
	"testing"

	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/packet"
)

// v2Forward is the 70-byte IPv4 LB v2 frame of ejfat-lb-pipeline.md §10
// (tick 10 to LB 0 of the reference configuration).
const v2Forward = "00aabbccddee0011223344550800450000380001000040116" + "2ae0a0102020a01020304d24c42002417ac4c42020000000001000000000000000a" + "736f6d65207061796c6f6164"

func BenchmarkFastLB2025(b *testing.B) {
	f, err := os.Open("../testdata/lb-2025.tables")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ts, err := lbfast.Tables("lb-2025", "lb-2025.tables", f)
	if err != nil {
		b.Fatal(err)
	}
	pl, err := lbfast.New("lb-2025", ts)
	if err != nil {
		b.Fatal(err)
	}
	frame, _ := hex.DecodeString(v2Forward)
	buf := make([]byte, 2*packet.Headroom+len(frame))
	b.ReportAllocs()
	for b.Loop() {
		copy(buf[packet.Headroom:], frame)
		if r := pl.Process(buf, packet.Headroom, len(frame)); r.Sink < 0 {
			b.Fatalf("dropped at %v", pl.DropSite(r.Drop))
		}
	}
}
