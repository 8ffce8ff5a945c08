package verify_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
	"github.com/dragonet-go/nsc/sim"
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
// packet, class-covering, claim-testing, random and malformed; and every
// fact the embedded graph trusts the PRG with was tested by packets that
// lack it and reached its node.
func TestHonestPRGs(t *testing.T) {
	for _, c := range []struct {
		file, lpg, prg string
		claims         int // facts tested
	}{
		{"inet/offload.nsc", "UDPIPv4", "I82599", 5},
		{"dragonet/offload.nsc", "IPStack", "IPNicTx", 1},
		{"dragonet/offload.nsc", "IPStack", "IPNicTxPlain", 0},
		{"dragonet/offload.nsc", "IPStack", "IPNicRx", 1},
		{"ejfat/lb-2026.nsc", "LB2026", "LinuxUDP", 2},
	} {
		const n = 10000
		em := embedding(t, testutil.Model(t, c.file), c.lpg, c.prg)
		res := run(t, em, n)
		if res.Cases != n || res.Classes == 0 {
			t.Errorf("%s/%s: %d cases, %d from classes", c.lpg, c.prg, res.Cases, res.Classes)
		}
		for i, m := range res.Mismatches {
			if i == 3 {
				break
			}
			t.Errorf("%s/%s: %s", c.lpg, c.prg, m)
		}
		if got := testedClaims(t, res); got != c.claims {
			t.Errorf("%s/%s: %d facts tested, want %d", c.lpg, c.prg, got, c.claims)
		}
	}
}

func run(t *testing.T, em *embed.Embedding, n int) *verify.Result {
	t.Helper()
	res, err := verify.Run(em, verify.Generate(em, n, 7), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// testedClaims checks that every claim that can be tested was, by packets
// most of which reached its node, and returns how many were.
func testedClaims(t *testing.T, res *verify.Result) int {
	t.Helper()
	n := 0
	for _, c := range res.Claims {
		switch {
		case c.Claim.Untested != "":
			if c.Packets != 0 {
				t.Errorf("%s: %s, yet %d packets tested it", c.Claim.Name(), c.Claim.Untested, c.Packets)
			}
		case c.Packets == 0 || 2*c.Reached < c.Packets:
			t.Errorf("%s: %d packets lacking it, %d reached %s", c.Claim.Name(), c.Packets, c.Reached, c.Claim.Node)
		default:
			n++
		}
	}
	return n
}

func load(t *testing.T, file string) *lang.Model {
	t.Helper()
	ld := lang.Loader{ReadFile: os.ReadFile, Library: models.FS}
	m, err := ld.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// PRGs that claim a fact their operations do not establish, on Rx and on
// Tx. The embedder believes each (the LPG node that checks or makes the
// fact is gone); verify must fail on packets that lack the fact, naming
// the claim and the class.
func TestClaimLiars(t *testing.T) {
	for _, c := range []struct {
		file, lpg, prg string
		believed       string // the LPG node the claim does away with
		claim, class   string
	}{
		// The UDP sink claims a good UDP checksum; only IPv4's is checked.
		{"testdata/liars.nsc", "UDPIPv4", "RxCsumLiar", "RxUDPCsum",
			"csum_ok(udp) claimed by RxIsUDP.true (pred)", "not csum_ok(udp)"},
		// The Tx engine computes IPv4's checksum and claims UDP's.
		{"testdata/liars.nsc", "UDPIPv4", "TxCsumLiar", "TxUDPCsum",
			"csum_ok(udp) claimed by TxUDPField.out (pred)", "not csum_ok(udp)"},
		// The Tx engine claims UDP's checksum for IPv4 with options.
		{"testdata/lying.nsc", "UDPIPv4", "Liar", "TxUDPCsum",
			"csum_ok(udp) claimed by TxClaim.out (pred)", "not csum_ok(udp)"},
		// The address filter claims what it does not test.
		{"testdata/filter.nsc", "ForUs", "AddrLiar", "RxMine",
			"ipv4.dst == host.addr claimed by RxFilter.true (pred)", "not ipv4.dst == host.addr"},
	} {
		em := embedding(t, load(t, c.file), c.lpg, c.prg)
		if p, _ := em.Placement(c.believed); p.Kind != embed.Hardware && p.Kind != embed.Pruned {
			t.Errorf("%s: the claim should have been believed: %+v", c.prg, p)
		}
		res := run(t, em, 2000)
		named := slices.ContainsFunc(res.Mismatches, func(m verify.Mismatch) bool {
			if m.Case.Claim != c.claim {
				return false
			}
			text := m.String()
			return strings.Contains(text, "claim "+c.claim+": class ") && strings.Contains(text, c.class)
		})
		if !named {
			t.Errorf("%s: %d mismatches, none on a packet testing %q of class %q", c.prg, len(res.Mismatches), c.claim, c.class)
			continue
		}
		for _, cr := range res.Claims {
			if cr.Claim.Name() == c.claim && (cr.Mismatches == 0 || cr.Reached == 0) {
				t.Errorf("%s: %s: %d packets, %d reached, %d mismatches", c.prg, c.claim, cr.Packets, cr.Reached, cr.Mismatches)
			}
		}
	}
}

// Claims that hold pass: a NIC that checks and computes the UDP checksum
// for IPv4 without options only and claims it only there (the claims are
// tested on that class alone), and an address filter that tests what it
// claims.
func TestHonestClaims(t *testing.T) {
	for _, c := range []struct {
		file, lpg, prg string
		claims         int
	}{
		{"testdata/liars.nsc", "UDPIPv4", "Partial", 5},
		{"testdata/filter.nsc", "ForUs", "AddrFilter", 1},
	} {
		em := embedding(t, load(t, c.file), c.lpg, c.prg)
		res := run(t, em, 4000)
		for i, m := range res.Mismatches {
			if i == 3 {
				break
			}
			t.Errorf("%s: %s", c.prg, m)
		}
		if got := testedClaims(t, res); got != c.claims {
			t.Errorf("%s: %d facts tested, want %d", c.prg, got, c.claims)
		}
	}
}

// The partial offload's facts are tested under its guard only: the UDP
// checksum it checks and computes, on IPv4 without options.
func TestClaimsUnderGuard(t *testing.T) {
	em := embedding(t, load(t, "testdata/liars.nsc"), "UDPIPv4", "Partial")
	if p, _ := em.Placement("TxUDPCsum"); p.Kind != embed.Split {
		t.Fatalf("TxUDPCsum: %+v, want a split", p)
	}
	guarded := map[string]bool{
		"csum_ok(udp) established by RxL4CS.true (checksum verify udp)":    true,
		"csum_ok(udp) established by TxUDPCsum.out (checksum compute udp)": true,
	}
	n := 0
	for _, c := range verify.Generate(em, 4000, 7) {
		if !guarded[c.Claim] {
			continue
		}
		n++
		if c.Source == "AppOut" && c.Meta[0].Lo != 0 { // sock.opts: options
			t.Errorf("%s: a packet with IPv4 options (%s)", c.Claim, c.Why)
		}
		if c.Source == "RxQueue" {
			ip, ok := gopacket.NewPacket(c.Frame, layers.LayerTypeEthernet, gopacket.Default).Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			if !ok || ip.IHL != 5 {
				t.Errorf("%s: a frame that is not IPv4 without options: % x", c.Claim, c.Frame)
			}
		}
	}
	if n == 0 {
		t.Error("no packet tests the guarded facts")
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
	em := embedding(t, load(t, "testdata/lying.nsc"), "UDPIPv4", "Liar")
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

// The reassembler keeps state: verify runs sequences of segments (in
// order, shuffled, reversed, duplicated, one missing, overlapping, with a
// length mismatch, late), and behind honest NICs, one that places
// segments itself among them, every segment comes out as it does from
// the LPG alone. The sequences make whole events: the LPG alone delivers
// some of them; and every port of the place is reached.
func TestPlaceSequences(t *testing.T) {
	for _, prg := range []string{"RDMA", "I82599"} {
		m := testutil.Model(t, "ejfat/reassembler.nsc", map[string]string{"RDMA": "ejfat/rdma.nsc", "I82599": "inet/i82599.nsc"}[prg])
		em := embedding(t, m, "Reassembler", prg)
		const n = 10000
		cases := verify.Generate(em, n, 7)
		res, err := verify.Run(em, cases, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Cases != n || res.Sequences < n/5 {
			t.Errorf("%s: %d cases, %d in sequences", prg, res.Cases, res.Sequences)
		}
		for i, m := range res.Mismatches {
			if i == 3 {
				break
			}
			t.Errorf("%s: %s", prg, m)
		}
		if events := delivered(t, em, cases, "sequence"); events < 100 {
			t.Errorf("%s: the sequences made %d whole events", prg, events)
		}
		for _, u := range res.Unreached {
			if slices.Contains([]string{"Deliver", "Stored", "Duplicate", "Overlap", "Late", "LengthMismatch"}, u.Node) {
				t.Errorf("%s: a port of the place not reached: %s: %s", prg, u.Node, u.Why)
			}
		}
	}
}

// delivered runs the cases whose reason starts with why through the LPG
// alone, in the interpreter, and counts what reaches its Deliver.
func delivered(t *testing.T, em *embed.Embedding, cases []verify.Case, why string) int {
	t.Helper()
	m, err := sim.New(em.LPG, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		if strings.HasPrefix(c.Why, why) {
			m.RunMeta(em.LPG.Node(c.Source), c.Frame, c.Meta, func(s *dataflow.Node, _ []byte) {
				if s.Name == "Deliver" {
					n++
				}
			})
		}
	}
	return n
}

// NICs that claim placement they do not do: a sink claiming
// complete(events) with no place behind it (believed: the LPG's place is
// folded to complete there), and a place at the wrong offset (refused:
// the LPG places again behind it). Both fail on sequences of segments, and
// the mismatch names the sequence and its class.
func TestPlaceLiars(t *testing.T) {
	ld := lang.Loader{ReadFile: os.ReadFile, Library: models.FS}
	m, err := ld.Load("../models/ejfat/reassembler.nsc", "testdata/placeliars.nsc")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ prg, placement string }{
		{"CompleteLiar", "always complete behind RxEvent"},
		{"OffsetLiar", "OffsetLiar's RxPlace places at re.Offset + 8, Place at re.Offset"},
	} {
		em := embedding(t, m, "Reassembler", c.prg)
		if p, _ := em.Placement("Place"); !strings.Contains(p.Reason, c.placement) {
			t.Errorf("%s: Place %s: %s", c.prg, p.Kind, p.Reason)
		}
		res := run(t, em, 3000)
		named := slices.ContainsFunc(res.Mismatches, func(m verify.Mismatch) bool {
			return strings.HasPrefix(m.Case.Why, "sequence ") && strings.Contains(m.String(), "at Place: class ")
		})
		if !named {
			t.Errorf("%s: %d mismatches, none on a sequence naming its class", c.prg, len(res.Mismatches))
		}
	}
}
