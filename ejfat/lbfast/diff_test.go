package lbfast_test

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/sim"
)

// tablesFile is each version's table script in ejfat/testdata.
var tablesFile = map[string]string{
	"lb-2021": "../testdata/seed000.tables",
	"lb-2025": "../testdata/lb-2025.tables",
	"lb-2026": "../testdata/lb-2026.tables",
}

// pair returns a version's fast path and the interpreter on the graph the
// fast path was generated from (the LPG on HostRaw), with the same table
// entries loaded into each.
func pair(t testing.TB, version string) (fastpath.Pipeline, *sim.Machine) {
	return pairOn(t, version, ejfat.HostPRG)
}

// pairOn is pair on PRG prg (HostRaw or LinuxUDP).
func pairOn(t testing.TB, version, prg string) (fastpath.Pipeline, *sim.Machine) {
	t.Helper()
	script, err := os.ReadFile(tablesFile[version])
	if err != nil {
		t.Fatal(err)
	}
	return pairScript(t, version, prg, tablesFile[version], string(script))
}

// pairScript is pairOn with the table entries of a script.
func pairScript(t testing.TB, version, prg, name, script string) (fastpath.Pipeline, *sim.Machine) {
	t.Helper()
	ts, err := lbfast.Tables(version, name, strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	var pl fastpath.Pipeline
	if prg == ejfat.HostPRG {
		pl, err = lbfast.New(version, ts)
	} else {
		pl, err = lbfast.NewSocket(version, ts)
	}
	if err != nil {
		t.Fatal(err)
	}
	mach, err := ejfat.Interpreter(version, prg, name, strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	return pl, mach
}

// v2Forward is the 70-byte IPv4 LB v2 frame of ejfat-lb-pipeline.md §10
// (tick 10 to LB 0 of the reference configuration).
const v2Forward = "00aabbccddee0011223344550800450000380001000040116" + "2ae0a0102020a01020304d24c42002417ac4c42020000000001000000000000000a" + "736f6d65207061796c6f6164"

// seeds are the crafted frames of ejfat.Corpus (seed 000's transfers
// among them) and the example frame of the 2026 spec.
func seeds(t testing.TB) [][]byte {
	fs, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := hex.DecodeString(v2Forward)
	return append(fs, ex)
}

// TestFastPathAgainstInterpreter runs the crafted corpus and 100,000
// frames derived from it (bytes flipped in the headers, cut, extended, or
// random) through each version's generated fast path and the interpreter:
// the same frames must leave with the same bytes or end at the same drop,
// and every counter must agree.
func TestFastPathAgainstInterpreter(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 10000
	}
	for _, v := range ejfat.Versions {
		for _, prg := range []string{ejfat.HostPRG, "LinuxUDP"} {
			t.Run(v+"/"+prg, func(t *testing.T) {
				pl, m := pairOn(t, v, prg)
				s := seeds(t)
				where := difftest.Compare(t, pl, m, append(s, difftest.Mutate(s, n, 1)...))
				if where["sink TxWire"] < 100 || len(where) < 4 {
					t.Errorf("the corpus exercises too little: %v", where)
				}
				t.Logf("%d crafted + %d derived frames: %v", len(s), n, where)
			})
		}
	}
}

// TestFastPathTableShapes: whether the generated code probes a table's
// packed index, word index, interval index or scan inline or calls the
// table's lookup depends on the entries (empty tables; filters whose
// entries' masks differ; more epochs); every way agrees with the
// interpreter.
func TestFastPathTableShapes(t *testing.T) {
	// Per case, the tables with entries the generated code probes inline
	// (the rest it leaves to the table's lookup).
	inline := map[string]map[string]bool{
		"mixed masks": {"mac_dst_filter_table": true, "ipv4_src_filter_table": true, "ipv6_src_filter_table": true,
			"epoch_assign_table": true, "load_balance_calendar_table": true, "member_info_lookup_table": true},
		"indexed epochs": {"mac_dst_filter_table": true, "ip_dst_filter_table": true, "ipv4_src_filter_table": true,
			"ipv6_src_filter_table": true, "epoch_assign_table": true, "load_balance_calendar_table": true, "member_info_lookup_table": true},
	}
	for _, v := range ejfat.Versions {
		script, err := os.ReadFile(tablesFile[v])
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct{ name, script string }{{"empty", ""}}
		if v != "lb-2021" {
			// Filters of mixed masks: the mac filter is scanned, the ip
			// filter (a 128-bit key) looked up by the table; twelve epoch
			// entries are indexed by intervals, probed inline.
			epochs := ""
			for lb := 2; lb <= 5; lb++ {
				epochs += fmt.Sprintf("table_add epoch_assign_table do_assign_epoch %d 0x0/0 => 0 63\n", lb)
				epochs += fmt.Sprintf("table_add epoch_assign_table do_assign_epoch %d 0x10/60 => 1 5\n", lb)
			}
			cases = append(cases, struct{ name, script string }{"mixed masks", string(script) +
				"table_add mac_dst_filter_table set_mac_sa 0x1&&&0xf 0x0000000000f1 => 0x00aabbccddee 1\n" +
				"table_add ip_dst_filter_table set_ip_sa 0x1&&&0xf 0x0800 0x0a0102ff => 0x0a0102ff 0 1\n"},
				struct{ name, script string }{"indexed epochs", string(script) + epochs})
		}
		for _, tc := range cases {
			t.Run(v+"/"+tc.name, func(t *testing.T) {
				pl, m := pairScript(t, v, ejfat.HostPRG, tc.name, tc.script)
				for _, tb := range pl.Tables() {
					pr := tb.Probes()
					probed := len(pr.Packed.Slots) > 0 || len(pr.Words.Slots) > 0 || len(pr.Scan.Rows) > 0 || pr.Intervals != nil
					if name := tb.Spec().Name; tb.Len() > 0 && probed != inline[tc.name][name] {
						t.Errorf("%s: probed inline %v", name, probed)
					}
				}
				s := seeds(t)
				where := difftest.Compare(t, pl, m, append(s, difftest.Mutate(s, 5000, 2)...))
				if tc.script != "" && where["sink TxWire"] < 100 {
					t.Errorf("the corpus exercises too little: %v", where)
				}
			})
		}
	}
}

// FuzzFastPath compares each version's fast paths (HostRaw, LinuxUDP)
// with the interpreter on fuzzed frames.
func FuzzFastPath(f *testing.F) {
	for _, fr := range seeds(f) {
		f.Add(fr)
	}
	type both struct {
		name string
		pl   fastpath.Pipeline
		m    *sim.Machine
	}
	var ps []both
	for _, v := range ejfat.Versions {
		for _, prg := range []string{ejfat.HostPRG, "LinuxUDP"} {
			pl, m := pairOn(f, v, prg)
			ps = append(ps, both{v + "/" + prg, pl, m})
		}
	}
	var buf []byte
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, p := range ps {
			want := difftest.Interp(p.m, frame)
			got := difftest.Fast(p.pl, frame, &buf)
			if want != got {
				t.Fatalf("%s: interpreter %+v, fast path %+v", p.name, want, got)
			}
		}
	})
}
