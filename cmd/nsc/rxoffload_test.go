package main

import (
	"strings"
	"testing"
)

// The reassembler into the RDMA NIC: the NIC's place takes over the LPG's
// for events up to its buffer, the rest stays in software behind the
// residual guard; nsc verify passes, with sequences of segments, and fails
// for a NIC claiming completions it does not make.
func TestRxOffloadEmbedAndVerify(t *testing.T) {
	code, out, stderr := nsc(t, "embed", "models/ejfat/reassembler.nsc", "models/ejfat/rdma.nsc", "--lpg", "Reassembler", "--prg", "RDMA")
	if code != exitOK {
		t.Fatal(stderr)
	}
	for _, want := range []string{
		"Place           split: software when re.Length > 0x100000, else hardware RxPlace",
		"counterexample: data_ports.action=0, re.Length=",
		"UDPCsum         software  runs behind RxOther; unreachable behind RxIPBad; always false behind RxL4Bad; always true behind RxL4Good, RxSoftSegment; done by RDMA before its RxPlace behind RxPlaced, RxEvent,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("nsc embed into RDMA lacks %q:\n%s", want, out)
		}
	}
	code, out, stderr = nsc(t, "verify", "models/ejfat/reassembler.nsc", "models/ejfat/rdma.nsc", "--lpg", "Reassembler", "--prg", "RDMA", "--packets", "10000")
	if code != exitOK || !strings.Contains(out, "10000 packets") || !strings.Contains(out, "segments in sequences") || !strings.Contains(out, " 0 mismatches\n") {
		t.Errorf("honest verify: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = nsc(t, "verify", "models/ejfat/reassembler.nsc", "verify/testdata/placeliars.nsc", "--lpg", "Reassembler", "--prg", "CompleteLiar", "--packets", "2000")
	if code != exitModel || !strings.Contains(out, "mismatch 1: packet from RxQueue (sequence ") || !strings.Contains(out, "at Place: class ") {
		t.Errorf("liar verify: exit %d\n%s%s", code, out, stderr)
	}
}
