package p4sim

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/packet"
)

// Tables fills runtime tables, by the program's table identifiers, from
// the table_add lines p4.Program.Tables.Entries wrote for prog.
func Tables(prog *p4.Program, lines []byte) (map[string]*packet.Table, error) {
	es, err := packet.ParseEntries("entries", bytes.NewReader(lines), prog.Tables.TableSpec)
	if err != nil {
		return nil, err
	}
	out := map[string]*packet.Table{}
	for _, tb := range prog.Tables {
		spec, _ := prog.Tables.TableSpec(tb.Name)
		out[ident(tb.Name)] = packet.NewTable(spec)
	}
	for _, te := range es {
		if err := out[ident(te.Table)].Insert(te.Entry); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ident is a table_add name without the control's prefix.
func ident(name string) string { return name[strings.LastIndex(name, ".")+1:] }

var counterDecl = regexp.MustCompile(`counter\(1, CounterType\.packets\) (\w+); // (".*")`)

// CounterLabels maps a v1model program's counters to the labels they
// count (the comment the backend writes on each declaration).
func CounterLabels(src []byte) map[string]string {
	out := map[string]string{}
	for _, m := range counterDecl.FindAllSubmatch(src, -1) {
		var label string
		fmt.Sscanf(string(m[2]), "%q", &label)
		out[string(m[1])] = label
	}
	return out
}
