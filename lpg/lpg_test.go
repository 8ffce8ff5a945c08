package lpg_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lpg"
)

func names(ns []*dataflow.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

// The reassembler: its Rx part is every node (it sends nothing), its one
// stateful stage is Place; lb-2025 forwards, so it has both ends.
func TestShippedLPGs(t *testing.T) {
	md := testutil.Model(t, "ejfat/reassembler.nsc")
	g, _ := md.Graph("Reassembler")
	l, err := lpg.Of(g)
	if err != nil {
		t.Fatal(err)
	}
	if l.RxEntry() == nil || l.TxExit() != nil || len(l.RxPart()) != len(g.Nodes) {
		t.Errorf("reassembler: entry %v, exit %v, Rx part %d of %d nodes", l.RxEntry(), l.TxExit(), len(l.RxPart()), len(g.Nodes))
	}
	if diff := cmp.Diff([]string{"Place"}, names(l.Stateful())); diff != "" {
		t.Errorf("stateful stages (-want +got):\n%s", diff)
	}
	md = testutil.Model(t, "ejfat/lb-2025.nsc")
	g, _ = md.Graph("LB2025")
	if l, err = lpg.Of(g); err != nil || l.RxEntry() == nil || l.TxExit() == nil || len(l.Stateful()) != 0 {
		t.Errorf("lb-2025: %v, entry %v, exit %v", err, l.RxEntry(), l.TxExit())
	}
}

// Entries and exits that cannot be joined are refused, naming the rule.
func TestRefused(t *testing.T) {
	for src, want := range map[string]string{
		`lpg L { node Rx { op input  port out -> RxQueue }  node RxQueue { op nop  port out -> D }  node D { op drop "x" } }`: "RxQueue must be a source",
		`lpg L { node Rx { op input  port out -> TxQueue }  node TxQueue { op nop  port out -> D }  node D { op drop "x" } }`: "TxQueue must end packets",
		`prg P { node Rx { op input  port out -> D }  node D { op emit } }`:                                                   "is not an lpg",
		// A drop named TxQueue would be replaced by the PRG's Tx entry at the
		// join and send what the LPG drops; the error points at the node.
		`lpg L { node Rx { op input  port out -> TxQueue }  node TxQueue { op drop "x" } }`: "m.nsc:1:52: lpg L: TxQueue must end packets with op emit",
	} {
		md := testutil.ModelSource(t, src)
		g, _ := md.Graph(md.GraphNames()[0])
		_, err := lpg.Of(g)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}
