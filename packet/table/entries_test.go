package table

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dragonet-go/nsc/packet"
)

// seedSpecs are the EJFAT load balancer's tables as seed 000 describes them.
var seedSpecs = map[string]*packet.TableSpec{
	"dst_filter_table": {
		Name:    "dst_filter_table",
		Keys:    []packet.KeySpec{{Name: "eth.dst", Width: 48, Kind: packet.Exact}, {Name: "eth.type", Width: 16, Kind: packet.Exact}, {Name: "meta.ipdst", Width: 128, Kind: packet.Exact}},
		Actions: []packet.ActionSpec{{Name: "NoAction", Params: nil}},
	},
	"epoch_assign_table": {
		Name:       "epoch_assign_table",
		Keys:       []packet.KeySpec{{Name: "lb.tick", Width: 64, Kind: packet.LPM}},
		Actions:    []packet.ActionSpec{{Name: "do_assign_epoch", Params: []packet.Param{{Name: "epoch", Width: 32}}}},
		Priorities: true,
	},
	"load_balance_calendar_table": {
		Name:    "load_balance_calendar_table",
		Keys:    []packet.KeySpec{{Name: "meta.epoch", Width: 32, Kind: packet.Exact}, {Name: "meta.slot", Width: 9, Kind: packet.Exact}},
		Actions: []packet.ActionSpec{{Name: "do_assign_member", Params: []packet.Param{{Name: "member_id", Width: 16}}}},
	},
	"member_info_lookup_table": {
		Name: "member_info_lookup_table",
		Keys: []packet.KeySpec{{Name: "eth.type", Width: 16, Kind: packet.Exact}, {Name: "meta.member_id", Width: 16, Kind: packet.Exact}},
		Actions: []packet.ActionSpec{
			{Name: "do_ipv4_member_rewrite", Params: []packet.Param{{Name: "mac", Width: 48}, {Name: "ip", Width: 32}, {Name: "port", Width: 16}}},
			{Name: "do_ipv6_member_rewrite", Params: []packet.Param{{Name: "mac", Width: 48}, {Name: "ip", Width: 128}, {Name: "port", Width: 16}}},
		},
	},
	// Two more to cover the ternary, range and plain lpm forms.
	"acl": {
		Name:    "acl",
		Keys:    []packet.KeySpec{{Name: "ipv4.src", Width: 32, Kind: packet.Ternary}, {Name: "udp.dst", Width: 16, Kind: packet.Range}, {Name: "ipv4.proto", Width: 8, Kind: packet.Exact}},
		Actions: []packet.ActionSpec{{Name: "allow", Params: nil}, {Name: "deny", Params: []packet.Param{{Name: "code", Width: 8}}}},
	},
	"routes": {
		Name:    "routes",
		Keys:    []packet.KeySpec{{Name: "ipv4.dst", Width: 32, Kind: packet.LPM}},
		Actions: []packet.ActionSpec{{Name: "fwd", Params: []packet.Param{{Name: "port", Width: 9}}}},
	},
	// And one with a size to fill.
	"small": {
		Name:    "small",
		Keys:    []packet.KeySpec{{Name: "ipv4.proto", Width: 8, Kind: packet.Exact}},
		Actions: []packet.ActionSpec{{Name: "fwd", Params: []packet.Param{{Name: "port", Width: 9}}}},
		Size:    2,
	},
}

// seedSchema is a schema of seedSpecs' tables, by name.
func seedSchema() *packet.Schema {
	s := &packet.Schema{}
	for _, name := range slices.Sorted(maps.Keys(seedSpecs)) {
		s.Tables = append(s.Tables, &packet.TableDef{Spec: seedSpecs[name]})
	}
	return s
}

func seedTables(name string) (*packet.TableSpec, bool) {
	s, ok := seedSpecs[name]
	return s, ok
}

func TestParseSeed000(t *testing.T) {
	f, err := os.Open("testdata/seed000.tables")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := packet.ParseEntries("seed000.tables", f, seedTables)
	if err != nil {
		t.Fatal(err)
	}
	v6 := func(lo uint64) packet.Value { return packet.Value{Hi: 0xfe80_0000_0000_0000, Lo: lo} }
	want := []packet.TableEntry{
		{Table: "dst_filter_table", Entry: packet.Entry{Keys: exactKeys(packet.V(0x00aabbccddee), packet.V(0x0800), packet.V(0x0a010203)), Line: 1}},
		{Table: "dst_filter_table", Entry: packet.Entry{Keys: exactKeys(packet.V(0x00aabbccddee), packet.V(0x86dd), v6(2)), Line: 8}},
		{Table: "epoch_assign_table", Entry: packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(0), PrefixLen: 0}}, Params: []packet.Value{packet.V(0)}, Priority: 64, Line: 15}},
		{Table: "epoch_assign_table", Entry: packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(0x10), PrefixLen: 60}}, Params: []packet.Value{packet.V(1)}, Priority: 5, Line: 22}},
		{Table: "load_balance_calendar_table", Entry: packet.Entry{Keys: exactKeys(packet.V(0), packet.V(0xa)), Params: []packet.Value{packet.V(0)}, Line: 29}},
		{Table: "load_balance_calendar_table", Entry: packet.Entry{Keys: exactKeys(packet.V(1), packet.V(0x14)), Params: []packet.Value{packet.V(0)}, Line: 36}},
		{Table: "member_info_lookup_table", Entry: packet.Entry{Keys: exactKeys(packet.V(0x0800), packet.V(0)), Action: 0,
			Params: []packet.Value{packet.V(0x112233445566), packet.V(0xaabbccdd), packet.V(0x4556)}, Line: 43}},
		{Table: "member_info_lookup_table", Entry: packet.Entry{Keys: exactKeys(packet.V(0x86dd), packet.V(0)), Action: 1,
			Params: []packet.Value{packet.V(0x112233445566), v6(3), packet.V(0x4556)}, Line: 52}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ParseEntries (-want +got):\n%s", diff)
	}

	tables := map[string]*Table{}
	for name, spec := range seedSpecs {
		tables[name] = New(spec)
	}
	for _, te := range got {
		if err := tables[te.Table].Insert(te.Entry); err != nil {
			t.Fatal(err)
		}
	}
	// What seed 000's notes say the entries do.
	tests := []struct {
		name  string
		table string
		keys  []packet.Value
		line  int // entry expected, 0 for a miss
		param packet.Value
	}{
		{"tick 10 is epoch 0", "epoch_assign_table", []packet.Value{packet.V(10)}, 15, packet.V(0)},
		{"tick 0x13 is epoch 1: priority 5 beats 64", "epoch_assign_table", []packet.Value{packet.V(0x13)}, 22, packet.V(1)},
		{"tick 0x1f is epoch 1", "epoch_assign_table", []packet.Value{packet.V(0x1f)}, 22, packet.V(1)},
		{"tick 0x20 is epoch 0", "epoch_assign_table", []packet.Value{packet.V(0x20)}, 15, packet.V(0)},
		{"epoch 0 slot 10 is member 0", "load_balance_calendar_table", []packet.Value{packet.V(0), packet.V(10)}, 29, packet.V(0)},
		{"epoch 1 slot 0x14 is member 0", "load_balance_calendar_table", []packet.Value{packet.V(1), packet.V(0x14)}, 36, packet.V(0)},
		{"epoch 0 slot 0x14 has no member", "load_balance_calendar_table", []packet.Value{packet.V(0), packet.V(0x14)}, 0, packet.Value{}},
		{"member 0 over IPv4", "member_info_lookup_table", []packet.Value{packet.V(0x0800), packet.V(0)}, 43, packet.V(0x112233445566)},
		{"member 0 over IPv6", "member_info_lookup_table", []packet.Value{packet.V(0x86dd), packet.V(0)}, 52, packet.V(0x112233445566)},
		{"FPGA IPv4 address passes", "dst_filter_table", []packet.Value{packet.V(0x00aabbccddee), packet.V(0x0800), packet.V(0x0a010203)}, 1, packet.Value{}},
		{"other IPv4 address drops", "dst_filter_table", []packet.Value{packet.V(0x00aabbccddee), packet.V(0x0800), packet.V(0x0a010204)}, 0, packet.Value{}},
	}
	for _, tc := range tests {
		e, hit := tables[tc.table].Lookup(tc.keys)
		switch {
		case hit != (tc.line != 0):
			t.Errorf("%s: hit = %v", tc.name, hit)
		case hit && e.Line != tc.line:
			t.Errorf("%s: entry at line %d; want %d", tc.name, e.Line, tc.line)
		case hit && len(e.Params) > 0 && e.Params[0] != tc.param:
			t.Errorf("%s: first param %v; want %v", tc.name, e.Params[0], tc.param)
		}
	}
}

func TestParseForms(t *testing.T) {
	src := `# every key form
table_add acl deny 0x0a000000&&&0xff000000 1024->2047 17 => 3 10
table_add acl allow 0x0a000000/8 0->0xffff 6 => 1   # ternary as a prefix
table_add routes fwd 192/2 => 0x1ff
`
	got, err := packet.ParseEntries("forms", strings.NewReader(src), seedTables)
	if err != nil {
		t.Fatal(err)
	}
	want := []packet.TableEntry{
		{Table: "acl", Entry: packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(0x0a000000), Mask: packet.V(0xff000000)}, {Lo: packet.V(1024), Hi: packet.V(2047)}, {Value: packet.V(17)}},
			Action: 1, Params: []packet.Value{packet.V(3)}, Priority: 10, Line: 2}},
		{Table: "acl", Entry: packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(0x0a000000), Mask: packet.V(0xff000000)}, {Lo: packet.V(0), Hi: packet.V(0xffff)}, {Value: packet.V(6)}},
			Action: 0, Priority: 1, Line: 3}},
		{Table: "routes", Entry: packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(192), PrefixLen: 2}}, Params: []packet.Value{packet.V(0x1ff)}, Line: 4}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseEntries (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown action", "table_add\n epoch_assign_table\n do_assign\n 0/0 => 0 64\n",
			`t.txt:3: table_add epoch_assign_table: unknown action "do_assign"`},
		{"unknown table", "\n\ntable_add epoch_table do_assign_epoch 0/0 => 0 64",
			`t.txt:3: table_add: unknown table "epoch_table"`},
		{"missing table", "# nothing\ntable_add",
			`t.txt:2: table_add: missing table name`},
		{"missing action", "table_add routes\n",
			`t.txt:1: table_add routes: missing action`},
		{"text before table_add", "table_set_default routes fwd 1\n",
			`t.txt:1: expected table_add, found "table_set_default"`},
		{"key count", "table_add load_balance_calendar_table do_assign_member\n 0x0 => 0\n",
			`t.txt:1: table_add load_balance_calendar_table: 1 keys, table has 2`},
		{"value wider than key", "table_add load_balance_calendar_table do_assign_member\n 0 0x200 => 0\n",
			`t.txt:2: table_add load_balance_calendar_table: key meta.slot: value 0x200 wider than 9 bits`},
		{"prefix too long", "table_add epoch_assign_table do_assign_epoch\n 0x10/65 => 1 5\n",
			`t.txt:2: table_add epoch_assign_table: key lb.tick: prefix length "65" not in 0..64`},
		{"lpm without length", "table_add routes fwd 0x0a000000 => 1\n",
			`t.txt:1: table_add routes: key ipv4.dst: lpm key "0x0a000000" is not value/prefix-length`},
		{"missing priority", "table_add epoch_assign_table\n do_assign_epoch\n 0/0\n =>\n 0x0\n",
			`t.txt:1: table_add epoch_assign_table: missing priority after the params`},
		{"missing =>", "table_add routes fwd 0/0 1\ntable_add routes fwd 1/1 => 1\n",
			`t.txt:1: table_add routes: missing =>`},
		{"too few params", "table_add member_info_lookup_table do_ipv4_member_rewrite 0x0800 0 => 1 2\n",
			`t.txt:1: table_add member_info_lookup_table: action do_ipv4_member_rewrite takes 3 params, got 2`},
		{"extra param", "table_add routes fwd 0/0 =>\n 1\n 2\n",
			`t.txt:3: table_add routes: unexpected "2" after the params of fwd (table takes no priority)`},
		{"extra after priority", "table_add epoch_assign_table do_assign_epoch 0/0 => 1 5 6\n",
			`t.txt:1: table_add epoch_assign_table: unexpected "6" after the priority`},
		{"param too wide", "table_add routes fwd 0/0 => 0x200\n",
			`t.txt:1: table_add routes: param port of fwd: 0x200 wider than 9 bits`},
		{"bad number", "table_add routes fwd 0/0 => 12ab\n",
			`t.txt:1: table_add routes: param port of fwd: "12ab": not a number`},
		{"bad priority", "table_add epoch_assign_table do_assign_epoch 0/0 => 1 -5\n",
			`t.txt:1: table_add epoch_assign_table: priority "-5" is not a number below 2^31`},
		{"value over 128 bits", "table_add dst_filter_table NoAction 0 0 0x1" + strings.Repeat("0", 32) + " =>\n",
			`t.txt:1: table_add dst_filter_table: key meta.ipdst: value "0x1` + strings.Repeat("0", 32) + `": wider than 128 bits`},
		{"ternary form", "table_add acl allow 0x0a000000 1->2 6 => 1\n",
			`t.txt:1: table_add acl: key ipv4.src: ternary key "0x0a000000" is not value&&&mask or value/prefix-length`},
		{"ternary mask too wide", "table_add acl allow 0&&&0x1ffffffff 1->2 6 => 1\n",
			`t.txt:1: table_add acl: key ipv4.src: mask 0x1ffffffff wider than 32 bits`},
		{"range form", "table_add acl allow 0&&&0 12 6 => 1\n",
			`t.txt:1: table_add acl: key udp.dst: range key "12" is not low->high`},
		{"empty range", "table_add acl allow 0&&&0 9->8 6 => 1\n",
			`t.txt:1: table_add acl: key udp.dst: empty range "9->8"`},
		{"exact with prefix", "table_add acl allow 0&&&0 1->1 6/8 => 1\n",
			`t.txt:1: table_add acl: key ipv4.proto: value "6/8": not a number`},
		{"second entry wrong", "table_add routes fwd 0/0 => 1\n\ntable_add routes fwd 0/0 => 1 7\n",
			`t.txt:3: table_add routes: unexpected "7" after the params of fwd (table takes no priority)`},
	}
	for _, tc := range tests {
		_, err := packet.ParseEntries("t.txt", strings.NewReader(tc.src), seedTables)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.name, err, tc.want)
		}
	}
}

func TestFormatEntries(t *testing.T) {
	data, err := os.ReadFile("testdata/seed000.tables")
	if err != nil {
		t.Fatal(err)
	}
	es, err := packet.ParseEntries("seed000.tables", bytes.NewReader(data), seedTables)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := packet.FormatEntries(&buf, es, seedTables); err != nil {
		t.Fatal(err)
	}
	want := `table_add dst_filter_table NoAction 0x00aabbccddee 0x0800 0x0000000000000000000000000a010203 =>
table_add dst_filter_table NoAction 0x00aabbccddee 0x86dd 0xfe800000000000000000000000000002 =>
table_add epoch_assign_table do_assign_epoch 0x0000000000000000/0 => 0x00000000 64
table_add epoch_assign_table do_assign_epoch 0x0000000000000010/60 => 0x00000001 5
table_add load_balance_calendar_table do_assign_member 0x00000000 0x00a => 0x0000
table_add load_balance_calendar_table do_assign_member 0x00000001 0x014 => 0x0000
table_add member_info_lookup_table do_ipv4_member_rewrite 0x0800 0x0000 => 0x112233445566 0xaabbccdd 0x4556
table_add member_info_lookup_table do_ipv6_member_rewrite 0x86dd 0x0000 => 0x112233445566 0xfe800000000000000000000000000003 0x4556
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("FormatEntries (-want +got):\n%s", diff)
	}
	back, err := packet.ParseEntries("formatted", &buf, seedTables)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(es, back, ignoreLine); diff != "" {
		t.Errorf("Parse(Format(x)) (-x +got):\n%s", diff)
	}

	bad := []struct {
		name string
		te   packet.TableEntry
		want string
	}{
		{"unknown table", packet.TableEntry{Table: "nope"}, `entry 0: unknown table "nope"`},
		{"invalid entry", packet.TableEntry{Table: "routes", Entry: packet.Entry{Keys: []packet.KeyMatch{{PrefixLen: 33}}, Params: []packet.Value{packet.V(1)}}},
			"entry 0: table routes: key ipv4.dst: prefix length 33 not in 0..32"},
		{"priority lost", packet.TableEntry{Table: "routes", Entry: packet.Entry{Keys: []packet.KeyMatch{{}}, Params: []packet.Value{packet.V(1)}, Priority: 2}},
			"entry 0: table routes: priority 2 in a table without priorities"},
	}
	for _, tc := range bad {
		err := packet.FormatEntries(&bytes.Buffer{}, []packet.TableEntry{tc.te}, seedTables)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: FormatEntries = %v; want %s", tc.name, err, tc.want)
		}
	}
}

var ignoreLine = cmpopts.IgnoreFields(packet.Entry{}, "Line")

func FuzzParseEntries(f *testing.F) {
	if data, err := os.ReadFile("testdata/seed000.tables"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("table_add acl deny 0x0a000000&&&0xff000000 1024->2047 17 => 3 10\n"))
	f.Add([]byte("table_add routes fwd 10/8 => 1 # c\ntable_add routes fwd 0/0 =>\n0x1ff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := packet.ParseEntries("fuzz", bytes.NewReader(data), seedTables)
		ts, lerr := Load(seedSchema(), "fuzz", bytes.NewReader(data))
		if (err == nil) != (lerr == nil) {
			t.Fatalf("ParseEntries: %v, Load: %v", err, lerr)
		}
		if err != nil {
			// Every error names a line of the script, in a short message.
			var se *packet.ScriptError
			if lines := bytes.Count(data, []byte("\n")) + 1; !errors.As(err, &se) || se.Line < 1 || se.Line > lines {
				t.Fatalf("error %v is not at a line 1..%d", err, lines)
			}
			if len(err.Error()) > 4096 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		// The entries loaded are the script's, table by table, and pass
		// the one validator again.
		s := seedSchema()
		for i, d := range s.Tables {
			var want []packet.Entry
			for _, te := range es {
				if te.Table == d.Spec.Name {
					want = append(want, te.Entry)
				}
			}
			if diff := cmp.Diff(want, ts[i].Entries(), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("table %s (-script +loaded):\n%s", d.Spec.Name, diff)
			}
		}
		if err := packet.CheckEntries(es, seedTables); err != nil {
			t.Fatalf("CheckEntries of parsed entries: %v", err)
		}
		var out bytes.Buffer
		if err := packet.FormatEntries(&out, es, seedTables); err != nil {
			t.Fatalf("FormatEntries of parsed entries: %v", err)
		}
		first := out.String()
		back, err := packet.ParseEntries("formatted", &out, seedTables)
		if err != nil {
			t.Fatalf("reparse: %v\n%s", err, first)
		}
		if diff := cmp.Diff(es, back, ignoreLine, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("Parse(Format(x)) (-x +got):\n%s", diff)
		}
		out.Reset()
		if err := packet.FormatEntries(&out, back, seedTables); err != nil || out.String() != first {
			t.Fatalf("Format not deterministic: %v\n%s\n%s", err, first, out.String())
		}
	})
}

// TestScriptValidation: each way a script's entry is wrong, alone or with
// the others of its table, is refused by Load, the loader of every
// target, with the line of the table_add.
func TestScriptValidation(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	tests := []struct {
		name, src, want string
		is              error
	}{
		{"duplicate", "table_add small fwd 1 => 1\ntable_add small fwd 2 => 1\n\ntable_add small fwd 0x01 => 2\n",
			"t.tables:4: table_add small: duplicate entry of entry at line 1", packet.ErrDuplicateEntry},
		{"duplicate lpm, bits past the prefix aside", "table_add routes fwd 0x0a000000/8 => 1\ntable_add routes fwd 0x0b000000/8 => 1\ntable_add routes fwd 0x0a000001/8 => 1\n",
			"t.tables:3: table_add routes: duplicate entry of entry at line 1", packet.ErrDuplicateEntry},
		{"duplicate ternary, bits outside the mask aside", "table_add acl allow 0x0a000001&&&0xff000000 1->2 6 => 3\n" +
			"table_add acl allow 0x0a000001&&&0xff000000 1->2 6 => 4\n" +
			"table_add acl deny\n 0x0a000002&&&0xff000000 1->2 6 => 5 3\n",
			"t.tables:3: table_add acl: duplicate entry of entry at line 1", packet.ErrDuplicateEntry},
		{"over capacity", "table_add small fwd 1 => 1\ntable_add routes fwd 0/0 => 1\ntable_add small fwd 2 => 1\n# full\ntable_add small fwd 3 => 1\n",
			"t.tables:5: table_add small: table full (size 2)", packet.ErrTableFull},
		{"value wider than key", "table_add small fwd 1 => 1\ntable_add small fwd 0x100 => 1\n",
			"t.tables:2: table_add small: key ipv4.proto: value 0x100 wider than 8 bits", nil},
		{"lpm prefix longer than key", "table_add routes fwd 0/0 => 1\ntable_add routes fwd 0/33 => 1\n",
			`t.tables:2: table_add routes: key ipv4.dst: prefix length "33" not in 0..32`, nil},
		{"ternary prefix longer than key", "\ntable_add acl allow 0/33 1->2 6 => 3\n",
			`t.tables:2: table_add acl: key ipv4.src: prefix length "33" not in 0..32`, nil},
		{"mask wider than key", "table_add acl allow\n 0&&&0x100000000 1->2 6 => 3\n",
			"t.tables:2: table_add acl: key ipv4.src: mask 0x100000000 wider than 32 bits", nil},
		{"range bound wider than key", "table_add acl allow 0&&&0 1->0x10000 6 => 3\n",
			"t.tables:1: table_add acl: key udp.dst: high bound 0x10000 wider than 16 bits", nil},
		{"empty range", "table_add acl allow 0&&&0 1->2 6 => 3\ntable_add acl allow 0&&&0 3->2 6 => 3\n",
			`t.tables:2: table_add acl: key udp.dst: empty range "3->2"`, nil},
		{"1 MiB word", "table_add small fwd 1 => 1\ntable_add small fwd 2 => 0x" + long + "\n",
			`t.tables:2: word of 1048578 bytes (at most 320): "0xxxxxxxxxxxxxxxxxxx"...`, nil},
		{"after a 1 MiB comment", "table_add small fwd 1 => 1 # " + long + "\ntable_add small fwd 1 => 1\n",
			"t.tables:2: table_add small: duplicate entry of entry at line 1", packet.ErrDuplicateEntry},
		{"1 MiB line of entries", "table_add routes fwd 1/32 => 1" + strings.Repeat(" table_add routes fwd 0/0 => 1", 1<<15) + "\n",
			"t.tables:1: table_add routes: duplicate entry of entry at line 1", packet.ErrDuplicateEntry},
	}
	for _, tc := range tests {
		_, err := Load(seedSchema(), "t.tables", strings.NewReader(tc.src))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %.200v\nwant %s", tc.name, err, tc.want)
		}
		var se *packet.ScriptError
		if !errors.As(err, &se) || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %T %v is not a *ScriptError wrapping %v", tc.name, err, err, tc.is)
		}
	}
}

// TestLongLines: lines longer than any buffer load as short ones do, and
// the lines after them keep their numbers.
func TestLongLines(t *testing.T) {
	var src strings.Builder
	for i := range 1 << 15 { // a 1 MiB line of entries
		fmt.Fprintf(&src, "table_add routes fwd %d/32 => 1 ", i)
	}
	src.WriteString("\n# " + strings.Repeat("#", 1<<20) + "\ntable_add small fwd 1\n => 2\n")
	s := seedSchema()
	ts, err := Load(s, "long", strings.NewReader(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	routes, _ := s.Table("routes")
	if n := ts[routes].Len(); n != 1<<15 {
		t.Errorf("routes: %d entries from the long line; want %d", n, 1<<15)
	}
	small, _ := s.Table("small")
	e, hit := ts[small].Lookup([]packet.Value{packet.V(1)})
	if !hit || e.Line != 3 || e.Params[0] != packet.V(2) {
		t.Errorf("small: %+v, %v; want the entry at line 3", e, hit)
	}
}

// TestParseAddressForms: as BMv2's runtime CLI, a 32-bit value may be an
// IPv4 address, a 48-bit one a MAC, a 128-bit one an IPv6 address (the
// values here written out by hand); an address of the wrong width or a
// malformed one is refused at its line.
func TestParseAddressForms(t *testing.T) {
	specs := map[string]*packet.TableSpec{
		"r": {Name: "r", Keys: []packet.KeySpec{{Name: "ip.dst", Width: 32, Kind: packet.LPM}},
			Actions: []packet.ActionSpec{{Name: "fwd", Params: []packet.Param{{Name: "mac", Width: 48}, {Name: "via", Width: 128}}}}},
		"f": {Name: "f", Keys: []packet.KeySpec{{Name: "ip.src", Width: 32, Kind: packet.Range}, {Name: "ip.dst", Width: 32, Kind: packet.Ternary}},
			Actions: []packet.ActionSpec{{Name: "allow", Params: nil}}},
	}
	tables := func(n string) (*packet.TableSpec, bool) { s, ok := specs[n]; return s, ok }
	src := `table_add r fwd 192.168.0.0/16 => 02:00:00:00:00:0a fd00::1
table_add f allow 10.0.0.0->10.0.0.255 10.1.0.0&&&255.255.0.0 => 1
`
	got, err := packet.ParseEntries("addr", strings.NewReader(src), tables)
	if err != nil {
		t.Fatal(err)
	}
	want := []packet.TableEntry{
		{Table: "r", Entry: packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(0xc0a80000), PrefixLen: 16}}, Params: []packet.Value{packet.V(0x02000000000a), {Hi: 0xfd00 << 48, Lo: 1}}, Line: 1}},
		{Table: "f", Entry: packet.Entry{Keys: []packet.KeyMatch{{Lo: packet.V(0x0a000000), Hi: packet.V(0x0a0000ff)}, {Value: packet.V(0x0a010000), Mask: packet.V(0xffff0000)}}, Priority: 1, Line: 2}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseEntries (-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		"table_add r fwd 192.168.0.256/16 => 1 2",      // not an address
		"table_add r fwd 192.168.0.0/16 => 10.0.0.1 2", // an IPv4 address for 48 bits
		"table_add r fwd fd00::/16 => 1 2",             // an IPv6 address for 32 bits
		"table_add r fwd 1/16 => 02:00:00:00:00 2",     // five bytes
	} {
		if _, err := packet.ParseEntries("bad", strings.NewReader(bad), tables); err == nil || !strings.HasPrefix(err.Error(), "bad:1: ") {
			t.Errorf("%q: error %v, want one at bad:1", bad, err)
		}
	}
}
