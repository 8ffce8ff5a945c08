package golang_test

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
)

func TestProfileRoundTrip(t *testing.T) {
	p := golang.Profile{"ParseEth": 10, "LbEpoch": 8, "ParseIPv6": 0}
	var b bytes.Buffer
	if _, err := p.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	want := "# nsc profile: frames each node ran on\nLbEpoch 8\nParseEth 10\nParseIPv6 0\n"
	if b.String() != want {
		t.Errorf("written:\n%s\nwant:\n%s", b.String(), want)
	}
	back, err := golang.ReadProfile("p", &b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, back); diff != "" {
		t.Errorf("read back (-wrote +read):\n%s", diff)
	}
}

func TestReadProfileErrors(t *testing.T) {
	for in, want := range map[string]string{
		"# c\nA 1\nB\n":     "p:3: want NODE RUNS, have \"B\"",
		"A 1 2\n":           "p:1: want NODE RUNS",
		"\nA -1\n":          "p:2: runs of A: \"-1\" is not a count",
		"A 1\n\n# x\nA 2\n": "p:4: node A listed twice",
	} {
		_, err := golang.ReadProfile("p", strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

// hotNodes generates LB2025@HostRaw with the profile and returns the
// nodes of the code laid out before the general code's first label.
func hotNodes(t *testing.T, prof golang.Profile) []string {
	t.Helper()
	src := lb2025(t, prof)
	body := string(src[bytes.Index(src, []byte("func (pl *Pipeline) Process(")):])
	if i := regexp.MustCompile(`(?m)^n\d+:$`).FindStringIndex(body); i != nil {
		body = body[:i[0]]
	}
	var names []string
	for _, m := range regexp.MustCompile(`\{ // (\w+):`).FindAllStringSubmatch(body, -1) {
		names = append(names, m[1])
	}
	return names
}

func TestHotPath(t *testing.T) {
	// Node runs of 10 IPv6 v2 frames forwarded and 2 ARP requests
	// answered: the IPv6 forward path is laid out first. LbKeep's two
	// targets ran equally often; LbEth is reached from LbPopV2, so the
	// pop comes first. Unknown names (a stale profile) change nothing.
	prof := golang.Profile{"RxWire": 12, "RxFrames": 12, "RxCount": 12, "ParseEth": 12, "ParseEthType": 12,
		"ParseArp": 2, "ParseArpCheck": 2, "ParseIPv6": 10, "ParseIPv6Check": 10, "ParseIPv6Next": 10,
		"ParseUdp": 10, "ParseUdpPort": 10, "ParseLb": 10, "ParseLbMagic": 10, "ParseLbVersion": 10,
		"ParseLbV2": 10, "L2MacDst": 12, "L3DaIPv4": 12, "L3DaIPv6": 10, "L3SetDaIPv6": 10,
		"L3IPDst": 12, "L3IsArp": 12, "L3IsIcmp4": 10, "L3IsEcho6": 10, "L3IsNs": 10, "LbRx": 10,
		"LbCtxRx": 10, "LbSrcIPv4": 10, "LbSrc6": 10, "LbIsV2": 10, "LbRxV2": 10, "LbSelV2": 10,
		"LbEpoch": 10, "LbSlot": 10, "LbCalendar": 10, "LbMember": 10, "LbPort": 10, "LbKeep": 10,
		"LbPopV2": 10, "LbPopV2Body": 10, "LbPopCommon": 10, "LbUdpLen": 10, "LbEth": 10,
		"LbIsIPv4": 10, "LbKeepIPv6": 10, "LbIPv6Strip": 10, "LbTxCount": 10, "TxCheck": 10,
		"TxQueue": 12, "TxWire": 12, "Gone": 99}
	hot := hotNodes(t, prof)
	for _, want := range []string{"ParseIPv6", "LbSrc6", "LbIPv6Strip", "TxWire"} {
		if !slices.Contains(hot, want) {
			t.Errorf("hot path %v lacks %s", hot, want)
		}
	}
	for _, not := range []string{"ParseIPv4", "ParseArp", "LbIPv4Strip"} {
		if slices.Contains(hot, not) {
			t.Errorf("hot path %v has %s", hot, not)
		}
	}
	if i, j := slices.Index(hot, "LbPopV2Body"), slices.Index(hot, "LbEth"); i < 0 || j < i {
		t.Errorf("hot path %v: LbPopV2Body at %d, LbEth at %d", hot, i, j)
	}
	if dup := len(hot) - len(slices.Compact(slices.Sorted(slices.Values(hot)))); dup != 0 {
		t.Errorf("hot path %v has %d nodes twice", hot, dup)
	}
	// Without a profile the code starts with the graph's start node, and
	// its first label follows at once.
	if got := hotNodes(t, nil); len(got) != 1 {
		t.Errorf("no profile: %v laid out before the general code", got)
	}
}

// TestHotPathFixedLayout checks how the hot path takes IPv4: its copy goes
// on to the next copy only for a header without options (so that the
// offsets behind it are constants), a header with options to the general
// code, which has the rest of the path for it (ejfat/lbfast's differential
// tests run such frames) and none of the hot path's own lines.
func TestHotPathFixedLayout(t *testing.T) {
	code := string(lb2025Hot(t))
	if strings.Contains(code, "//nsc:hot") {
		t.Error("generated code has the hot path's markers")
	}
	hot := regexp.MustCompile(`(?s)\nt\d+:\n\t\{ // ParseIPv4: .*?\n\}\n`).FindString(code)
	empty := regexp.MustCompile(`if (ext\d+) == 0 \{\s*cur = off \+ 20\s*goto t(\d+)\s*\}`).FindStringSubmatch(hot)
	if empty == nil {
		t.Fatalf("hot ParseIPv4 does not go on for a header without options only:\n%s", hot)
	}
	next := empty[2]
	if !strings.Contains(hot, "goto n"+next+"\n") || !strings.Contains(code, "\nn"+next+":\n") {
		t.Errorf("hot ParseIPv4 does not leave for n%s in the general code:\n%s", next, hot)
	}
}

// TestHotPathUncounted: a step of the hot path carries no edge counter (a
// branch around part of the path, as LbKeep's to LbEth, takes it), unless
// another port of the same node leads to the same next node uncounted.
func TestHotPathUncounted(t *testing.T) {
	src := lb2025Hot(t)
	body := string(src[bytes.Index(src, []byte("func (pl *Pipeline) Process(")):])
	body = body[:regexp.MustCompile(`(?m)^n\d+:$`).FindStringIndex(body)[0]]
	steps := 0
	for _, node := range regexp.MustCompile(`(?m)^t\d+:$`).Split(body, -1) {
		counted, free := map[string]bool{}, map[string]bool{}
		for _, m := range regexp.MustCompile(`(pl\.edges\[\d+\]\+\+\s*)?goto (t\d+)`).FindAllStringSubmatch(node, -1) {
			if m[1] != "" {
				counted[m[2]] = true
			} else {
				free[m[2]] = true
			}
		}
		for to := range counted {
			if !free[to] {
				t.Errorf("the hot path's step to %s is counted:\n%s", to, node)
			}
		}
		steps += len(free)
	}
	if steps < 40 {
		t.Errorf("%d steps on the hot path: the test did not find it", steps)
	}
}

// lb2025Hot generates LB2025@HostRaw with its checked-in profile.
func lb2025Hot(t *testing.T) []byte {
	t.Helper()
	f, err := os.Open("../../ejfat/lbfast/testdata/lb-2025.profile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prof, err := golang.ReadProfile("lb-2025.profile", f)
	if err != nil {
		t.Fatal(err)
	}
	return lb2025(t, prof)
}

// lb2025 generates LB2025@HostRaw with the profile.
func lb2025(t *testing.T, prof golang.Profile) []byte {
	t.Helper()
	m := testutil.Model(t, "ejfat/lb-2025.nsc")
	g, _ := m.Graph("LB2025")
	p, _ := m.Graph("HostRaw")
	em, err := embed.Embed(g, p)
	if err != nil {
		t.Fatal(err)
	}
	src, err := golang.Generate(em.Graph, golang.Options{Package: "hot", Profile: prof})
	if err != nil {
		t.Fatal(err)
	}
	return src
}
