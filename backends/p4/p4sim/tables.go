package p4sim

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// Tables fills runtime tables, by the program's table identifiers, from
// the table_add lines p4.Program.Tables.Entries wrote for prog.
func Tables(prog *p4.Program, lines []byte) (map[string]*table.Table, error) {
	es, err := packet.ParseEntries("entries", bytes.NewReader(lines), prog.Tables.TableSpec)
	if err != nil {
		return nil, err
	}
	out := map[string]*table.Table{}
	for _, tb := range prog.Tables {
		spec, _ := prog.Tables.TableSpec(tb.Name)
		out[ident(tb.Name)] = table.New(spec)
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

// CounterDiff compares the counters of a v1model program (by the labels
// on their declarations) with what nsc's interpreter counted under those
// labels: count labels, and drops summed by reason. "" when they agree.
func CounterDiff(mach *sim.Machine, src []byte, run *Machine) string {
	c := mach.Counters()
	want := map[string]int{}
	for l, v := range c.Counts {
		want[l] += int(v)
	}
	for k, v := range c.Drops {
		want[k.Reason] += int(v)
	}
	got := map[string]int{}
	counts := run.Counts()
	for ctr, l := range CounterLabels(src) {
		got[l] = counts[ctr]
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
	return cmp.Diff(want, got)
}
