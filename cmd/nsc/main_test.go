package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/internal/testutil"
)

// nsc runs the CLI in-process from the repository root.
func nsc(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	wd, _ := os.Getwd()
	if err := os.Chdir("../.."); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	var o, e bytes.Buffer
	code = run(args, &env{&o, &e})
	return code, o.String(), e.String()
}

func TestExitCodes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.nsc")
	os.WriteFile(bad, []byte("header h { a: 8 }\nlpg G {\n node Q { op input port out -> Nope }\n}\n"), 0o644)
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{nil, exitUsage, "usage:"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"check"}, exitUsage, "no model file given"},
		{[]string{"check", "--nope", "x.nsc"}, exitUsage, "flag provided but not defined: -nope"},
		{[]string{"check", bad}, exitModel, bad + ":3:32: node Q: port out: unknown node Nope"},
		{[]string{"check", "missing.nsc"}, exitModel, "missing.nsc:1:1: cannot read model"},
		{[]string{"pred", "models/dragonet/nic.nsc", "--graph", "IPNicTx"}, exitUsage, "--node is required"},
		{[]string{"pred", "models/dragonet/nic.nsc", "--node", "TxSwOut"}, exitUsage, "--graph is required: the model has IPNicTx, IPNicTxPlain, IPNicRx"},
		{[]string{"pred", "models/dragonet/nic.nsc", "--graph", "Nope", "--node", "X"}, exitModel, "no graph Nope in the model (it has IPNicTx, IPNicTxPlain, IPNicRx)"},
		{[]string{"sim", "models/inet/udp.nsc", "--graph", "UDPIPv4"}, exitUsage, "--in and --out are required"},
		{[]string{"lb", "--tables", "t", "--listen", "127.0.0.1:1", "--cp", "127.0.0.1:2"}, exitUsage, "--cp and --token go together"},
		{[]string{"demo", "--xdp"}, exitUsage, "--xdp goes with --system"},
		{[]string{"check", "models/..."}, exitOK, ""},
	} {
		code, _, stderr := nsc(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("nsc %v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
}

// Every shipped model loads, on disk and from the binary's copy.
func TestCheckShippedModels(t *testing.T) {
	code, out, stderr := nsc(t, "check", "models/...")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"ok  models/dragonet/offload.nsc: lpg IPStack", "ok  models/inet/offload.nsc: lpg UDPIPv4 (29 nodes), prg I82599"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, stderr := nsc(t, "check", "lib/inet.nsc"); code != exitOK {
		t.Errorf("shipped lib/inet.nsc by its short name: %s", stderr)
	}
}

func TestPredSeed003(t *testing.T) {
	code, out, stderr := nsc(t, "pred", "models/dragonet/nic.nsc", "--graph", "IPNicTx", "--node", "TxSwOut")
	if code != exitOK {
		t.Fatal(stderr)
	}
	want := "TxSwOut:\nOR\n  AND\n    net.prot != 2\n    pred(TxQueue,out)\n  AND\n    net.prot == 2\n    pred(TxPsetCtx,out)\n    pred(TxQueue,out)\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// nsc sim on a gopacket-built pcap sends every frame where gopacket's own
// decoding and checksum verification say it should go.
func TestSimAgainstGopacket(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcap")
	frames := testutil.UDPCorpus(t)
	f, _ := os.Create(in)
	w := pcapgo.NewWriter(f)
	w.WriteFileHeader(65536, layers.LinkTypeEthernet)
	for i, fr := range frames {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(int64(i), 0), CaptureLength: len(fr), Length: len(fr)}
		if err := w.WritePacket(ci, fr); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	out := filepath.Join(dir, "out")
	code, stdout, stderr := nsc(t, "sim", "models/inet/udp.nsc", "--graph", "UDPIPv4", "--in", in, "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Frames that reach a sink come back in its pcap, in order, byte for
	// byte; the others show up in the drop counters.
	want := map[string][][]byte{}
	drops := map[string]int{}
	for _, fr := range frames {
		if sink := testutil.UDPOracle(fr); strings.HasPrefix(sink, "App") {
			want[sink] = append(want[sink], fr)
		} else {
			drops[sink]++
		}
	}
	got := map[string][][]byte{}
	for sink := range want {
		got[sink] = readSinkPcap(t, filepath.Join(out, sink+".pcap"))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sink pcaps (-gopacket +nsc):\n%s", diff)
	}
	for node, n := range drops {
		line := "drop " + node
		if !strings.Contains(stdout, line) {
			t.Errorf("no %q line in:\n%s", line, stdout)
			continue
		}
		var count int
		for _, l := range strings.Split(stdout, "\n") {
			if fields := strings.Fields(l); len(fields) >= 3 && fields[0] == "drop" && fields[1] == node {
				count = atoi(fields[2])
			}
		}
		if count != n {
			t.Errorf("drop %s: %d, gopacket says %d", node, count, n)
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func readSinkPcap(t *testing.T, name string) [][]byte {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
}

func TestDotAndDemo(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := nsc(t, "dot", "models/dragonet/stack.nsc", "--graph", "IPStack", "-o", filepath.Join(dir, "s.dot"))
	if code != exitOK {
		t.Fatal(stderr)
	}
	src, _ := os.ReadFile(filepath.Join(dir, "s.dot"))
	if !bytes.Contains(src, []byte("DO NOT EDIT")) || !bytes.Contains(src, []byte("RxValid")) {
		t.Errorf("dot output:\n%s", src)
	}
	code, out, stderr := nsc(t, "demo", "-o", filepath.Join(dir, "demo"))
	if code != exitOK {
		t.Fatal(stderr)
	}
	for _, want := range []string{"ok  prg IPNicRx", "RxCsumInvalid:", "IPStack.dot",
		// seed 000: member 0 for both transfers, the two runs agree.
		"11 events -> member 11:22:33:44:55:66 at 170.187.204.221 port 17750",
		"11 events -> member 11:22:33:44:55:66 at fe80::3 port 17750",
		"agree byte for byte on 22 of 22 packets",
		// an event across segmenter, LB and reassembler, all generated.
		"cut into 14 segments", "sent 14 segments to member 02:00:00:00:00:02 at 10.1.3.2 port 19001",
		"20000 bytes, byte for byte the event sent"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

func TestEmbedAndVerify(t *testing.T) {
	code, out, stderr := nsc(t, "embed", "models/inet/offload.nsc", "--lpg", "UDPIPv4", "--prg", "I82599", "--json")
	if code != exitOK {
		t.Fatal(stderr)
	}
	var rep struct {
		Placements []struct{ Node, Placement, Hardware, Guard string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range rep.Placements {
		got[p.Node] = p.Placement + " " + p.Hardware + " " + p.Guard
	}
	for node, want := range map[string]string{"TxIPv4Csum": "hardware TxIPCsum ", "TxUDPCsum": "split TxUDPCsum ipv4.ihl > 5", "RxUDPCsum": "pruned  "} {
		if got[node] != want {
			t.Errorf("%s: %q, want %q", node, got[node], want)
		}
	}
	if code, _, stderr := nsc(t, "embed", "models/inet/offload.nsc", "--lpg", "UDPIPv4"); code != exitUsage || !strings.Contains(stderr, "--lpg and --prg are required") {
		t.Errorf("missing --prg: exit %d %s", code, stderr)
	}
	if code, _, stderr := nsc(t, "embed", "models/inet/offload.nsc", "--lpg", "I82599", "--prg", "UDPIPv4"); code != exitModel || !strings.Contains(stderr, "I82599 is a prg, not a lpg") {
		t.Errorf("swapped graphs: exit %d %s", code, stderr)
	}
	code, out, stderr = nsc(t, "verify", "models/inet/offload.nsc", "--lpg", "UDPIPv4", "--prg", "I82599", "--packets", "3000")
	if code != exitOK || !strings.Contains(out, "3000 packets") || !strings.Contains(out, "0 mismatches") {
		t.Errorf("honest verify: exit %d\n%s%s", code, out, stderr)
	}
	// Per fact trusted, the packets that lacked it.
	perClaim := regexp.MustCompile(`(?m)^  csum_ok\(udp\) established by RxL4CS\.true \(checksum verify udp\): ([1-9][0-9]*) packets without it, ([0-9]+) reached RxL4CS, 0 mismatches$`)
	if m := perClaim.FindStringSubmatch(out); m == nil || m[1] != m[2] {
		t.Errorf("honest verify: no count of the packets testing the UDP checksum check\n%s", out)
	}
	code, out, stderr = nsc(t, "verify", "verify/testdata/liars.nsc", "--lpg", "UDPIPv4", "--prg", "RxCsumLiar", "--packets", "2000", "--mismatches", filepath.Join(t.TempDir(), "liar.pcap"))
	if code != exitModel || !strings.Contains(out, "mismatch 1: packet from RxQueue (claim csum_ok(udp) claimed by RxIsUDP.true (pred): class ") {
		t.Errorf("Rx liar: exit %d\n%s%s", code, out, stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.pcap")
	code, out, stderr = nsc(t, "verify", "verify/testdata/lying.nsc", "--lpg", "UDPIPv4", "--prg", "Liar", "--packets", "1000", "--mismatches", bad)
	if code != exitModel || !strings.Contains(stderr, "packets differ") || !strings.Contains(out, "mismatch 1: packet from AppOut") {
		t.Errorf("lying verify: exit %d\n%s%s", code, out, stderr)
	}
	if frames := readSinkPcap(t, bad); len(frames) == 0 {
		t.Errorf("no mismatching packets written")
	}
}
