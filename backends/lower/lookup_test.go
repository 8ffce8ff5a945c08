package lower_test

import (
	"testing"

	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
)

// The shifts a lookup packs its keys by are the table's own
// (packet.TableSpec.PackKeys).
func TestLookupShiftsPackKeys(t *testing.T) {
	m := testutil.ModelSource(t, `include "lib/inet.nsc"
table T {
  key { ipv4.proto: exact  udp.dport: exact  ipv4.ttl: ternary  ipv4.flags: exact }
  actions { hit }
  size 16
  default hit
}
action hit() { }
lpg L {
  node RxQueue { op input parse ethernet  port out -> Look }
  node Look { op lookup T  port hit -> TxQueue }
  node TxQueue { op emit }
}`)
	g, _ := m.Graph("L")
	p, err := lower.Lower(g, "test")
	if err != nil {
		t.Fatal(err)
	}
	w := lower.NewWalker(p, nil, "test")
	l, ok := w.LowerLookup(g.Node("Look"))
	if !ok {
		t.Fatal(w.Refused.Err())
	}
	vals := []packet.Value{{Lo: 17}, {Lo: 0xbeef}, {Lo: 0x42}, {Lo: 5}}
	var packed uint64
	for i, k := range l.Keys {
		packed |= vals[i].Lo << k.Shift
	}
	if want := l.Def.Spec.PackKeys(vals); packed != want {
		t.Errorf("packed %#x, the table packs %#x", packed, want)
	}
}
