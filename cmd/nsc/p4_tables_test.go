package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nsc compile --target p4 --tables refuses what the Go, interpreter and
// XDP loaders refuse (packet's one validator), at the script's line.
func TestCompileP4TablesRefused(t *testing.T) {
	base, err := os.ReadFile("../../ejfat/testdata/lb-2025.tables")
	if err != nil {
		t.Fatal(err)
	}
	next := bytes.Count(base, []byte("\n")) + 1 // the line a case adds
	full := func() string {                     // T1 (size 64) filled, then one more
		var b strings.Builder
		for i := range 64 - 5 { // lb-2025.tables has 5
			fmt.Fprintf(&b, "table_add mac_dst_filter_table set_mac_sa 0&&&0 %#x => 0 1\n", 0x020000000000+i)
		}
		return b.String() + "table_add mac_dst_filter_table drop 0&&&0 0x02ffffffffff => 1\n"
	}
	long := strings.Repeat("x", 1<<20)
	dir := t.TempDir()
	for _, c := range []struct {
		name, add string
		line      int // of the error, after base's lines
		want      string
	}{
		{"duplicate", "table_add epoch_assign_table do_assign_epoch 1 0x0/0 => 7 63\n",
			0, "table_add epoch_assign_table: duplicate entry of entry at line 48"},
		{"over capacity", full(), 64 - 5, "table_add mac_dst_filter_table: table full (size 64)"},
		{"value wider than key", "table_add epoch_assign_table do_assign_epoch 8 0x0/0 => 0 63\n",
			0, "table_add epoch_assign_table: key meta.lb_id: value 8 wider than 3 bits"},
		{"prefix longer than key", "table_add epoch_assign_table do_assign_epoch 1\n 0x0/65 => 0 63\n",
			1, `table_add epoch_assign_table: key meta.tick: prefix length "65" not in 0..64`},
		{"mask wider than key", "table_add mac_dst_filter_table drop 0&&&0x10 0x020000000001 => 1\n",
			0, "table_add mac_dst_filter_table: key meta.ingress_port: mask 0x10 wider than 4 bits"},
		{"1 MiB word", "table_add epoch_assign_table do_assign_epoch 1 0x0/0 => 0 0x" + long + "\n",
			0, `word of 1048578 bytes (at most 320): "0xxxxxxxxxxxxxxxxxxx"...`},
		{"after a 1 MiB comment", "# " + long + "\ntable_add epoch_assign_table do_assign_epoch 1 0x0/0 => 7 63\n",
			1, "table_add epoch_assign_table: duplicate entry of entry at line 48"},
	} {
		file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".tables")
		if err := os.WriteFile(file, append(bytes.Clone(base), c.add...), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := nsc(t, "compile", "models/ejfat/lb-2025.nsc", "--lpg", "LB2025", "--prg", "BMv2", "--target", "p4",
			"--arch", "v1model", "--tables", file, "-o", filepath.Join(dir, "out"))
		want := fmt.Sprintf("%s:%d: %s", file, next+c.line, c.want)
		if code != exitModel || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %.300q; want exit %d and %q", c.name, code, stderr, exitModel, want)
		}
	}
}
