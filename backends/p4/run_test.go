package p4_test

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/p4/p4sim"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// loadP4Tables fills the P4 interpreter's tables from table_add lines in
// the program's names.
func loadP4Tables(t testing.TB, prog *p4.Program, lines []byte) map[string]*table.Table {
	t.Helper()
	ts, err := p4sim.Tables(prog, lines)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// lbSetup builds an LB version's program; load runs a program text (the
// program's, or a changed copy) in the P4 interpreter with the converted
// entries, interp makes nsc's interpreter on the same embedded graph with
// the original script.
func lbSetup(t *testing.T, version, lpg, prg, arch, tables string) (prog *p4.Program, load func(src string) *p4sim.Machine, interp func() *sim.Machine) {
	t.Helper()
	prog, m, _, err := build(t, "ejfat/"+version+".nsc", lpg, prg, arch)
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	if err := prog.Tables.Entries(&lines, entries(t, m, tables)); err != nil {
		t.Fatal(err)
	}
	load = func(src string) *p4sim.Machine {
		parsed, err := p4sim.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		return p4sim.New(parsed, arch, loadP4Tables(t, prog, lines.Bytes()))
	}
	interp = func() *sim.Machine {
		mach, err := ejfat.Interpreter(version, prg, tables, bytes.NewReader(scriptBytes(t, tables)))
		if err != nil {
			t.Fatal(err)
		}
		return mach
	}
	return prog, load, interp
}

// TestAgainstInterpreter runs the crafted EJFAT corpus and frames derived
// from it through each golden program (in the P4 interpreter of
// p4sim, with the converted entries) and through nsc's interpreter
// on the same embedded graph with the original script: every frame must
// leave with the same bytes or be dropped by both, and (v1model) every
// counter must count what the interpreter counts under its label.
func TestAgainstInterpreter(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	seeds, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	frames := append(seeds, difftest.Mutate(seeds, n, 5)...)
	for _, gc := range golden {
		t.Run(name(gc.version, gc.arch), func(t *testing.T) {
			prog, load, interp := lbSetup(t, gc.version, gc.lpg, gc.prg, gc.arch, gc.tables)
			run, mach := load(string(prog.Source)), interp()
			_, ends := compareP4(t, "P4", run, mach, frames, true)
			sent := ends["sent"]
			if sent < 50 {
				t.Errorf("only %d frames leave: the corpus exercises too little", sent)
			}
			t.Logf("%d frames, %d sent", len(frames), sent)
			if gc.arch != p4.V1Model {
				return
			}
			if diff := p4sim.CounterDiff(mach, prog.Source, run); diff != "" {
				t.Errorf("counters differ (-interpreter +P4):\n%s", diff)
			}
		})
	}
}

// The worked example of ejfat-lb-pipeline.md §10: the 70-byte IPv4 v2
// frame to LB 0 leaves the lb-2026 program as the spec's 54 bytes, on both
// architectures (the spec, not nsc's interpreter, is the oracle here).
func TestSpecExample(t *testing.T) {
	in, _ := hex.DecodeString("00aabbccddee0011223344550800450000380001000040116" + "2ae0a0102020a01020304d24c42002417ac4c42020000000001000000000000000a" + "736f6d65207061796c6f6164")
	want, _ := hex.DecodeString("112233445566" + "00aabbccddee" + "0800" + "4500" + "0028" + "0001" + "0000" + "3f11" + "f827" + "0a010203" + "aabbccdd" + "04d2" + "4557" + "0014" + "016e" + "736f6d65207061796c6f6164")
	for _, arch := range []string{p4.XSA, p4.V1Model} {
		prog, load, _ := lbSetup(t, "lb-2026", "LB2026", "U280", arch, "lb-2026.tables")
		got, err := load(string(prog.Source)).Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: got\n%x\nwant (§10)\n%x", arch, got, want)
		}
	}
}

// TestMutatedHeaders is issue 19's BMv2 run: frames of the EJFAT corpus
// with 1-3 of their header bytes changed (an unknown EtherType, IP
// protocol or LB version among them), 10,000 per LB model, go through the
// v1model program and through nsc's interpreter: the same verdicts, bytes
// and counters. The P4 interpreter ends a select no case takes with
// accept, as BMv2 does, and stops on a field of an invalid header; so the
// same program with its `default: noMatch` arms taken out (what the
// generator wrote before) must differ.
func TestMutatedHeaders(t *testing.T) {
	seeds, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	noDefault := regexp.MustCompile(`(?m)^\s*default: noMatch;\n`)
	for _, gc := range golden {
		if gc.arch != p4.V1Model {
			continue
		}
		t.Run(gc.version, func(t *testing.T) {
			prog, load, interp := lbSetup(t, gc.version, gc.lpg, gc.prg, gc.arch, gc.tables)
			frames := mutateHeaders(t, load(string(prog.Source)), seeds, 10000, 19)
			run, mach := load(string(prog.Source)), interp()
			_, ends := compareP4(t, "P4", run, mach, frames, true)
			if diff := p4sim.CounterDiff(mach, prog.Source, run); diff != "" {
				t.Errorf("counters differ (-interpreter +P4):\n%s", diff)
			}
			src := noDefault.ReplaceAllString(string(prog.Source), "")
			if src == string(prog.Source) {
				// lb-2021's parse fails into no drop: every select goes on.
				if strings.Contains(src, noMatchState) {
					t.Fatal("the program has a noMatch state and no default: noMatch arm")
				}
				t.Logf("%d frames, %d sent; no select fails the parse", len(frames), ends["sent"])
				return
			}
			run, mach = load(src), interp()
			bad, _ := compareP4(t, "", run, mach, frames, false)
			counters := p4sim.CounterDiff(mach, []byte(src), run)
			if bad == 0 && counters == "" {
				t.Error("without its default arms the program still agrees: the test does not see BMv2's accept")
			}
			t.Logf("%d frames, %d sent; without the default arms %d differ, counters agree: %v", len(frames), ends["sent"], bad, counters == "")
		})
	}
}

// noMatchState is the parser state a select's default goes to when it
// fails the parse.
const noMatchState = "state noMatch {"

// mutateHeaders derives n frames from seeds, reproducibly from seed, each
// with 1-3 bytes changed among the header bytes of its seed (those the
// program's parser takes from it).
func mutateHeaders(t *testing.T, run *p4sim.Machine, seeds [][]byte, n int, seed uint64) [][]byte {
	t.Helper()
	var headed [][]byte
	var lens []int
	for _, f := range seeds {
		if _, err := run.Run(f); err != nil {
			t.Fatalf("seed %x: %v", f, err)
		}
		if run.Consumed() > 0 {
			headed, lens = append(headed, f), append(lens, run.Consumed())
		}
	}
	rnd := rand.New(rand.NewPCG(seed, 19))
	out := make([][]byte, n)
	for i := range out {
		k := rnd.IntN(len(headed))
		f := append([]byte(nil), headed[k]...)
		for range 1 + rnd.IntN(3) {
			f[rnd.IntN(lens[k])] ^= byte(1 + rnd.IntN(255))
		}
		out[i] = f
	}
	return out
}

// The harness is not vacuous: programs broken on purpose (the end-around
// carry left out, a popped header's words added instead of taken out, a
// header not emitted, a TTL decremented twice) differ from the
// interpreter on the crafted corpus.
func TestHarnessCatchesMutants(t *testing.T) {
	prog, load, interp := lbSetup(t, "lb-2026", "LB2026", "U280", p4.XSA, "lb-2026.tables")
	mach := interp()
	seeds, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	for _, mut := range [][2]string{
		{"sum = s[15:0] + (bit<16>)s[16:16];", "sum = s[15:0];"},
		{"csum_add(sum_udp, popped);", "csum_add(sum_udp, ~popped);"},
		{"packet.emit(hdr.lb_v2);", ""},
		{"hdr.ipv4.ttl - 8w1", "hdr.ipv4.ttl - 8w2"},
	} {
		src := strings.ReplaceAll(string(prog.Source), mut[0], mut[1])
		if src == string(prog.Source) {
			t.Fatalf("mutation %q does not apply", mut[0])
		}
		if bad, _ := compareP4(t, "", load(src), mach, seeds, false); bad == 0 {
			t.Errorf("mutant %q -> %q: no frame differs", mut[0], mut[1])
		}
	}
}
