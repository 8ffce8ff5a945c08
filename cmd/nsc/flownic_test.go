package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/pcapio"
)

// corpusPcap writes the LB corpus (ejfat.Corpus: good LB v2/v3 frames over
// IPv4 and IPv6 for every LB instance, responders, foreign and truncated
// frames) into a pcap, for the reference tables of lb-2025.
func corpusPcap(t *testing.T) string {
	t.Helper()
	frames, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "corpus.pcap")
	w, err := pcapio.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		w.WritePacket(gopacket.CaptureInfo{CaptureLength: len(f), Length: len(f)}, f)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return name
}

// nsc embed of lb-2025 into the flow NIC, as people read it: the member
// lookup stays, with the read that keeps it; the pop stage and the
// rewrites split, IPv6 in software.
func TestEmbedLB2025FlowNIC(t *testing.T) {
	code, out, stderr := nsc(t, "embed", "models/ejfat/lb-2025.nsc", "models/ejfat/cx6dx-lb.nsc", "--lpg", "LB2025", "--prg", "CX6DxLB")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"LbMember        software  stage LbMember..LbMemberMiss (2 nodes): LbPort reads meta.udp_base, which LbMember writes, before the hardware (TxMember) does\n",
		"LbPopCommon     split: software when ethernet.type != 2048 or (ethernet.type == 2048 and meta.keep_lb == 1), else hardware TxPopCommon\n",
		"LbIPv4Strip     split: software when ethernet.type != 2048, else hardware TxV4Strip\n",
		"counterexample: epoch_assign_table.action=1, ethernet.type=34525,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	code, out, stderr = nsc(t, "embed", "models/ejfat/reassembler.nsc", "models/inet/cx6dx.nsc", "--lpg", "Reassembler", "--prg", "CX6Dx")
	if code != 0 || !strings.Contains(out, "UDPCsum         software  runs behind RxOut; unreachable behind RxL3Bad, RxL3Good; always true behind RxL4Good; always false behind RxL4Bad\n") {
		t.Errorf("exit %d: %s\n%s", code, stderr, out)
	}
}

var mismatches = regexp.MustCompile(`(\d+) packets \((\d+) from predicate classes.*\), (\d+) mismatches`)

// nsc verify with the reference tables and the LB corpus: the honest NIC
// agrees with lb-2025 alone on every frame, forwarded ones included; a
// liar whose IPv4 strip rule does not shrink the total length as it
// claims fails on the IPv4 frames to a member that strips the LB header,
// and the diff names that stage.
func TestVerifyLB2025FlowNIC(t *testing.T) {
	corpus := corpusPcap(t)
	tables := "ejfat/testdata/lb-2025.tables"
	code, out, stderr := nsc(t, "verify", "models/ejfat/cx6dx-lb.nsc", "--lpg", "LB2025", "--prg", "CX6DxLB", "--tables", tables, "--frames", corpus)
	m := mismatches.FindStringSubmatch(out)
	if code != 0 || m == nil || m[3] != "0" {
		t.Fatalf("honest: exit %d: %s\n%s", code, stderr, out)
	}
	if n, _ := strconv.Atoi(m[1]); n < 10000 {
		t.Errorf("honest: %s packets", m[1])
	}

	src, err := os.ReadFile("../../models/ejfat/cx6dx-lb.nsc")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("../../models/ejfat/lb-2025.nsc")
	liar := strings.NewReplacer(`include "lb-2025.nsc"`, `include "`+abs+`"`, "prg CX6DxLB", "prg CX6DxLiar",
		"ipv4.total_len = ipv4.total_len - 16", "ipv4.total_len = ipv4.total_len - 12").Replace(string(src))
	file := filepath.Join(t.TempDir(), "liar.nsc")
	os.WriteFile(file, []byte(liar), 0o644)
	bad := filepath.Join(t.TempDir(), "bad.pcap")
	code, out, _ = nsc(t, "verify", file, "--lpg", "LB2025", "--prg", "CX6DxLiar", "--tables", tables, "--frames", corpus, "--mismatches", bad)
	m = mismatches.FindStringSubmatch(out)
	if code == 0 || m == nil || m[3] == "0" {
		t.Fatalf("liar: exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "moved to hardware, ran in the LPG: ") || !strings.Contains(out, "LbIPv4Strip (hardware TxV4Strip unless ethernet.type != 2048)") {
		t.Errorf("the diff does not name the strip stage:\n%s", out)
	}
	if strings.Contains(out, "LbIPv4Keep (hardware") {
		t.Errorf("a frame to a member keeping the LB header differs:\n%s", out)
	}
}

// The reassembler on the NIC's receive checks: 10,000 packets, a quarter
// of them lacking a checksum or parse the NIC claims to check, agree.
func TestVerifyReassemblerCX6Dx(t *testing.T) {
	code, out, stderr := nsc(t, "verify", "models/ejfat/reassembler.nsc", "models/inet/cx6dx.nsc", "--lpg", "Reassembler", "--prg", "CX6Dx",
		"--mismatches", filepath.Join(t.TempDir(), "bad.pcap"))
	m := mismatches.FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] != "10000" || m[3] != "0" || !strings.Contains(out, "csum_ok(udp) established by RxL4CS.true (checksum verify udp): 833 packets without it, 833 reached RxL4CS, 0 mismatches") {
		t.Errorf("exit %d: %s\n%s", code, stderr, out)
	}
}
