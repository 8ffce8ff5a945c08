package embed_test

import (
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// A table stage moves to a hardware lookup of the same table only if the
// table fits the PRG's declared limits.
const limitsModel = `
include "lib/inet.nsc"
metadata m { mark: 8 }
action tag(v: 8) { m.mark = v }
table marks {
  key { ipv4.dst: lpm }
  actions { tag }
  default tag(0)
  size SIZE
}
lpg L {
  node TxIn { op input parse ethernet  port out -> Mark }
  node Mark { op lookup marks  port tag -> TxQueue }
  node TxQueue { op emit }
}
prg P {
  limits { table_size 1024  key_bits 64 }
  node TxQueue [software] { op input  port out -> Mark }
  node Mark [hardware] { op lookup marks  port tag -> Out }
  node Out [hardware] { op emit }
}`

func TestTableLimits(t *testing.T) {
	for size, want := range map[string]embed.Kind{"512": embed.Hardware, "4096": embed.Software} {
		src := strings.Replace(limitsModel, "SIZE", size, 1)
		m := testutil.ModelSource(t, src)
		l, _ := m.Graph("L")
		p, _ := m.Graph("P")
		em, err := embed.Embed(l, p)
		if err != nil {
			t.Fatal(err)
		}
		pl, _ := em.Placement("Mark")
		if pl.Kind != want {
			t.Errorf("size %s: %+v", size, pl)
		}
		if want == embed.Software && !strings.Contains(pl.Reason, "table marks has 4096 entries and P holds at most 1024 (limit table_size)") {
			t.Errorf("size %s: reason %q", size, pl.Reason)
		}
	}
}

// embedString embeds lpg into prg, both from the model source src.
func embedString(t *testing.T, src, lpg, prg string) *embed.Embedding {
	t.Helper()
	m := testutil.ModelSource(t, src)
	l, _ := m.Graph(lpg)
	p, _ := m.Graph(prg)
	em, err := embed.Embed(l, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Graph.Validate(); err != nil {
		t.Fatal(err)
	}
	return em
}

// A device that holds fewer tables than the LPG looks up keeps the ones
// the frames meet first and leaves the others to the host.
func TestDeviceTables(t *testing.T) {
	src := `
include "lib/inet.nsc"
metadata m { mark: 8 }
action tag(v: 8) { m.mark = v }
table first { key { ipv4.dst: exact } actions { tag } default tag(0) }
table second { key { ipv4.src: exact } actions { tag } default tag(0) }
lpg L {
  node RxQueue { op input parse ethernet  port out -> A }
  node A { op lookup first  port tag -> B }
  node B { op lookup second  port tag -> TxQueue }
  node TxQueue { op emit }
}
prg D {
  limits { tables 1 }
  node Wire [hardware] { op input  port out -> Frames }
  node Frames [software, sink, program] { op nop  port out }
  node TxQueue [software] { op input  port out -> Out }
  node Out [hardware] { op emit }
}`
	em := embedString(t, src, "L", "D")
	if p, _ := em.Placement("A"); p.Kind != embed.Program {
		t.Errorf("A: %+v", p)
	}
	if p, _ := em.Placement("B"); p.Kind != embed.Host || p.Reason != "table second would be table 2 of D, which holds 1 (limit tables; the device keeps those the frames meet first)" {
		t.Errorf("B: %+v", p)
	}
	if em.Device == nil || em.Device.Node("B") != nil || em.Device.Node("A") == nil {
		t.Errorf("device part: %v", em.Device)
	}
}

// Keyed state is not in a device's program: the place goes to the host.
func TestDevicePlace(t *testing.T) {
	src := `
include "lib/inet.nsc"
state s { key { ipv4.src } buffer ipv4.total_len }
lpg L {
  node RxQueue { op input parse ethernet  port out -> IsIPv4 }
  node IsIPv4 { op test valid(ipv4)  port true -> P  port false -> Bad }
  node P { op place s at ipv4.id  port placed -> Bad  port complete -> TxQueue  port duplicate -> Bad  port overlap -> Bad
    port late -> Bad  port length_mismatch -> Bad  port out_of_bounds -> Bad  port zero_length -> Bad  port too_large -> Bad }
  node Bad { op drop "bad" }
  node TxQueue { op emit }
}
prg D {
  node Wire [hardware] { op input  port out -> Frames }
  node Frames [software, sink, program] { op nop  port out }
  node TxQueue [software] { op input  port out -> Out }
  node Out [hardware] { op emit }
}`
	em := embedString(t, src, "L", "D")
	p, _ := em.Placement("P")
	if p.Kind != embed.Host || !strings.Contains(p.Reason, "keyed state") || !strings.Contains(p.Counterexample, "valid(ipv4)") {
		t.Errorf("P: %+v", p)
	}
	if p, _ := em.Placement("IsIPv4"); p.Kind != embed.Program {
		t.Errorf("IsIPv4: %+v", p)
	}
}
