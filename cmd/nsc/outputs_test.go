package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/internal/testutil"
)

const (
	seedPcap   = "ejfat/testdata/seed000-scapy.pcap"
	seedTables = "ejfat/testdata/seed000.tables"
)

// abs is a repository file's absolute path (nsc runs from the root).
func abs(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("../..", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A table script with an error on line 2: every command that loads one
// fails before it writes anything, and leaves an output file that was
// there as it was.
func TestBadTablesLeaveNoOutput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.tables")
	good, _ := os.ReadFile(abs(t, seedTables))
	os.WriteFile(bad, append([]byte("table_add nosuchtable nosuchaction 1 =>\n"), good...), 0o644)
	old := filepath.Join(dir, "old.pcap")
	os.WriteFile(old, []byte("previous output"), 0o644)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"run", []string{"run", "--lb", "lb-2021", "--tables", bad, "--in", seedPcap, "--out", filepath.Join(dir, "new.pcap"), "--profile", filepath.Join(dir, "new.profile")}},
		{"run --interp", []string{"run", "--lb", "lb-2021", "--tables", bad, "--in", seedPcap, "--out", filepath.Join(dir, "new.pcap"), "--interp"}},
		{"run over old", []string{"run", "--lb", "lb-2021", "--tables", bad, "--in", seedPcap, "--out", old}},
		{"sim", []string{"sim", "models/ejfat/lb-2021.nsc", "--graph", "LB2021", "--tables", bad, "--in", seedPcap, "--out", filepath.Join(dir, "sim")}},
	} {
		code, _, stderr := nsc(t, c.args...)
		if code != exitModel || !strings.Contains(stderr, bad+":1:") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 naming %s:1", c.name, code, stderr, bad)
		}
		if names := testutil.DirNames(t, dir); !slices.Equal(names, []string{"bad.tables", "old.pcap"}) {
			t.Errorf("%s: the directory holds %v", c.name, names)
		}
		if b, _ := os.ReadFile(old); string(b) != "previous output" {
			t.Errorf("%s: old.pcap now holds %d bytes", c.name, len(b))
		}
	}
}

// A profile that cannot be written fails the run before its pcap is put
// in place.
func TestUnwritableProfileLeavesNoOutput(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "missing", "p.profile")
	code, _, stderr := nsc(t, "run", "--lb", "lb-2021", "--tables", seedTables, "--in", seedPcap, "--out", filepath.Join(dir, "out.pcap"), "--profile", prof)
	if code != exitModel || !strings.Contains(stderr, "create "+prof+": no such file or directory") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if names := testutil.DirNames(t, dir); len(names) != 0 {
		t.Errorf("the directory holds %v", names)
	}
}

// An output that is an input — by the same name, through a symbolic
// link, with a ./ prefix, or a hard link — is refused (exit 2) and the
// input stays as it was.
func TestOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcap")
	seed, _ := os.ReadFile(abs(t, seedPcap))
	os.WriteFile(in, seed, 0o644)
	os.Symlink("in.pcap", filepath.Join(dir, "link.pcap"))
	os.Link(in, filepath.Join(dir, "hard.pcap"))
	model := filepath.Join(dir, "m.nsc")
	src, _ := os.ReadFile(abs(t, "models/inet/udp.nsc"))
	src = bytes.ReplaceAll(src, []byte(`include "../lib/inet.nsc"`), []byte(`include "lib/inet.nsc"`))
	os.WriteFile(model, src, 0o644)
	rel, err := filepath.Rel(abs(t, "."), dir)
	if err != nil {
		t.Fatal(err)
	}
	sinkDir := filepath.Join(dir, "sinks")
	os.Mkdir(sinkDir, 0o755)
	os.WriteFile(filepath.Join(sinkDir, "AppEcho.pcap"), seed, 0o644)
	tables := abs(t, seedTables)
	run := func(in, out string) []string {
		return []string{"run", "--lb", "lb-2021", "--tables", tables, "--in", in, "--out", out}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"same name", run(in, in), "output " + in + " is the input " + in},
		{"./ prefix", run(in, "./"+rel+"/in.pcap"), "is the input " + in},
		{"symlink", run(in, filepath.Join(dir, "link.pcap")), "is the input " + in},
		{"hard link", run(filepath.Join(dir, "hard.pcap"), in), "is the input"},
		{"tables", run(in, tables), "is the input " + tables},
		{"profile is out", append(run(in, filepath.Join(dir, "o.pcap")), "--profile", filepath.Join(dir, "o.pcap")), "are the same output file"},
		{"sim sink", []string{"sim", model, "--graph", "UDPIPv4", "--in", filepath.Join(sinkDir, "AppEcho.pcap"), "--out", sinkDir}, "AppEcho.pcap is the input"},
		{"dot", []string{"dot", model, "--graph", "UDPIPv4", "-o", model}, "is the input " + model},
		{"verify", []string{"verify", model, "--lpg", "UDPIPv4", "--prg", "X", "--mismatches", model}, "is the input " + model},
		{"xdp run", []string{"xdp", "run", "--obj", in, "--in", in, "--out", filepath.Join(dir, "link.pcap")}, "is the input " + in},
	} {
		code, _, stderr := nsc(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", c.name, code, stderr, c.want)
		}
	}
	for _, f := range []string{in, filepath.Join(sinkDir, "AppEcho.pcap")} {
		if b, _ := os.ReadFile(f); !bytes.Equal(b, seed) {
			t.Errorf("%s changed", f)
		}
	}
	if b, _ := os.ReadFile(model); !bytes.Equal(b, src) {
		t.Errorf("the model changed")
	}
	// The profile is an input of compile --target go.
	prof := filepath.Join(dir, "fastpath.go")
	os.WriteFile(prof, nil, 0o644)
	if code, _, stderr := nsc(t, "compile", model, "--lpg", "UDPIPv4", "--profile", prof, "--package", "fp", "-o", dir); code != exitUsage || !strings.Contains(stderr, "is the input "+prof) {
		t.Errorf("compile over its profile: exit %d, %s", code, stderr)
	}
}

// A capture of a link type nsc cannot read is refused naming the file and
// the link type, and no output is written.
func TestUnsupportedLinkType(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "wifi.pcap")
	f, _ := os.Create(in)
	w := pcapgo.NewWriter(f)
	w.WriteFileHeader(65536, layers.LinkTypeIEEE802_11)
	w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(1, 0), CaptureLength: 30, Length: 30}, make([]byte, 30))
	f.Close()
	out := filepath.Join(dir, "out.pcap")
	code, _, stderr := nsc(t, "run", "--lb", "lb-2021", "--tables", seedTables, "--in", in, "--out", out)
	if want := in + ": frame 1: link type 802.11 (105) is not supported"; code != exitModel || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
	}
	if names := testutil.DirNames(t, dir); !slices.Equal(names, []string{"wifi.pcap"}) {
		t.Errorf("the directory holds %v", names)
	}
}

// nsc sim on a pcapng whose frames come on three interfaces — Ethernet,
// Linux cooked capture, raw IP — runs every frame: each reaches the sink
// gopacket's decoding of the Ethernet original says, and comes out as
// that frame with the addresses the capture kept.
func TestSimReadsEveryInterface(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcapng")
	var buf bytes.Buffer
	ng, err := pcapgo.NewNgWriterInterface(&buf, pcapgo.NgInterface{Name: "eth0", LinkType: layers.LinkTypeEthernet, SnapLength: 65536}, pcapgo.NgWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sllID, _ := ng.AddInterface(pcapgo.NgInterface{Name: "any", LinkType: layers.LinkTypeLinuxSLL, SnapLength: 65536})
	rawID, _ := ng.AddInterface(pcapgo.NgInterface{Name: "tun0", LinkType: layers.LinkTypeRaw, SnapLength: 65536})
	want := map[string][][]byte{}
	sent := 0
	for i, fr := range testutil.UDPCorpus(t) {
		sink := testutil.UDPOracle(fr)
		if !strings.HasPrefix(sink, "App") {
			continue
		}
		data, id, out := fr, 0, fr
		if layers.EthernetType(binary.BigEndian.Uint16(fr[12:])) != layers.EthernetTypeIPv4 {
			i = 0 // VLAN-tagged: Ethernet only
		}
		switch i % 3 {
		case 1: // cooked: the source address stays, the destination is zero
			data, id = append(sllHeader(fr), fr[14:]...), sllID
			out = append(make([]byte, 6), fr[6:]...)
		case 2: // raw IP: both addresses zero
			data, id = fr[14:], rawID
			out = append(make([]byte, 12), fr[12:]...)
		}
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(int64(i), 0), CaptureLength: len(data), Length: len(data), InterfaceIndex: id}
		if err := ng.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
		want[sink] = append(want[sink], out)
		sent++
	}
	ng.Flush()
	os.WriteFile(in, buf.Bytes(), 0o644)
	if len(want) < 2 || sent < 9 {
		t.Fatalf("corpus: %d frames to %d sinks", sent, len(want))
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := nsc(t, "sim", "models/inet/udp.nsc", "--graph", "UDPIPv4", "--in", in, "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, plural(sent, "packet")+" in") {
		t.Errorf("not every frame ran:\n%s", stdout)
	}
	got := map[string][][]byte{}
	for sink := range want {
		got[sink] = readSinkPcap(t, filepath.Join(out, sink+".pcap"))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sink pcaps (-want +nsc):\n%s", diff)
	}
}

// sllHeader is a Linux cooked header for an Ethernet frame, from the
// tcpdump.org LINKTYPE_LINUX_SLL layout.
func sllHeader(eth []byte) []byte {
	h := make([]byte, 16)
	binary.BigEndian.PutUint16(h[2:], 1) // ARPHRD_ETHER
	binary.BigEndian.PutUint16(h[4:], 6)
	copy(h[6:], eth[6:12])
	copy(h[14:], eth[12:14])
	return h
}

// SIGINT to nsc run while it writes: the process dies of the signal and
// leaves neither the output nor its temporary file. The test runs itself
// as nsc, on a capture large enough to catch it in the act.
func TestInterruptLeavesNoOutput(t *testing.T) {
	if args := os.Getenv("NSC_TEST_MAIN"); args != "" {
		os.Exit(run(strings.Split(args, "\n"), &env{os.Stdout, os.Stderr}))
	}
	if testing.Short() {
		t.Skip("writes a 20 MB capture")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcap")
	seed, _ := os.ReadFile(abs(t, seedPcap))
	big := bytes.NewBuffer(slices.Clone(seed))
	for range 5000 {
		big.Write(seed[24:])
	}
	os.WriteFile(in, big.Bytes(), 0o644)
	outDir := filepath.Join(dir, "out")
	os.Mkdir(outDir, 0o755)
	cmd := exec.Command(os.Args[0], "-test.run=^TestInterruptLeavesNoOutput$")
	cmd.Env = append(os.Environ(), "NSC_TEST_MAIN="+strings.Join([]string{"run", "--lb", "lb-2021", "--interp",
		"--tables", abs(t, seedTables), "--in", in, "--out", filepath.Join(outDir, "out.pcap")}, "\n"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt as soon as the temporary file shows.
	for len(testutil.DirNames(t, outDir)) == 0 {
		time.Sleep(time.Millisecond)
	}
	seen := testutil.DirNames(t, outDir)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
		t.Fatalf("nsc run ended with %v, not by SIGINT (it had written %v)", err, seen)
	}
	if names := testutil.DirNames(t, outDir); len(names) != 0 {
		t.Errorf("after SIGINT the output directory holds %v (before: %v)", names, seen)
	}
}
