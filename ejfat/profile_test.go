package ejfat

import (
	"bytes"
	"flag"
	"os"
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
// with the reference tables. Behind kernel sockets (LinuxUDP, nsc lb) the
// frames are IPv4 with UDP checksum 0, as ejfat/lbnet frames a datagram.
func hotTraffic(t *testing.T, version, prg string) (tables string, frames [][]byte) {
	tables = "testdata/" + version + ".tables"
	if version == "lb-2021" {
		tables, frames = "testdata/seed000.tables", seedScapyFrames(t)
	} else {
		v4 := gplFrame(t, false, gplA7LB(), gplA7Payload())
		v6 := gplFrame(t, true, gplA7LB(), gplA7Payload())
		for range 8 {
			frames = append(frames, v4)
		}
		frames = append(frames, v6, v6)
	}
	if prg == HostPRG {
		return tables, frames
	}
	var v4 [][]byte
	for _, f := range frames {
		if f[12] == 0x08 && f[13] == 0x00 {
			f = bytes.Clone(f)
			f[14+20+6], f[14+20+7] = 0, 0 // lbnet frames a datagram with UDP checksum 0
			v4 = append(v4, f)
		}
	}
	return tables, v4
}

// profileFile is where the profile of a version's fast path on prg is.
func profileFile(version, prg string) string {
	if prg == HostPRG {
		return "lbfast/testdata/" + version + ".profile"
	}
	return "lbfast/testdata/" + version + "-udp.profile"
}

// TestHotProfiles fails when a profile is not what the interpreter gives
// on the traffic today (go test ./ejfat -run HotProfiles -update rewrites
// them; then regenerate the fast paths).
func TestHotProfiles(t *testing.T) {
	for _, tc := range []struct{ version, prg string }{
		{"lb-2021", HostPRG}, {"lb-2025", HostPRG}, {"lb-2026", HostPRG},
		{"lb-2021", "LinuxUDP"}, {"lb-2025", "LinuxUDP"}, {"lb-2026", "LinuxUDP"},
	} {
		version, prg := tc.version, tc.prg
		t.Run(version+"@"+prg, func(t *testing.T) {
			tables, frames := hotTraffic(t, version, prg)
			script, err := os.ReadFile(tables)
			if err != nil {
				t.Fatal(err)
			}
			mach, err := Interpreter(version, prg, tables, bytes.NewReader(script))
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
			file := profileFile(version, prg)
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
				t.Errorf("%s is stale: run go generate ./... (-have +want):\n%s", file, diff)
			}
			if sent == 0 {
				t.Errorf("no frame sent")
			}
		})
	}
}
