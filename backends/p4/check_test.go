package p4_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
)

// TestEntriesRefused: the program's table_add lines are refused for what
// the model's tables refuse (packet.CheckEntries), each error naming the
// entry's line, though the entries come from elsewhere than a script that
// ParseEntries checked.
func TestEntriesRefused(t *testing.T) {
	src := strings.Replace(kindsModel, "table routes { key { ipv4.dst: lpm } actions { tag, none } default tag(7) }",
		"table routes { key { ipv4.dst: lpm } actions { tag, none } size 2 default tag(7) }", 1)
	m := testutil.ModelSource(t, src)
	prog, _, _, err := buildModel(t, m, "L", "BMv2", p4.V1Model, "")
	if err != nil {
		t.Fatal(err)
	}
	base, err := packet.ParseEntries("kinds", strings.NewReader(`table_add routes tag 0x0a000000/8 => 1
table_add mixed tag 17 0x40&&&0xf0 100->200 => 4 2
`), m.Schema.TableSpec)
	if err != nil {
		t.Fatal(err)
	}
	route := func(line int, v uint64, n int) packet.TableEntry {
		return packet.TableEntry{Table: "routes", Entry: packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(v), PrefixLen: n}},
			Params: []packet.Value{packet.V(1)}, Line: line}}
	}
	mixed := func(line int, proto, ttl, mask, lo, hi uint64) packet.TableEntry {
		return packet.TableEntry{Table: "mixed", Entry: packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(proto)},
			{Value: packet.V(ttl), Mask: packet.V(mask)}, {Lo: packet.V(lo), Hi: packet.V(hi)}},
			Params: []packet.Value{packet.V(4)}, Priority: 3, Line: line}}
	}
	tests := []struct {
		name  string
		extra []packet.TableEntry
		want  string
		is    error
	}{
		{"duplicate", []packet.TableEntry{route(7, 0x0a000001, 8)},
			"p4 entries: table routes: entry at line 7: duplicate entry of entry at line 1", packet.ErrDuplicateEntry},
		{"over capacity", []packet.TableEntry{route(7, 0x0b000000, 8), route(8, 0x0c000000, 8)},
			"p4 entries: table routes: entry at line 8: table full (size 2)", packet.ErrTableFull},
		{"value wider than key", []packet.TableEntry{mixed(7, 0x100, 0, 0, 0, 1)},
			"p4 entries: table mixed: entry at line 7: key ipv4.proto: value 256 wider than 8 bits", nil},
		{"prefix longer than key", []packet.TableEntry{route(7, 0, 33)},
			"p4 entries: table routes: entry at line 7: key ipv4.dst: prefix length 33 not in 0..32", nil},
		{"mask wider than key", []packet.TableEntry{mixed(7, 6, 0, 0x100, 0, 1)},
			"p4 entries: table mixed: entry at line 7: key ipv4.ttl: mask 256 wider than 8 bits", nil},
		{"range bound wider than key", []packet.TableEntry{mixed(7, 6, 0, 0, 0, 0x10000)},
			"p4 entries: table mixed: entry at line 7: key ipv4.id: high bound 0x10000 wider than 16 bits", nil},
		{"empty range", []packet.TableEntry{mixed(7, 6, 0, 0, 9, 8)},
			"p4 entries: table mixed: entry at line 7: key ipv4.id: empty range 9->8", nil},
		{"no line: the index", []packet.TableEntry{route(0, 0x0a000000, 8)},
			"p4 entries: table routes: entry 2: duplicate entry of entry at line 1", packet.ErrDuplicateEntry},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		err := prog.Tables.Entries(&b, append(append([]packet.TableEntry(nil), base...), tc.extra...))
		if err == nil || err.Error() != tc.want || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s:\n got %v\nwant %s", tc.name, err, tc.want)
		}
		if b.Len() != 0 {
			t.Errorf("%s: wrote %q before refusing", tc.name, b.String())
		}
	}
}
