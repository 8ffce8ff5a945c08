package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/sim"
)

// tempRunCache gives nsc run a cache of the test's own (tests build
// programs against a source that changes); Go's build cache, under the
// same directory by default, stays where it is.
func tempRunCache(t *testing.T) {
	t.Helper()
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	t.Setenv("GOCACHE", strings.TrimSpace(string(gocache)))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
}

// vxlanModel is a model as a new user writes it from docs/language.md: a
// VXLAN tunnel end that strips the outer headers of frames from allowed
// VNIs and ages the inner IPv4 packet by one hop.
const vxlanModel = `include "lib/inet.nsc"

header vxlan 'flags:8, rsvd1:24, vni:24, rsvd2:8'

metadata tun { vni: 24 }

action allow(tag: 24) { tun.vni = tag }
action deny() { }

table vnis {
    key     { vxlan.vni: exact }
    actions { allow, deny }
    size    16
    default deny
}

lpg VXLANDecap {
    node RxQueue { op input parse ethernet  port out -> IsTunnel }
    node IsTunnel {
        op test valid(ipv4) && valid(udp) && udp.dport == 4789
        port true -> OuterCsum
        port false -> NotTunnel
    }
    node NotTunnel { op drop "not VXLAN" }
    node OuterCsum {
        op checksum verify ipv4
        port true -> UDPCsum
        port false -> BadOuterCsum
    }
    node BadOuterCsum { op drop "bad outer IPv4 checksum" }
    node UDPCsum {
        op checksum verify udp
        port true -> VX
        port false -> BadUDPCsum
    }
    node BadUDPCsum { op drop "bad UDP checksum" }
    node VX {
        op extract vxlan
        port true -> HasVNI
        port false -> Short
    }
    node Short { op drop "truncated" }
    node HasVNI {
        op test vxlan.flags & 0x08 != 0
        port true -> Tunnels
        port false -> NoVNI
    }
    node NoVNI { op drop "no VNI" }
    node Tunnels { op count "tunnelled"  port out -> VNI }
    node VNI {
        op lookup vnis
        port allow -> PopVXLAN
        port deny -> Denied
    }
    node Denied { op drop "VNI not allowed" }
    node PopVXLAN { op pop vxlan  port out -> PopUDP }
    node PopUDP { op pop udp  port out -> PopIPv4 }
    node PopIPv4 { op pop ipv4  port out -> PopEth }
    node PopEth { op pop ethernet  port out -> Inner }
    node Inner {
        op parse ethernet
        port true -> InnerKind
        port false -> InnerShort
    }
    node InnerShort { op drop "inner frame truncated" }
    node InnerKind {
        op test valid(ipv4)
        port true -> TTL
        port false -> Other
    }
    node TTL {
        op test ipv4.ttl > 1
        port true -> Age
        port false -> Expired
    }
    node Expired { op drop "TTL expired" }
    node Age {
        op set { ipv4.ttl = ipv4.ttl - 1 } update ipv4
        port out -> Routed
    }
    node Routed { op emit }
    node Other { op steer queue other }
}
`

const vxlanTables = "table_add vnis allow 100 => 100\ntable_add vnis allow 0x123456 => 7\n"

// vxlanFrames are good and bad frames for vxlanModel, built with
// gopacket; want names the node each should end at.
func vxlanFrames(t *testing.T) (frames [][]byte, want []string) {
	mac1, mac2 := []byte{2, 0, 0, 0, 0, 1}, []byte{2, 0, 0, 0, 0, 2}
	ser := func(ls ...gopacket.SerializableLayer) []byte {
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	inner := func(ttl uint8, opts bool) []byte {
		ip := &layers.IPv4{Version: 4, TTL: ttl, Protocol: layers.IPProtocolUDP, SrcIP: []byte{192, 168, 0, 1}, DstIP: []byte{192, 168, 0, 2}}
		if opts {
			ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
		}
		udp := &layers.UDP{SrcPort: 40000, DstPort: 40001}
		udp.SetNetworkLayerForChecksum(ip)
		return ser(&layers.Ethernet{SrcMAC: mac1, DstMAC: mac2, EthernetType: layers.EthernetTypeIPv4}, ip, udp, gopacket.Payload("inner payload"))
	}
	arp := ser(&layers.Ethernet{SrcMAC: mac1, DstMAC: layers.EthernetBroadcast, EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: 1, SourceHwAddress: mac1, SourceProtAddress: []byte{192, 168, 0, 1}, DstHwAddress: make([]byte, 6), DstProtAddress: []byte{192, 168, 0, 2}})
	outer := func(dport layers.UDPPort, payload []byte) []byte {
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: []byte{10, 0, 0, 1}, DstIP: []byte{10, 0, 0, 2}}
		udp := &layers.UDP{SrcPort: 49152, DstPort: dport}
		udp.SetNetworkLayerForChecksum(ip)
		return ser(&layers.Ethernet{SrcMAC: mac1, DstMAC: mac2, EthernetType: layers.EthernetTypeIPv4}, ip, udp, gopacket.Payload(payload))
	}
	vx := func(flags byte, vni uint32, in []byte) []byte {
		return append([]byte{flags, 0, 0, 0, byte(vni >> 16), byte(vni >> 8), byte(vni), 0}, in...)
	}
	add := func(node string, f []byte) {
		frames, want = append(frames, f), append(want, node)
	}
	add("Routed", outer(4789, vx(0x08, 100, inner(64, false))))
	add("Other", outer(4789, vx(0x08, 0x123456, arp)))
	add("Routed", outer(4789, vx(0x08, 0x123456, inner(2, true))))
	add("Denied", outer(4789, vx(0x08, 200, inner(64, false))))
	add("NotTunnel", outer(53, []byte("a DNS query")))
	add("NoVNI", outer(4789, vx(0x00, 100, inner(64, false))))
	add("Expired", outer(4789, vx(0x08, 100, inner(1, false))))
	short := outer(4789, []byte{0x08, 0, 0})
	short[40], short[41] = 0, 0
	add("Short", short[:14+20+8+3]) // gopacket pads to 60 bytes
	add("InnerShort", outer(4789, vx(0x08, 100, []byte{1, 2, 3, 4, 5})))
	bad := outer(4789, vx(0x08, 100, inner(64, false)))
	bad[24] ^= 0xff // the outer IPv4 header checksum
	add("BadOuterCsum", bad)
	bad = outer(4789, vx(0x08, 100, inner(64, false)))
	bad[40] ^= 0x01 // the UDP checksum
	add("BadUDPCsum", bad)
	zero := outer(4789, vx(0x08, 100, inner(9, false)))
	zero[40], zero[41] = 0, 0 // none: allowed over IPv4
	add("Routed", zero)
	add("RxQueue", []byte{1, 2, 3}) // malformed
	return frames, want
}

func writeVXLAN(t *testing.T) (dir, model, tables, in string, want []string) {
	dir = t.TempDir()
	model, tables, in = filepath.Join(dir, "vxlan.nsc"), filepath.Join(dir, "vnis.tables"), filepath.Join(dir, "in.pcap")
	writeFile(t, model, vxlanModel)
	writeFile(t, tables, vxlanTables)
	frames, want := vxlanFrames(t)
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i, fr := range frames {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(1700000000, int64(i)*1000), CaptureLength: len(fr), Length: len(fr)}
		if err := w.WritePacket(ci, fr); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, model, tables, in, want
}

// sinkFiles reads every pcap of an output directory.
func sinkFiles(t *testing.T, dir string) map[string][][]byte {
	names, err := filepath.Glob(filepath.Join(dir, "*.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][]byte{}
	for _, n := range names {
		out[filepath.Base(n)] = readSinkPcap(t, n)
	}
	return out
}

// A model of one's own runs through its generated Go fast path and comes
// out as the interpreter has it: the same sink files with the same
// frames, the same counters, text and JSON; built once, then run from
// the cache, also where no Go is installed.
func TestRunModelAsSim(t *testing.T) {
	tempRunCache(t) // the program is built here
	dir, model, tables, in, want := writeVXLAN(t)
	simOut, runOut := filepath.Join(dir, "sim"), filepath.Join(dir, "run")
	args := func(cmd, out string, more ...string) []string {
		a := []string{cmd, model, "--tables", tables, "--in", in, "--out", out}
		if cmd == "sim" {
			a = append(a, "--graph", "VXLANDecap")
		} else {
			a = append(a, "--lpg", "VXLANDecap")
		}
		return append(a, more...)
	}
	code, simText, stderr := nsc(t, args("sim", simOut, "--profile", filepath.Join(dir, "sim.profile"))...)
	if code != exitOK {
		t.Fatalf("nsc sim: exit %d: %s", code, stderr)
	}
	code, runText, stderr := nsc(t, args("run", runOut, "--profile", filepath.Join(dir, "run.profile"))...)
	if code != exitOK {
		t.Fatalf("nsc run: exit %d: %s", code, stderr)
	}
	simProfile, _ := os.ReadFile(filepath.Join(dir, "sim.profile"))
	runProfile, _ := os.ReadFile(filepath.Join(dir, "run.profile"))
	if diff := cmp.Diff(string(simProfile), string(runProfile)); diff != "" || !strings.Contains(string(runProfile), "PopVXLAN 6") {
		t.Errorf("--profile (-sim +run):\n%s\n%s", diff, runProfile)
	}
	if !strings.Contains(stderr, "nsc run: building the Go fast path of VXLANDecap") || !strings.Contains(stderr, "nsc run: built in") {
		t.Errorf("no progress on stderr while building:\n%s", stderr)
	}
	if diff := cmp.Diff(strings.ReplaceAll(simText, simOut, "DIR"), strings.ReplaceAll(runText, runOut, "DIR")); diff != "" {
		t.Errorf("nsc run's counters differ from nsc sim's (-sim +run):\n%s", diff)
	}
	simSinks, runSinks := sinkFiles(t, simOut), sinkFiles(t, runOut)
	if diff := cmp.Diff(simSinks, runSinks); diff != "" {
		t.Errorf("sink pcaps differ (-sim +run):\n%s", diff)
	}
	// Where each frame should end, and the aged inner packets with a
	// right header checksum, as gopacket reads them: the comparison above
	// is of something.
	ended := map[string]int{}
	for _, n := range want {
		ended[n]++
	}
	for node, n := range ended {
		line := fmt.Sprintf("  drop %-24s %6d  (", node, n)
		if node == "Routed" || node == "Other" {
			line = fmt.Sprintf("  sink %-24s %6d  -> ", node, n)
		}
		if !strings.Contains(runText, line) {
			t.Errorf("nsc run: no line %q:\n%s", line, runText)
		}
	}
	routed := runSinks["Routed.pcap"]
	if len(routed) != ended["Routed"] || len(runSinks["Other.pcap"]) != ended["Other"] {
		t.Fatalf("sinks: %d routed, %d other; want %d, %d", len(routed), len(runSinks["Other.pcap"]), ended["Routed"], ended["Other"])
	}
	for i, f := range routed {
		p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
		ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if ip == nil || p.ErrorLayer() != nil {
			t.Fatalf("routed frame %d is no inner IPv4 frame: %v", i, p)
		}
		wantTTL := []uint8{63, 1, 8}[i]
		sum := ip.Checksum
		again := gopacket.NewSerializeBuffer()
		ip.SerializeTo(again, gopacket.SerializeOptions{ComputeChecksums: true})
		if ip.TTL != wantTTL || ip.Checksum != sum || !bytes.Contains(f, []byte("inner payload")) {
			t.Errorf("routed frame %d: TTL %d (want %d), checksum %#x (right: %#x)", i, ip.TTL, wantTTL, sum, ip.Checksum)
		}
	}

	// JSON, and the cached program: no build the second time.
	decodeRun := func(cmd, out string) (map[string]any, string) {
		code, text, stderr := nsc(t, args(cmd, out, "--json")...)
		if code != exitOK {
			t.Fatalf("nsc %s --json: exit %d: %s", cmd, code, stderr)
		}
		var j map[string]any
		if err := json.Unmarshal([]byte(strings.ReplaceAll(text, out, "DIR")), &j); err != nil {
			t.Fatalf("nsc %s --json: %v\n%s", cmd, err, text)
		}
		return j, stderr
	}
	simJSON, _ := decodeRun("sim", filepath.Join(dir, "sim2"))
	runJSON, stderr := decodeRun("run", filepath.Join(dir, "run2"))
	if strings.Contains(stderr, "building") {
		t.Errorf("built again:\n%s", stderr)
	}
	if diff := cmp.Diff(simJSON, runJSON); diff != "" {
		t.Errorf("--json differs (-sim +run):\n%s", diff)
	}

	// Without Go: the program built above still runs; a new one cannot
	// be built, and the error says what to do.
	t.Setenv("PATH", t.TempDir())
	if code, text, stderr := nsc(t, args("run", filepath.Join(dir, "run3"))...); code != exitOK || strings.ReplaceAll(text, "run3", "run") != runText {
		t.Errorf("cached, without Go: exit %d, %s\n%s", code, stderr, text)
	}
	code, _, stderr = nsc(t, "run", "models/inet/udp.nsc", "--lpg", "UDPIPv4", "--in", in, "--out", filepath.Join(dir, "run4"))
	if code != exitModel || !strings.Contains(stderr, "nsc run: the generated Go is built with the Go toolchain, and no go command was found on PATH") || !strings.Contains(stderr, "nsc sim") {
		t.Errorf("no Go: exit %d, stderr %q", code, stderr)
	}
}

func TestRunModelUsage(t *testing.T) {
	dir, model, _, in, _ := writeVXLAN(t)
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"run", model, "--in", in, "--out", filepath.Join(dir, "x")}, exitUsage, "--lpg is required (or --lb for a shipped EJFAT LB)"},
		{[]string{"run", model, "--lpg", "VXLANDecap", "--in", in, "--out", filepath.Join(dir, "x"), "--interp"}, exitUsage, "--interp is for --lb; nsc sim runs a model in the interpreter"},
		{[]string{"run", model, "--lb", "lb-2021", "--in", in, "--out", filepath.Join(dir, "x.pcap")}, exitUsage, "--lb runs a shipped LB: no model files, --lpg or --prg"},
		{[]string{"run", model, "--lpg", "Nope", "--in", in, "--out", filepath.Join(dir, "x")}, exitModel, "nsc run: no graph Nope in the model (it has VXLANDecap)"},
		{[]string{"run", model, "--lpg", "VXLANDecap", "--in", in, "--out", filepath.Join(dir, "x"), "--tables", model}, exitModel, "nsc run: " + model + ":1: expected table_add"},
		{[]string{"run", "models/dragonet/stack.nsc", "--lpg", "IPStack", "--in", in, "--out", filepath.Join(dir, "x")}, exitModel,
			"nsc run: models/dragonet/stack.nsc:26:9: go: node RxIsPing: port true has a spawn edge; the generated code runs one task per frame\nnsc run: hint: nsc sim runs any graph in the interpreter\n"},
	} {
		code, _, stderr := nsc(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("nsc %v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
}

// docBlock is the first fenced block of kind lang after heading in a doc.
func docBlock(t *testing.T, doc, heading, lang string) string {
	t.Helper()
	src, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(src), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q", doc, heading)
	}
	_, block, ok := strings.Cut(sec, "\n```"+lang+"\n")
	if !ok {
		t.Fatalf("%s: %q has no %s block", doc, heading, lang)
	}
	block, _, _ = strings.Cut(block, "\n```\n")
	return block + "\n"
}

// docs/golang.md's own module: its go.mod (with a replace to this
// clone) and program around a package nsc compile generated, built by
// go in a module of their own, count what nsc sim counts.
func TestOwnModuleFromDocs(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root, _ := filepath.Abs("../..")
	doc := filepath.Join(root, "docs", "golang.md")
	dir, model, tables, in, _ := writeVXLAN(t)
	mod := filepath.Join(dir, "myapp")
	if err := os.Mkdir(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod := strings.Replace(docBlock(t, doc, "## Your own module", "gomod"), "/path/to/nsc", root, 1)
	writeFile(t, filepath.Join(mod, "go.mod"), gomod)
	writeFile(t, filepath.Join(mod, "main.go"), docBlock(t, doc, "## Your own module", "go"))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mod, "go.sum"), string(sum))
	if code, _, stderr := nsc(t, "compile", model, "--lpg", "VXLANDecap", "--target", "go", "-o", filepath.Join(mod, "mystack")); code != exitOK {
		t.Fatalf("nsc compile: %s", stderr)
	}
	cmd := exec.Command("go", "run", ".", in, tables)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	code, simText, stderr := nsc(t, "sim", model, "--graph", "VXLANDecap", "--tables", tables, "--in", in, "--out", filepath.Join(dir, "sim"))
	if code != exitOK {
		t.Fatal(stderr)
	}
	var want, got []string
	for _, m := range regexp.MustCompile(`(?m)^  (sink|drop) (\S+)\s+(\d+)  `).FindAllStringSubmatch(simText, -1) {
		want = append(want, m[1]+" "+m[2]+" "+m[3])
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	ran := map[string]int{}
	for _, l := range lines[:len(lines)-1] {
		kind, rest, _ := strings.Cut(l, " ")
		node, _, _ := strings.Cut(rest, ":")
		ran[kind+" "+node]++
	}
	for k, n := range ran {
		got = append(got, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" || lines[len(lines)-1] != "map[tunnelled:7]" {
		t.Errorf("the doc's program against nsc sim (-sim +program):\n%s\nlast line %q\n%s", diff, lines[len(lines)-1], out)
	}
}

// With --prg the embedded graph runs: its frames and counters are the
// interpreter's on the same embedded graph.
func TestRunModelEmbedded(t *testing.T) {
	tempRunCache(t)
	dir, model, tables, in, _ := writeVXLAN(t)
	files := []string{model, "models/inet/i82599.nsc"}
	out := filepath.Join(dir, "run")
	code, text, stderr := nsc(t, append(append([]string{"run"}, files...), "--lpg", "VXLANDecap", "--prg", "I82599", "--tables", tables, "--in", in, "--out", out, "--json")...)
	if code != exitOK {
		t.Fatalf("nsc run --prg: exit %d: %s", code, stderr)
	}
	var got countersJSON
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatal(err)
	}

	wd, _ := os.Getwd()
	os.Chdir("../..")
	em, err := embedding(files, "VXLANDecap", "I82599")
	os.Chdir(wd)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := loadTablesFile(em.Graph.Schema, tables)
	if err != nil {
		t.Fatal(err)
	}
	mach, err := sim.New(em.Graph, ts)
	if err != nil {
		t.Fatal(err)
	}
	frames, err := pcapio.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	wantSinks, paths := map[string][][]byte{}, map[string]string{}
	for _, f := range frames {
		mach.Run(f.Data, func(sink *dataflow.Node, data []byte) {
			wantSinks[sink.Name+".pcap"] = append(wantSinks[sink.Name+".pcap"], bytes.Clone(data))
			paths[sink.Name] = filepath.Join(out, sink.Name+".pcap")
		})
	}
	var want countersJSON
	b, _ := json.Marshal(countersOf(len(frames), mach.Counters(), paths))
	json.Unmarshal(b, &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counters (-interpreter +run):\n%s", diff)
	}
	if diff := cmp.Diff(wantSinks, sinkFiles(t, out)); diff != "" || len(wantSinks) != 2 {
		t.Errorf("sink pcaps (-interpreter +run), %d sinks:\n%s", len(wantSinks), diff)
	}
}

// docs/language.md's model over lib/inet.nsc and ejfat/hosts.nsc (one
// udp) embeds into both host PRGs and behaves there as alone.
func TestLibrariesCombineDoc(t *testing.T) {
	root, _ := filepath.Abs("../..")
	model := filepath.Join(t.TempDir(), "listener.nsc")
	writeFile(t, model, docBlock(t, filepath.Join(root, "docs", "language.md"), "### How libraries combine", "nsc"))
	for _, prg := range []string{"HostRaw", "LinuxUDP"} {
		code, out, stderr := nsc(t, "verify", model, "--lpg", "Listener", "--prg", prg, "--packets", "500")
		if code != exitOK || !strings.Contains(out, "Listener into "+prg+": 500 packets") || !strings.Contains(out, ", 0 mismatches") {
			t.Errorf("verify into %s: exit %d\n%s%s", prg, code, out, stderr)
		}
	}
}
