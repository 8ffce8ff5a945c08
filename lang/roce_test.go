package lang_test

import (
	"testing"

	"github.com/dragonet-go/nsc/packet"
)

// `checksum verify icrc(H)` is the ICRC of the transport at H; `checksum
// verify icrc` still names a header called icrc. A register's key, value
// and size, and the ports of load, store and cut.
func TestICRCAndRegisters(t *testing.T) {
	m, err := load(map[string]string{"main.nsc": `
header icrc { a: 8  b: 8  c: 16 @checksum(header) }
metadata v { x: 24  y: 128 }
register r { key { icrc.a, icrc.b } value v }
register s { key { v.x } value v  size 7 }
lpg G {
  node Q { op input parse icrc  port out -> C }
  node C { op checksum verify icrc  port true -> I  port false -> I }
  node I { op checksum verify icrc(icrc)  port true -> L  port false -> L }
  node L { op load r  port hit -> S  port miss -> S }
  node S { op store s  port out -> K  port full -> K }
  node K { op cut  port out -> E }
  node E { op emit }
}`})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.Graph("G")
	for name, want := range map[string]packet.OpKind{"C": packet.OpChecksumVerify, "I": packet.OpICRCVerify,
		"L": packet.OpLoad, "S": packet.OpStore, "K": packet.OpCut} {
		if got := g.Node(name).Op.Kind; got != want {
			t.Errorf("node %s: %v, want %v", name, got, want)
		}
	}
	rs := m.Schema.Registers
	if len(rs) != 2 || rs[0].Name != "r" || len(rs[0].Keys) != 2 || rs[0].Size != 1024 || rs[1].Size != 7 ||
		m.Schema.Headers[rs[1].Value].Name != "v" {
		t.Errorf("registers %+v", rs)
	}
}
