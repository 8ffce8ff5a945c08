package packet

import (
	"bytes"
	"fmt"
	"testing"
)

// calendarSpec is lb-2025's load_balance_calendar_table
// (models/ejfat/lb-2025.nsc: lb_id 3 bits, epoch 32, calendar_slot 16,
// all exact; size 16384), with the size raised to hold n entries.
func calendarSpec(n int) *TableSpec {
	return &TableSpec{Name: "load_balance_calendar_table",
		Keys:    []KeySpec{{"meta.lb_id", 3, Exact}, {"meta.epoch", 32, Exact}, {"meta.calendar_slot", 16, Exact}},
		Actions: []ActionSpec{{"do_assign_member", []Param{{"member_id", 16}}}, {"drop", nil}, {"miss", nil}},
		Size:    max(16384, n), Default: "miss"}
}

// calendarScript is n calendar entries as an EJFAT control plane writes
// them: per LB instance (8) and epoch, 512 slots, each naming a member.
func calendarScript(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		slot, lb, epoch := i%512, i/512%8, i/4096
		fmt.Fprintf(&b, "table_add load_balance_calendar_table do_assign_member %d %d %d => %d\n", lb, epoch, slot, (slot*7+lb)%16)
	}
	return b.Bytes()
}

func BenchmarkLoadCalendar(b *testing.B) {
	for _, n := range []int{1024, 16384, 131072} {
		script := calendarScript(n)
		s := &Schema{Tables: []*TableDef{{Spec: calendarSpec(n)}}}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ts, err := LoadTables(s, "calendar", bytes.NewReader(script))
				if err != nil || ts[0].Len() != n {
					b.Fatal(err)
				}
			}
		})
	}
}
