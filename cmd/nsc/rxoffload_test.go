package main

import (
	"strings"
	"testing"
)

// The reassembler into the RDMA NIC: the NIC's place takes over the LPG's
// for events up to its buffer, the rest stays in software behind the
// residual guard; into the 82599, the header split does the pops it can;
// nsc verify passes, with sequences of segments, and fails for a NIC
// claiming completions it does not make.
func TestRxOffloadEmbedAndVerify(t *testing.T) {
	code, out, stderr := nsc(t, "embed", "models/ejfat/reassembler.nsc", "models/ejfat/rdma.nsc", "--lpg", "Reassembler", "--prg", "RDMA")
	if code != exitOK {
		t.Fatal(stderr)
	}
	for _, want := range []string{
		"Place           split: software when re.Length > 0x100000, else hardware RxPlace",
		"counterexample: data_ports.action=0, re.Length=",
		"UDPCsum         pruned    unreachable behind RxOther, RxIPBad; always false behind RxL4Bad; always true behind RxL4Good, RxSoftSegment; done by RDMA before its RxPlace behind RxPlaced, RxEvent,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("nsc embed into RDMA lacks %q:\n%s", want, out)
		}
	}
	// Into the 82599: the header split pops UDP, IPv4 and Ethernet where
	// it splits; the LB header's pop stays, with the reason.
	code, out, stderr = nsc(t, "embed", "models/ejfat/reassembler.nsc", "models/inet/i82599.nsc", "--lpg", "Reassembler", "--prg", "I82599")
	if code != exitOK {
		t.Fatal(stderr)
	}
	for _, want := range []string{
		"UDPCsum         software  runs behind RxOut; unreachable behind RxIPBad, RxIPGood; always true behind RxL4Good; always false behind RxL4Bad",
		"PopUDP          software  runs behind RxOut; unreachable behind RxIPBad, RxIPGood, RxL4Bad; done by I82599's header split behind RxL4Good",
		"PopLB           software  runs behind RxOut, RxL4Good; I82599 splits headers after ethernet, ipv4, udp, never after lb, which it does not parse",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("nsc embed into I82599 lacks %q:\n%s", want, out)
		}
	}
	code, out, stderr = nsc(t, "verify", "models/ejfat/reassembler.nsc", "models/ejfat/rdma.nsc", "--lpg", "Reassembler", "--prg", "RDMA", "--packets", "10000")
	if code != exitOK || !strings.Contains(out, "10000 packets") || !strings.Contains(out, "segments in sequences") || !strings.Contains(out, " 0 mismatches\n") {
		t.Errorf("honest verify: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = nsc(t, "verify", "models/ejfat/reassembler.nsc", "verify/testdata/placeliars.nsc", "--lpg", "Reassembler", "--prg", "CompleteLiar", "--packets", "2000")
	if code != exitModel || !strings.Contains(out, "mismatch 1: packet from RxQueue (sequence ") || !strings.Contains(out, " at Place: ") {
		t.Errorf("liar verify: exit %d\n%s%s", code, out, stderr)
	}
}
