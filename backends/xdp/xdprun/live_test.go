package xdprun_test

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// liveModel has an open-addressing table (16 slots for 8 entries: probe
// chains everywhere) and a priority table found by its interval index;
// a frame's source MAC comes out holding both lookups' results.
const liveModel = `include "lib/inet.nsc"
metadata meta { a: 16  b: 16 }
action put(v: 16) { meta.a = v }
action put2(v: 16) { meta.b = v }
action none() { }
table t_slots {
    key { ethernet.src: exact }
    actions { put, none }
    size 8
    default none
}
table t_ivl {
    key { bit<4>(ethernet.type): exact  ethernet.dst: lpm }
    actions { put2, none }
    size 64
    priorities
    default none
}
lpg Live {
    node Rx { op input parse ethernet  port out -> S }
    node S { op lookup t_slots  port put -> I  port none -> NoS }
    node NoS { op set { meta.a = 0xfffe }  port out -> I }
    node I { op lookup t_ivl  port put2 -> Out  port none -> NoI }
    node NoI { op set { meta.b = 0xfffd }  port out -> Out }
    node Out { op set { ethernet.src = bit<48>(meta.a) | (bit<48>(meta.b) << 16) }  port out -> Tx }
    node Tx { op emit }
}
`

// loadedLive loads liveModel's program with empty tables (closed with
// the test).
func loadedLive(t *testing.T) (*lang.Model, *dataflow.Graph, *xdprun.Runner) {
	t.Helper()
	xdptest.Require(t)
	m := testutil.ModelSource(t, liveModel)
	g, _ := m.Graph("Live")
	obj, _ := xdptest.Build(t, g, nil, t.TempDir(), "live")
	r, err := xdprun.Load(obj)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	empty, err := r.Tables("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTables(empty); err != nil {
		t.Fatal(err)
	}
	return m, g, r
}

// TestLiveAgainstInterpreter: random Puts and Deletes on the
// open-addressing table and SetGroups on the interval table, through
// xdprun.Live on the loaded program; after every few, frames of every key
// and group leave the program as they leave the interpreter over the
// same entries.
func TestLiveAgainstInterpreter(t *testing.T) {
	m, g, r := loadedLive(t)
	live := r.Live()
	rnd := rand.New(rand.NewPCG(7, 7))
	macs := make([]uint64, 24)
	for i := range macs {
		macs[i] = rnd.Uint64() & (1<<48 - 1)
	}
	slots := map[uint64]uint16{}          // src MAC → v
	groups := map[uint64][]packet.Entry{} // type nibble → entries
	put, put2 := 0, 0
	check := func(step int) {
		t.Helper()
		var script strings.Builder
		for _, mac := range slices.Sorted(maps.Keys(slots)) {
			fmt.Fprintf(&script, "table_add t_slots put %#x => %#x\n", mac, slots[mac])
		}
		var es []packet.TableEntry
		for nib := range uint64(4) {
			for _, e := range groups[nib] {
				es = append(es, packet.TableEntry{Table: "t_ivl", Entry: e})
			}
		}
		if err := packet.FormatEntries(&script, es, m.Schema.TableSpec); err != nil {
			t.Fatal(err)
		}
		ts, err := table.Load(m.Schema, "model", strings.NewReader(script.String()))
		if err != nil {
			t.Fatal(err)
		}
		mach, err := sim.New(g, ts)
		if err != nil {
			t.Fatal(err)
		}
		for i, mac := range macs {
			for nib := range uint64(4) {
				dst := rnd.Uint64() & (1<<48 - 1)
				if i%3 == 0 && len(groups[nib]) > 0 { // inside an entry's prefix
					e := groups[nib][rnd.IntN(len(groups[nib]))]
					dst = e.Keys[1].Value.Lo | dst>>e.Keys[1].PrefixLen
				}
				f := make([]byte, 64)
				binary.BigEndian.PutUint64(f, dst<<16)
				binary.BigEndian.PutUint64(f[6:], mac<<16|0x88b0|nib)
				want := xdptest.Interp(mach, r.Meta, f)
				res, err := r.Run(f)
				if err != nil {
					t.Fatal(err)
				}
				if got := fmt.Sprintf("%x", res.Data); xdprun.VerdictName(res.Verdict) != want.Verdict || got != want.Data {
					t.Fatalf("step %d: frame %x: %s %s, interpreter %s %s", step, f, xdprun.VerdictName(res.Verdict), got, want.Verdict, want.Data)
				}
			}
		}
	}
	for step := range 400 {
		switch rnd.IntN(3) {
		case 0, 1: // the slots: at most 8 entries in 16 slots
			mac := macs[rnd.IntN(len(macs))]
			if _, ok := slots[mac]; ok || len(slots) == 8 || rnd.IntN(3) == 0 {
				if err := live.Delete("t_slots", packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(mac)}}}); err != nil {
					t.Fatal(err)
				}
				delete(slots, mac)
				continue
			}
			v := uint16(rnd.Uint32())
			if err := live.Put("t_slots", packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(mac)}}, Params: []packet.Value{packet.V(uint64(v))}}); err != nil {
				t.Fatal(err)
			}
			slots[mac], put = v, put+1
		case 2: // a group's entries anew: prefixes that may overlap, priorities that may tie
			nib := rnd.Uint64N(4)
			var es []packet.Entry
			for range rnd.IntN(7) {
				l := rnd.IntN(49)
				v := rnd.Uint64() & (1<<48 - 1) &^ (1<<(48-l) - 1)
				p := rnd.IntN(4)
				if slices.ContainsFunc(es, func(e packet.Entry) bool {
					return e.Keys[1].PrefixLen == l && e.Keys[1].Value.Lo == v && e.Priority == p
				}) {
					continue // a duplicate: refused by SetGroup as by the interpreter's tables
				}
				es = append(es, packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(nib)}, {Value: packet.V(v), PrefixLen: l}},
					Params: []packet.Value{packet.V(uint64(rnd.Uint32() & 0xffff))}, Priority: p})
			}
			if err := live.SetGroup("t_ivl", []packet.Value{packet.V(nib), {}}, es); err != nil {
				t.Fatal(err)
			}
			groups[nib], put2 = es, put2+1
		}
		if step%10 == 9 {
			check(step)
		}
	}
	t.Logf("%d slot puts, %d group replacements, checked every 10 changes on %d frames", put, put2, 4*len(macs))
}
