package p4_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/packet"
)

// loadP4Tables fills runtime tables, by the program's table identifiers,
// from table_add lines in the program's names.
func loadP4Tables(t testing.TB, prog *p4.Program, lines []byte) map[string]*packet.Table {
	t.Helper()
	es, err := packet.ParseEntries("entries", bytes.NewReader(lines), prog.TableSpec)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*packet.Table{}
	for _, tb := range prog.Tables {
		spec, _ := prog.TableSpec(tb.Name)
		out[ident(tb.Name)] = packet.NewTable(spec)
	}
	for _, te := range es {
		if err := out[ident(te.Table)].Insert(te.Entry); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// ident is a table_add name without the control's prefix.
func ident(name string) string { return name[strings.LastIndex(name, ".")+1:] }

// counterLabels maps the program's counters to the labels they count (the
// comment on each declaration).
func counterLabels(src []byte) map[string]string {
	out := map[string]string{}
	re := regexp.MustCompile(`counter\(1, CounterType\.packets\) (\w+); // (".*")`)
	for _, m := range re.FindAllSubmatch(src, -1) {
		var label string
		fmt.Sscanf(string(m[2]), "%q", &label)
		out[string(m[1])] = label
	}
	return out
}

// TestAgainstInterpreter runs the crafted EJFAT corpus and frames derived
// from it through each golden program (in the P4 interpreter of
// p4run_test.go, with the converted entries) and through nsc's interpreter
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
			prog, m, _, err := build(t, "ejfat/"+gc.version+".nsc", gc.lpg, gc.prg, gc.arch)
			if err != nil {
				t.Fatal(err)
			}
			var lines bytes.Buffer
			if err := prog.Entries(&lines, entries(t, m, gc.tables)); err != nil {
				t.Fatal(err)
			}
			parsed, err := parseProgram(string(prog.Source))
			if err != nil {
				t.Fatal(err)
			}
			run := newMachine(parsed, gc.arch, loadP4Tables(t, prog, lines.Bytes()))
			script, err := os.ReadFile(filepath.Join("..", "..", "ejfat", "testdata", gc.tables))
			if err != nil {
				t.Fatal(err)
			}
			mach, err := ejfat.Interpreter(gc.version, gc.prg, gc.tables, bytes.NewReader(script))
			if err != nil {
				t.Fatal(err)
			}
			bad, sent := 0, 0
			for i, f := range frames {
				var want []byte
				left := false
				mach.Run(f, func(_ *dataflow.Node, data []byte) { want, left = append([]byte(nil), data...), true })
				got, err := run.run(f)
				if err != nil {
					t.Fatalf("frame %d (%x): the P4 program does not run: %v", i, f, err)
				}
				if left {
					sent++
				}
				if left != (got != nil) || !bytes.Equal(want, got) {
					bad++
					if bad <= 5 {
						k, _ := mach.LastDrop()
						t.Errorf("frame %d %x:\ninterpreter: left=%v %x (drop %v)\nP4:          left=%v %x", i, f, left, want, k, got != nil, got)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d frames differ", bad, len(frames))
			}
			if sent < 50 {
				t.Errorf("only %d frames leave: the corpus exercises too little", sent)
			}
			t.Logf("%d frames, %d sent", len(frames), sent)
			if gc.arch != p4.V1Model {
				return
			}
			// Counters: count labels, and drops summed by reason.
			c := mach.Counters()
			want := map[string]int{}
			for l, v := range c.Counts {
				want[l] += int(v)
			}
			for k, v := range c.Drops {
				want[k.Reason] += int(v)
			}
			got := map[string]int{}
			for ctr, l := range counterLabels(prog.Source) {
				got[l] = run.counts[ctr]
			}
			for l := range want {
				if _, ok := got[l]; !ok && want[l] > 0 {
					got[l] = -1 // no counter for it
				}
			}
			for l, v := range got {
				if v == 0 && want[l] == 0 {
					delete(got, l)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
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
		prog, m, _, err := build(t, "ejfat/lb-2026.nsc", "LB2026", "U280", arch)
		if err != nil {
			t.Fatal(err)
		}
		var lines bytes.Buffer
		if err := prog.Entries(&lines, entries(t, m, "lb-2026.tables")); err != nil {
			t.Fatal(err)
		}
		parsed, err := parseProgram(string(prog.Source))
		if err != nil {
			t.Fatal(err)
		}
		got, err := newMachine(parsed, arch, loadP4Tables(t, prog, lines.Bytes())).run(in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: got\n%x\nwant (§10)\n%x", arch, got, want)
		}
	}
}

// The harness is not vacuous: programs broken on purpose (the end-around
// carry left out, a popped header's words added instead of taken out, a
// header not emitted, a TTL decremented twice) differ from the
// interpreter on the crafted corpus.
func TestHarnessCatchesMutants(t *testing.T) {
	prog, m, _, err := build(t, "ejfat/lb-2026.nsc", "LB2026", "U280", p4.XSA)
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	if err := prog.Entries(&lines, entries(t, m, "lb-2026.tables")); err != nil {
		t.Fatal(err)
	}
	seeds, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	mach, err := ejfat.Interpreter("lb-2026", "U280", "lb-2026.tables", bytes.NewReader(scriptBytes(t, "lb-2026.tables")))
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
		parsed, err := parseProgram(src)
		if err != nil {
			t.Fatal(err)
		}
		run := newMachine(parsed, p4.XSA, loadP4Tables(t, prog, lines.Bytes()))
		bad := 0
		for _, f := range seeds {
			var want []byte
			left := false
			mach.Run(f, func(_ *dataflow.Node, data []byte) { want, left = append([]byte(nil), data...), true })
			got, err := run.run(f)
			if err != nil || left != (got != nil) || !bytes.Equal(want, got) {
				bad++
			}
		}
		if bad == 0 {
			t.Errorf("mutant %q -> %q: no frame differs", mut[0], mut[1])
		}
	}
}
