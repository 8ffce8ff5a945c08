package table

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/dragonet-go/nsc/packet"
)

// calendarSpec is lb-2025's load_balance_calendar_table
// (models/ejfat/lb-2025.nsc: lb_id 3 bits, epoch 32, calendar_slot 16,
// all exact; size 16384), its size raised to hold n entries where n is
// more.
func calendarSpec(n int) *packet.TableSpec {
	return &packet.TableSpec{Name: "load_balance_calendar_table",
		Keys:    []packet.KeySpec{{Name: "meta.lb_id", Width: 3, Kind: packet.Exact}, {Name: "meta.epoch", Width: 32, Kind: packet.Exact}, {Name: "meta.calendar_slot", Width: 16, Kind: packet.Exact}},
		Actions: []packet.ActionSpec{{Name: "do_assign_member", Params: []packet.Param{{Name: "member_id", Width: 16}}}, {Name: "drop", Params: nil}, {Name: "miss", Params: nil}},
		Size:    max(16384, n), Default: "miss"}
}

// calendarScript is n calendar entries as an EJFAT control plane writes
// them: per epoch, each of 8 LB instances' 512 slots naming one of 16
// members (16,384 entries: 4 epochs).
func calendarScript(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		slot, lb, epoch := i%512, i/512%8, i/4096
		fmt.Fprintf(&b, "table_add load_balance_calendar_table do_assign_member %d %d %d => %d\n", lb, epoch, slot, (slot*7+lb)%16)
	}
	return b.Bytes()
}

// BenchmarkLoadCalendar loads n calendar entries: a table_add script
// (Load: parse, validate, one index build), the same entries as one
// batch of Table.Apply (what a control plane calls), and, the baseline,
// one Table.Insert each (an index build each: quadratic).
func BenchmarkLoadCalendar(b *testing.B) {
	for _, n := range []int{1024, 16384, 131072} {
		script := calendarScript(n)
		s := &packet.Schema{Tables: []*packet.TableDef{{Spec: calendarSpec(n)}}}
		b.Run(fmt.Sprintf("script/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ts, err := Load(s, "calendar", bytes.NewReader(script))
				if err != nil || ts[0].Len() != n {
					b.Fatal(err)
				}
			}
		})
		tes, err := packet.ParseEntries("calendar", bytes.NewReader(script), s.TableSpec)
		if err != nil {
			b.Fatal(err)
		}
		us := make([]Update, n)
		for i, te := range tes {
			us[i] = Update{InsertEntry, te.Entry}
		}
		b.Run(fmt.Sprintf("apply/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tb := New(s.Tables[0].Spec)
				if err := tb.Apply(us); err != nil || tb.Len() != n {
					b.Fatal(err)
				}
			}
		})
		if n > 4096 {
			continue // tens of seconds
		}
		b.Run(fmt.Sprintf("insert-each/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tb := New(s.Tables[0].Spec)
				for _, u := range us {
					if err := tb.Insert(u.Entry); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
