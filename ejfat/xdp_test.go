package ejfat

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"testing"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/sim"
)

// The XDP backend against the interpreter: each LB version's LPG embedded
// in the XDP PRG, compiled to BPF, loaded into the kernel and test-run
// (BPF_PROG_TEST_RUN) frame by frame; the interpreter runs the same
// embedded graph with the same table entries. Needs root and clang (see
// internal/xdptest).

// xdpTables is each version's table script.
var xdpTables = map[string]string{
	"lb-2021": "testdata/seed000.tables",
	"lb-2025": "testdata/lb-2025.tables",
	"lb-2026": "testdata/lb-2026.tables",
}

// xdpPair builds a version's XDP program and returns it loaded, with its
// maps filled from the version's table script, and the interpreter on the
// same graph with the same entries.
func xdpPair(t testing.TB, version string) (*xdprun.Runner, *sim.Machine) {
	t.Helper()
	script, err := os.ReadFile(xdpTables[version])
	if err != nil {
		t.Fatal(err)
	}
	return xdpPairScript(t, version, script)
}

// xdpPairScript is xdpPair with the entries of script.
func xdpPairScript(t testing.TB, version string, script []byte) (*xdprun.Runner, *sim.Machine) {
	t.Helper()
	xdptest.Require(t)
	m, g, err := LPG(version)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := m.Graph("XDP")
	if !ok {
		t.Fatalf("%s has no prg XDP", File(version))
	}
	em, err := embed.Embed(g, p)
	if err != nil {
		t.Fatal(err)
	}
	obj, _ := xdptest.Build(t, em.Graph, p.Limits, t.TempDir(), version)
	r, err := xdprun.Load(obj)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ts, err := r.Tables(xdpTables[version], bytes.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTables(ts); err != nil {
		t.Fatal(err)
	}
	its, err := Tables(m, xdpTables[version], bytes.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	mach, err := sim.New(em.Graph, its)
	if err != nil {
		t.Fatal(err)
	}
	return r, mach
}

// TestXDPEpochsAgainstInterpreter: lb-2025 with an epoch table as a
// control plane fills it, which the program finds by its interval index
// (epochsScript), against the interpreter on epochsFrames.
func TestXDPEpochsAgainstInterpreter(t *testing.T) {
	r, m := xdpPairScript(t, "lb-2025", epochsScript(t))
	where := xdptest.Compare(t, r, m, epochsFrames(t))
	if where["sink TxWire"] < 100 {
		t.Errorf("the corpus exercises too little: %v", where)
	}
}

// xdpSeeds are the crafted frames of Corpus (seed 000's transfers among
// them), the A.7 frame of the 2025 spec and the example frame of the 2026
// spec.
func xdpSeeds(t testing.TB) [][]byte {
	fs, err := Corpus()
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := hex.DecodeString("00aabbccddee0011223344550800450000380001000040116" + "2ae0a0102020a01020304d24c42002417ac4c42020000000001000000000000000a" + "736f6d65207061796c6f6164")
	return append(fs, ex, gplFrame(t, false, gplA7LB(), gplA7Payload()), gplFrame(t, true, gplA7LB(), gplA7Payload()))
}

// xdpMustRun are nodes of each version that pop, push, patch or compute
// checksums, or punt: the frames must take them.
var xdpMustRun = map[string][]string{
	"lb-2021": {"RxStrip", "RxIPv4Rewrite", "RxIPv6RewriteLow"},
	"lb-2025": {"LbPopCommon", "LbIPv6Strip", "LbIPv4Keep", "NsPushMac", "NsCsum", "Echo4Reply", "Echo6Reply", "ArpReply"},
	"lb-2026": {"LbPopCommon", "LbCsumKeepZero", "NsPushMac", "NsCsum", "L2PopVlan", "PuntCount", "Echo6Reply"},
}

// TestXDPVerifier loads every LB version's XDP program into the kernel:
// the verifier accepts each.
func TestXDPVerifier(t *testing.T) {
	for _, v := range Versions {
		t.Run(v, func(t *testing.T) {
			r, _ := xdpPair(t, v)
			t.Logf("%s: the verifier processed %d instructions", v, r.VerifiedInsns)
		})
	}
}

// TestXDPAgainstInterpreter runs the crafted corpus and frames derived
// from it (10,000 per version; 100,000 with NSC_XDP_FRAMES=100000) through
// each version's XDP program in the kernel and through the interpreter:
// the same verdicts (XDP_TX for TxWire, XDP_PASS for ToHost, XDP_DROP for
// a drop), the same bytes out, the same counters.
func TestXDPAgainstInterpreter(t *testing.T) {
	n := 10000
	if s := os.Getenv("NSC_XDP_FRAMES"); s != "" {
		fmt.Sscan(s, &n)
	}
	for _, v := range Versions {
		t.Run(v, func(t *testing.T) {
			r, m := xdpPair(t, v)
			s := xdpSeeds(t)
			where := xdptest.Compare(t, r, m, append(s, difftest.Mutate(s, n, 7)...))
			if where["sink TxWire"] < 100 || len(where) < 3 {
				t.Errorf("the corpus exercises too little: %v", where)
			}
			c := m.Counters()
			for _, node := range xdpMustRun[v] {
				if c.Nodes[node] == 0 {
					t.Errorf("no frame ran through %s", node)
				}
			}
			t.Logf("%d crafted + %d derived frames: %v", len(s), n, where)
		})
	}
}
