package ejfat

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/dataflow"
)

var updateProfiles = flag.Bool("update", false, "rewrite lbfast/testdata's profiles")

// The checked-in fast paths lay out first the path of the traffic an LB
// mostly sees: data frames to forward. Their profiles (lbfast/testdata,
// read by nsc compile --profile) are the interpreter's node runs on it:
// for lb-2021 seed 000's two transfers with its table script, for lb-2025
// and lb-2026 A.7's IPv4 v2 frame eight times and its IPv6 twin twice,
// with the reference tables.
func hotTraffic(t *testing.T, version string) (tables string, frames [][]byte) {
	if version == "lb-2021" {
		return "testdata/seed000.tables", seedScapyFrames(t)
	}
	v4 := gplFrame(t, false, gplA7LB(), gplA7Payload())
	v6 := gplFrame(t, true, gplA7LB(), gplA7Payload())
	for range 8 {
		frames = append(frames, v4)
	}
	return "testdata/" + version + ".tables", append(frames, v6, v6)
}

// TestHotProfiles fails when a profile is not what the interpreter gives
// on the traffic today (go test ./ejfat -run HotProfiles -update rewrites
// them; then regenerate the fast paths).
func TestHotProfiles(t *testing.T) {
	for _, version := range Versions {
		t.Run(version, func(t *testing.T) {
			tables, frames := hotTraffic(t, version)
			script, err := os.ReadFile(tables)
			if err != nil {
				t.Fatal(err)
			}
			mach, err := Interpreter(version, HostPRG, tables, bytes.NewReader(script))
			if err != nil {
				t.Fatal(err)
			}
			sent := 0
			for _, f := range frames {
				mach.Run(f, func(*dataflow.Node, []byte) { sent++ })
			}
			if sent != len(frames) {
				t.Fatalf("%d of %d frames forwarded: not the traffic to lay out for", sent, len(frames))
			}
			var got bytes.Buffer
			if _, err := golang.Profile(mach.Counters().Nodes).WriteTo(&got); err != nil {
				t.Fatal(err)
			}
			file := "lbfast/testdata/" + version + ".profile"
			if *updateProfiles {
				if err := os.WriteFile(file, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("%s is stale (-have +want):\n%s", file, diff)
			}
			if !strings.Contains(got.String(), "\nTxQueue ") {
				t.Errorf("no frame reached TxQueue")
			}
		})
	}
}
