package lower_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// Every port of every reachable F-node resolves to one exit: a jump, a
// sink, a drop with its site and reason, or an undecided end, with the
// O-nodes on the way decided by the fired operand alone, as the
// interpreter decides them on a single path.
func TestExits(t *testing.T) {
	m := testutil.ModelSource(t, `include "lib/inet.nsc"
lpg L {
  node RxQueue { op input parse ethernet  port out -> A }
  node A { op test valid(ipv4)  port true -> Not  port false -> Or }
  not Not { port true -> B  port false -> TxQueue }
  or Or { port true -> Out  port false }
  node B { op test valid(udp)  port true -> And  port false -> Two }
  and And { port true -> Out  port false -> Cnt }
  node Cnt { op count "x"  port out -> Two }
  and Two { port true -> TxQueue  port false -> Bad }
  node Out [sink] { op nop  port out }
  node Bad { op drop "bad" }
  node TxQueue { op emit }
}`)
	g, _ := m.Graph("L")
	p, err := lower.Lower(g, "test")
	if err != nil {
		t.Fatal(err)
	}
	if p.Start.Name != "RxQueue" {
		t.Errorf("start %s", p.Start.Name)
	}
	got := map[string][]string{}
	for _, b := range p.Blocks {
		got[b.Node.Name] = nil
		for _, e := range b.Exits {
			got[b.Node.Name] = append(got[b.Node.Name], describe(e))
		}
	}
	want := map[string][]string{
		"RxQueue": {"goto A"},
		// true: not's one operand is true; false: or's only operand is
		// false, and or has no edge on false.
		"A": {"Not=false goto TxQueue", "Or=false drop Or.false unconnected"},
		// false: and short-circuits on one false operand.
		"B": {"And=true goto Out", "Two=false goto Bad"},
		// One true operand of two cannot decide an and.
		"Cnt":     {"undecided Two"},
		"Out":     {"sink Out"},
		"Bad":     nil,
		"TxQueue": nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exits (-want +got):\n%s", diff)
	}
}

func describe(e lower.Exit) string {
	var b strings.Builder
	for _, h := range e.Hops {
		b.WriteString(h.Node.Name + "=" + h.Port + " ")
	}
	switch e.Kind {
	case lower.Goto:
		b.WriteString("goto " + e.To.Name)
	case lower.Sink:
		b.WriteString("sink " + e.To.Name)
	case lower.Drop:
		b.WriteString("drop " + e.Site + " " + e.Reason)
	case lower.Undecided:
		b.WriteString("undecided " + e.Site)
	}
	return b.String()
}
