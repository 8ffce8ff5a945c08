package ejfat

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/internal/difftest"
)

// epochsScript is lb-2025's reference tables with an epoch table as a
// control plane fills it (testdata/lb-2025-epochs.tables: 446 entries,
// indexed by intervals), and every calendar slot of LB 0 filled, epoch
// 1's with a member of its own, so that which epoch a frame falls in
// shows in where it goes.
func epochsScript(t testing.TB) []byte {
	var script []byte
	for _, f := range []string{"testdata/lb-2025.tables", "testdata/lb-2025-epochs.tables"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		script = append(script, b...)
	}
	for slot := range 8 {
		if slot != 5 {
			script = fmt.Appendf(script, "table_add load_balance_calendar_table do_assign_member 0 0 %d => 0\n", slot)
		}
		if slot != 3 {
			script = fmt.Appendf(script, "table_add load_balance_calendar_table do_assign_member 0 1 %d => 1\n", slot)
		}
	}
	return append(script, "table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 1 => 0xe1 0xaabbcce1 0x4556 4 0\n"+
		"table_add member_info_lookup_table do_ipv6_member_rewrite 0 0x86dd 1 => 0xe1 0xfe8000000000000000000000000000e1 0x4556 4 0\n"...)
}

// epochsFrames are the crafted corpus, LB 0's frames on both sides of its
// epoch boundaries (ticks 0x10 and 0x20) over IPv4 and IPv6, and 10,000
// frames derived from them.
func epochsFrames(t testing.TB) [][]byte {
	s := xdpSeeds(t)
	for _, tick := range []uint64{0xf, 0x10, 0x11, 0x1f, 0x20, 0x21, 1 << 40} {
		for _, v6 := range []bool{false, true} {
			s = append(s, gplFrame(t, v6, &LB{Magic: LBMagic, Version: 2, Protocol: 1, Entropy: 1, Tick: tick}, gplA7Payload()))
		}
	}
	return append(s, difftest.Mutate(s, 10000, 8)...)
}

// TestFastPathEpochsAgainstInterpreter: the generated lb-2025 fast path,
// which probes the epoch table's interval index inline, against the
// interpreter with epochsScript's entries on epochsFrames.
func TestFastPathEpochsAgainstInterpreter(t *testing.T) {
	script := epochsScript(t)
	ts, err := lbfast.Tables("lb-2025", "epochs", bytes.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	if ts[4].Spec().Name != "epoch_assign_table" || ts[4].Probes().Intervals == nil {
		t.Fatalf("table 4 (%s) is not indexed by intervals", ts[4].Spec().Name)
	}
	pl, err := lbfast.New("lb-2025", ts)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Interpreter("lb-2025", HostPRG, "epochs", bytes.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	if where := difftest.Compare(t, pl, m, epochsFrames(t)); where["sink TxWire"] < 100 {
		t.Errorf("the corpus exercises too little: %v", where)
	}
}
