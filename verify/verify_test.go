package verify_test

import (
	"os"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
	"github.com/dragonet-go/nsc/verify"
)

func embedding(t *testing.T, m *lang.Model, lpg, prg string) *embed.Embedding {
	t.Helper()
	l, ok1 := m.Graph(lpg)
	p, ok2 := m.Graph(prg)
	if !ok1 || !ok2 {
		t.Fatalf("no %s or %s", lpg, prg)
	}
	em, err := embed.Embed(l, p)
	if err != nil {
		t.Fatal(err)
	}
	return em
}

// Honest PRGs: the embedded graph behaves like the LPG alone on every
// packet, class-covering, random and malformed.
func TestHonestPRGs(t *testing.T) {
	for _, c := range []struct {
		file, lpg, prg string
		n              int
	}{
		{"inet/offload.nsc", "UDPIPv4", "I82599", 10000},
		{"dragonet/offload.nsc", "IPStack", "IPNicTx", 3000},
		{"dragonet/offload.nsc", "IPStack", "IPNicTxPlain", 3000},
		{"dragonet/offload.nsc", "IPStack", "IPNicRx", 3000},
	} {
		em := embedding(t, testutil.Model(t, c.file), c.lpg, c.prg)
		res, err := verify.Run(em, verify.Generate(em, c.n, 7), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Cases != c.n || res.Classes == 0 {
			t.Errorf("%s/%s: %d cases, %d from classes", c.lpg, c.prg, res.Cases, res.Classes)
		}
		for i, m := range res.Mismatches {
			if i == 3 {
				break
			}
			t.Errorf("%s/%s: %s", c.lpg, c.prg, m)
		}
	}
}

// Trimming an implied operand of an AND keeps behaviour (embed's
// TestTrimImpliedOperand model, packets from every class).
func TestTrimmedANDBehaves(t *testing.T) {
	src := testutil.ImpliedOperand
	em := embedding(t, testutil.ModelSource(t, src), "L", "P")
	res, err := verify.Run(em, verify.Generate(em, 2000, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, mm := range res.Mismatches {
		if i == 3 {
			break
		}
		t.Error(mm)
	}
}

// A PRG that claims a valid UDP checksum for IPv4 with options without
// computing one fools the embedder (it is a proof from declarations), but
// not verify: packets of that class come out with bad checksums.
func TestLyingPRG(t *testing.T) {
	ld := lang.Loader{ReadFile: os.ReadFile, Library: models.FS}
	m, err := ld.Load("testdata/lying.nsc")
	if err != nil {
		t.Fatal(err)
	}
	em := embedding(t, m, "UDPIPv4", "Liar")
	if p, _ := em.Placement("TxUDPCsum"); p.Kind != embed.Hardware {
		t.Fatalf("the lie should have been believed: %+v", p)
	}
	res, err := verify.Run(em, verify.Generate(em, 2000, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mismatches) == 0 {
		t.Fatal("verify did not catch the lying PRG")
	}
	named := false
	for _, mm := range res.Mismatches {
		if mm.Case.Source != "AppOut" {
			t.Errorf("mismatch on a packet the lie does not touch: %s", mm)
		}
		if strings.Contains(mm.Case.Why, "sock.opts=1") || strings.Contains(mm.Case.Why, "ipv4.ihl=6") {
			named = true
		}
	}
	if !named {
		t.Errorf("no mismatch names the class with options; first: %s", res.Mismatches[0])
	}
}
