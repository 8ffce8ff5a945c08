package p4_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

// back reads a program's table_add lines (its golden .entries file) with
// packet.ParseEntries and maps them back to the model: the model's table
// and action names (the program qualifies them for BMv2, which the test
// undoes by its own rule), an lpm key the program matches as ternary
// (v1model) back to value/prefix length, and a priority the model's table
// does not take (xsa's width - prefix length for an lpm TCAM) checked and
// left out.
func back(t *testing.T, prog *p4.Program, arch string, lines []byte, model func(string) (*packet.TableSpec, bool)) []packet.TableEntry {
	t.Helper()
	es, err := packet.ParseEntries("entries", bytes.NewReader(lines), prog.Tables.TableSpec)
	if err != nil {
		t.Fatal(err)
	}
	unqual := func(s string) string {
		if arch == p4.V1Model && s != "NoAction" { // core.p4's is not the control's
			c, name, ok := strings.Cut(s, ".")
			if !ok || c != "IngressImpl" {
				t.Errorf("v1model name %q is not qualified by the ingress control", s)
			}
			return name
		}
		if strings.Contains(s, ".") {
			t.Errorf("xsa name %q is qualified; p4bm's runsim.txt uses bare names", s)
		}
		return s
	}
	var out []packet.TableEntry
	for _, te := range es {
		p4spec, _ := prog.Tables.TableSpec(te.Table)
		name := unqual(te.Table)
		spec, ok := model(name)
		if !ok {
			t.Fatalf("table %s (%s) is not the model's", name, te.Table)
		}
		e := te.Entry
		if a := unqual(p4spec.Actions[e.Action].Name); spec.Actions[e.Action].Name != a {
			t.Errorf("%s: action %d is %s in the program, %s in the model", name, e.Action, a, spec.Actions[e.Action].Name)
		}
		lpmLen := -1
		for i, k := range spec.Keys {
			m := &e.Keys[i]
			switch {
			case k.Kind == packet.LPM && p4spec.Keys[i].Kind == packet.Ternary:
				n := prefixLen(m.Mask, k.Width)
				if n < 0 {
					t.Errorf("%s: key %s: mask %v is not a prefix", name, k.Name, m.Mask)
				}
				*m = packet.KeyMatch{Value: m.Value, PrefixLen: n}
			case k.Kind != p4spec.Keys[i].Kind:
				t.Errorf("%s: key %s is %s in the program, %s in the model", name, k.Name, p4spec.Keys[i].Kind, k.Kind)
			}
			if k.Kind == packet.LPM {
				lpmLen = m.PrefixLen
				if p4spec.Keys[i].Kind == packet.LPM {
					lpmLen = e.Keys[i].PrefixLen
				}
			}
		}
		if !spec.NeedsPriority() && p4spec.NeedsPriority() {
			var w int
			for _, k := range spec.Keys {
				if k.Kind == packet.LPM {
					w = k.Width
				}
			}
			if e.Priority != w-lpmLen {
				t.Errorf("%s: priority %d for a /%d prefix of %d bits, want %d", name, e.Priority, lpmLen, w, w-lpmLen)
			}
			e.Priority = 0
		}
		out = append(out, packet.TableEntry{Table: name, Entry: e})
	}
	return out
}

// prefixLen is n if mask is n ones then zeros (of width w), else -1.
func prefixLen(mask packet.Value, w int) int {
	for n := 0; n <= w; n++ {
		if packet.PrefixMask(w, n) == mask {
			return n
		}
	}
	return -1
}

// TestEntriesBack checks the golden .entries against the interpreter's
// view of the same tables: read back and mapped to the model's names, they
// are the entries of the original script (keys, actions, parameters,
// priorities), and tables loaded from each answer lookups the same.
func TestEntriesBack(t *testing.T) {
	for _, gc := range golden {
		t.Run(name(gc.version, gc.arch), func(t *testing.T) {
			prog, m, _, err := build(t, "ejfat/"+gc.version+".nsc", gc.lpg, gc.prg, gc.arch)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := os.ReadFile(filepath.Join("testdata", name(gc.version, gc.arch)+".entries"))
			if err != nil {
				t.Fatal(err)
			}
			want := entries(t, m, gc.tables)
			got := back(t, prog, gc.arch, lines, m.Schema.TableSpec)
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(packet.Entry{}, "Line"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("entries read back differ from the script (-script +program):\n%s", diff)
			}
			// The same lookups: random keys and keys made from the entries.
			p4ts := loadP4Tables(t, prog, lines)
			ts, err := table.Load(m.Schema, gc.tables, bytes.NewReader(scriptBytes(t, gc.tables)))
			if err != nil {
				t.Fatal(err)
			}
			rnd := rand.New(rand.NewPCG(1, 2))
			for _, tb := range prog.Tables {
				i, _ := m.Schema.Table(tb.Model)
				mt, pt := ts[i], p4ts[ident(tb.Name)]
				var probes [][]packet.Value
				for _, e := range mt.Entries() {
					var k []packet.Value
					for j, km := range e.Keys {
						v := km.Value
						if mt.Spec().Keys[j].Kind == packet.Range {
							v = km.Lo
						}
						k = append(k, v)
					}
					probes = append(probes, k)
					// The same key with low bits changed, for prefixes.
					k2 := append([]packet.Value(nil), k...)
					for j := range k2 {
						k2[j] = k2[j].Xor(packet.V(rnd.Uint64() & 0xff)).And(packet.Mask(mt.Spec().Keys[j].Width))
					}
					probes = append(probes, k2)
				}
				for range 200 {
					var k []packet.Value
					for _, ks := range mt.Spec().Keys {
						k = append(k, packet.Value{Hi: rnd.Uint64(), Lo: rnd.Uint64()}.And(packet.Mask(ks.Width)))
					}
					probes = append(probes, k)
				}
				for _, k := range probes {
					a, hitA := mt.Lookup(k)
					b, hitB := pt.Lookup(k)
					if hitA != hitB || hitA && (a.Action != b.Action || !cmp.Equal(a.Params, b.Params)) {
						t.Errorf("%s: key %v: model %v %+v, program %v %+v", tb.Model, k, hitA, a, hitB, b)
					}
				}
			}
		})
	}
}

func scriptBytes(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "ejfat", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The entry conversion on a table of every kind: a ternary key, a range
// (v1model), an lpm without priorities (xsa: priority width - length), an
// lpm with priorities (v1model: ternary), and a default with parameters.
const kindsModel = `
include "lib/inet.nsc"
include "ejfat/p4.nsc"
metadata m { mark: 8 }
action tag(v: 8) { m.mark = v }
action none() { }
table routes { key { ipv4.dst: lpm } actions { tag, none } default tag(7) }
table ranked { key { ipv4.src: lpm } actions { tag, none } priorities default none }
table mixed { key { ipv4.proto: exact  ipv4.ttl: ternary  ipv4.id: range } actions { tag, none } default none }
lpg L {
  node RxQueue { op input  port out -> Eth }
  node Eth { op extract ethernet  port true -> IPv4  port false -> Bad }
  node IPv4 { op extract ipv4  port true -> A  port false -> Bad }
  node Bad { op drop "parse" }
  node A { op lookup routes  port tag -> B  port none -> B }
  node B { op lookup ranked  port tag -> C  port none -> C }
  node C { op lookup mixed  port tag -> TxQueue  port none -> TxQueue }
  node TxQueue { op emit }
}`

const kindsScript = `
table_add routes tag 0x0a000000/8 => 1
table_add routes tag 0x0a010000/16 => 2
table_add ranked tag 0x0a000000/8 => 3 1
table_add ranked none 0x0a010000/16 => 9
table_add mixed tag 17 0x40&&&0xf0 100->200 => 4 2
`

func TestEntriesKinds(t *testing.T) {
	m := testutil.ModelSource(t, kindsModel)
	es, err := packet.ParseEntries("kinds", strings.NewReader(kindsScript), m.Schema.TableSpec)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		p4.XSA: `table_add routes tag 0x0a000000/8 => 0x01 24
table_add routes tag 0x0a010000/16 => 0x02 16
table_add ranked tag 0x0a000000/8 => 0x03 1
table_add ranked none 0x0a010000/16 => 9
`,
		p4.V1Model: `table_add IngressImpl.routes IngressImpl.tag 0x0a000000/8 => 0x01
table_add IngressImpl.routes IngressImpl.tag 0x0a010000/16 => 0x02
table_add IngressImpl.ranked IngressImpl.tag 0x0a000000&&&0xff000000 => 0x03 1
table_add IngressImpl.ranked IngressImpl.none 0x0a010000&&&0xffff0000 => 9
table_add IngressImpl.mixed IngressImpl.tag 0x11 0x40&&&0xf0 0x0064->0x00c8 => 0x04 2
`,
	}
	for _, arch := range []string{p4.XSA, p4.V1Model} {
		prog, _, _, err := buildModel(t, m, "L", "BMv2", arch, "")
		if arch == p4.XSA {
			// xsa refuses the range key; the other tables convert.
			if err == nil || !strings.Contains(err.Error(), "node C: table mixed: key ipv4.id is a range match") {
				t.Fatalf("xsa: err = %v, want the range key refused", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := prog.Tables.Entries(&b, es); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[arch], b.String()); diff != "" {
			t.Errorf("%s entries (-want +got):\n%s", arch, diff)
		}
		got := back(t, prog, arch, b.Bytes(), m.Schema.TableSpec)
		if diff := cmp.Diff(es, got, cmpopts.IgnoreFields(packet.Entry{}, "Line"), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: read back (-script +program):\n%s", arch, diff)
		}
	}
	// xsa without the range table: lpm tables take priorities.
	src := strings.Replace(kindsModel, "op lookup mixed  port tag -> TxQueue  port none -> TxQueue", "op nop  port out -> TxQueue", 1)
	m = testutil.ModelSource(t, src)
	es, _ = packet.ParseEntries("kinds", strings.NewReader(kindsScript[:strings.Index(kindsScript, "table_add mixed")]), m.Schema.TableSpec)
	prog, _, _, err := buildModel(t, m, "L", "U280", p4.XSA, "")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := prog.Tables.Entries(&b, es); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[p4.XSA], b.String()); diff != "" {
		t.Errorf("xsa entries (-want +got):\n%s", diff)
	}
	got := back(t, prog, p4.XSA, b.Bytes(), m.Schema.TableSpec)
	if diff := cmp.Diff(es, got, cmpopts.IgnoreFields(packet.Entry{}, "Line"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("xsa: read back (-script +program):\n%s", diff)
	}
}

// ident is a table_add name without the control's prefix: the P4
// interpreter's name of the table.
func ident(name string) string { return name[strings.LastIndex(name, ".")+1:] }
