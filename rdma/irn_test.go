package rdma_test

import (
	"testing"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/rdma"
	"github.com/dragonet-go/nsc/rdma/irnfast"
)

func newIRN(t testing.TB) *responder { return newResponderOf(t, "rdma/irn.nsc", "IRNResponder") }

func newIRNPair(t testing.TB) *pair {
	t.Helper()
	return newPairOf(t, irnfast.Schema, func(ts []*table.Table) (fastpath.Pipeline, error) { return irnfast.New(ts) }, newIRN(t))
}

// irnScenarios are crafted traffic with the outcomes IRN's selective
// repeat asks for: every packet placed where its own RETH says as it
// arrives, an ACK of the cumulative PSN for each in order, a NAK naming
// the expected PSN for each out of order, the MSN counting the messages
// whose packets have all arrived.
func irnScenarios() map[string][]step {
	a, b, c := fill(1024, 1), fill(1024, 2), fill(512, 3)
	const va = regionBase + 0x100
	irn := func(q uint32, op uint8, psn uint32, at uint64, length uint32, data []byte) *rdma.Packet {
		p := withRETH(write(q, op, psn, data), at, rkey, length)
		p.IRN = true
		return p
	}
	first := func(q, psn uint32) []byte { return frame(irn(q, rdma.WriteFirst, psn, va, 2560, a)) }
	middle := func(q, psn uint32) []byte { return frame(irn(q, rdma.WriteMiddle, psn, va+1024, 2560, b)) }
	last := func(q, psn uint32) []byte {
		p := irn(q, rdma.WriteLastImm, psn, va+2048, 2560, c)
		p.Imm = 7
		return frame(p)
	}
	only := func(q, psn uint32, at uint64, data []byte) []byte {
		return frame(irn(q, rdma.WriteOnly, psn, at, uint32(len(data)), data))
	}
	// onlyImm is a WRITE Only with Immediate psn - ipsn consuming receive
	// WQE sn.
	onlyImm := func(psn, sn uint32, data []byte) []byte {
		p := irn(qpn, rdma.WriteOnlyImm, psn, regionBase+uint64(psn-ipsn)*1024, uint32(len(data)), data)
		p.Imm, p.WQESN = psn, sn
		return frame(p)
	}
	atImm := func(psn uint32, data []byte) *placement {
		return &placement{RKey: rkey, Offset: uint64(psn-ipsn) * 1024, Imm: psn, QPN: qpn, HasImm: true, Data: data}
	}
	at := func(q uint32, off uint64, data []byte) *placement {
		return &placement{RKey: rkey, Offset: off, QPN: q, Data: data}
	}
	pa, pb := at(qpn, 0x100, a), at(qpn, 0x100+1024, b)
	pc := func(q uint32) *placement {
		return &placement{RKey: rkey, Offset: 0x100 + 2048, Imm: 7, QPN: q, HasImm: true, Data: c}
	}
	badICRC := first(qpn, ipsn)
	badICRC[len(badICRC)-10] ^= 1
	send := write(qpn, rdma.SendOnly, ipsn, []byte("MRSP\x01\x00\x00\x01"))
	sendAhead := write(qpn, rdma.SendOnly, ipsn+1, []byte("MRSP"))
	sendFirst := write(qpn, rdma.SendFirst, ipsn, a)
	send.IRN, sendAhead.IRN, sendFirst.IRN, sendAhead.WQESN = true, true, true, 1
	return map[string][]step{
		"in order": {
			{frame: first(qpn, ipsn), replies: ack(ipsn, 0), placed: pa},
			{frame: middle(qpn, ipsn+1), replies: ack(ipsn+1, 0), placed: pb},
			{frame: last(qpn, ipsn+2), replies: ack(ipsn+2, 1), placed: pc(qpn)},
		},
		"reordered": {
			{frame: first(qpn, ipsn), replies: ack(ipsn, 0), placed: pa},
			{frame: last(qpn, ipsn+2), replies: nak(rdma.NAKSequence, ipsn+1, 0), placed: pc(qpn)},
			{frame: middle(qpn, ipsn+1), replies: ack(ipsn+2, 1), placed: pb},
		},
		"reversed": {
			{frame: last(qpn, ipsn+2), replies: nak(rdma.NAKSequence, ipsn, 0), placed: pc(qpn)},
			{frame: middle(qpn, ipsn+1), replies: nak(rdma.NAKSequence, ipsn, 0), placed: pb},
			{frame: first(qpn, ipsn), replies: ack(ipsn+2, 1), placed: pa},
		},
		"lost and resent": {
			{frame: first(qpn, ipsn), replies: ack(ipsn, 0), placed: pa},
			{frame: last(qpn, ipsn+2), replies: nak(rdma.NAKSequence, ipsn+1, 0), placed: pc(qpn)},
			{frame: last(qpn, ipsn+2), replies: ack(ipsn, 0)},
			{frame: middle(qpn, ipsn+1), replies: ack(ipsn+2, 1), placed: pb},
		},
		"duplicated": {
			{frame: first(qpn, ipsn), replies: ack(ipsn, 0), placed: pa},
			{frame: first(qpn, ipsn), replies: ack(ipsn, 0)},
			{frame: middle(qpn, ipsn+1), replies: ack(ipsn+1, 0), placed: pb},
			{frame: last(qpn, ipsn+2), replies: ack(ipsn+2, 1), placed: pc(qpn)},
			{frame: last(qpn, ipsn+2), replies: ack(ipsn+2, 1)},
		},
		"messages completed together": {
			{frame: only(qpn, ipsn+1, regionBase, a), replies: nak(rdma.NAKSequence, ipsn, 0), placed: at(qpn, 0, a)},
			{frame: only(qpn, ipsn+2, regionBase+1024, b), replies: nak(rdma.NAKSequence, ipsn, 0), placed: at(qpn, 1024, b)},
			{frame: only(qpn, ipsn+127, regionBase+4096, c), replies: nak(rdma.NAKSequence, ipsn, 0), placed: at(qpn, 4096, c)},
			{frame: only(qpn, ipsn, regionBase+2048, c), replies: ack(ipsn+2, 3), placed: at(qpn, 2048, c)},
			{frame: only(qpn, ipsn+3+128, regionBase, a), drop: "beyond the window"},
			{frame: only(qpn, ipsn+3, regionBase, a), replies: ack(ipsn+3, 4), placed: at(qpn, 0, a)},
		},
		"beyond the window": {
			{frame: only(qpn, ipsn+128, regionBase, a), drop: "beyond the window"},
			{frame: only(qpn, ipsn+127, regionBase, a), replies: nak(rdma.NAKSequence, ipsn, 0), placed: at(qpn, 0, a)},
		},
		"PSN wrap": {
			{frame: first(qpWrap, 0xfffffe), replies: ack(0xfffffe, 0), placed: at(qpWrap, 0x100, a)},
			{frame: last(qpWrap, 0), replies: nak(rdma.NAKSequence, 0xffffff, 0), placed: pc(qpWrap)},
			{frame: middle(qpWrap, 0xffffff), replies: ack(0, 1), placed: at(qpWrap, 0x100+1024, b)},
			{frame: only(qpWrap, 1, regionBase, c), replies: ack(1, 2), placed: at(qpWrap, 0, c)},
			{frame: only(qpWrap, 0xffffff, regionBase, c), replies: ack(1, 2)},
		},
		"bad ICRC": {
			{frame: badICRC, drop: "bad ICRC"},
			{frame: first(qpn, ipsn), replies: ack(ipsn, 0), placed: pa},
		},
		"bad rkey": {
			{frame: frame(withRETH(irn(qpn, rdma.WriteOnly, ipsn, regionBase, 1024, a), regionBase, rkey+1, 1024)), replies: nak(rdma.NAKRemoteAccess, ipsn, 0)},
		},
		"out of bounds": {
			{frame: only(qpn, ipsn, regionBase+regionLen-512, a), replies: nak(rdma.NAKRemoteAccess, ipsn, 0)},
			{frame: only(qpn, ipsn, regionBase-1, a), replies: nak(rdma.NAKRemoteAccess, ipsn, 0)},
			{frame: only(qpn, ipsn, regionBase, a), replies: ack(ipsn, 1), placed: at(qpn, 0, a)},
		},
		"wrong lengths": {
			{frame: frame(irn(qpn, rdma.WriteOnly, ipsn, regionBase, 2048, a)), replies: nak(rdma.NAKInvalidRequest, ipsn, 0)},
			{frame: frame(irn(qpn, rdma.WriteMiddle, ipsn, regionBase, 512, a)), replies: nak(rdma.NAKInvalidRequest, ipsn, 0)},
			{frame: frame(sendFirst), replies: nak(rdma.NAKInvalidRequest, ipsn, 0)},
		},
		"MRSP send": {
			{frame: frame(sendAhead), drop: "SEND out of order"},
			{frame: frame(send), replies: ack(ipsn, 1), placed: &placement{QPN: qpn, Send: true, Data: send.Payload}},
		},
		// The 2-bitmap's CQE half: each WRITE with Immediate consumes the
		// receive WQE its recv_WQE_SN names, within the bounds the bitmap
		// gives (past the WQEs of the packets before it that arrived, by
		// at most one per packet before it not arrived yet).
		"recv_WQE_SN in order": {
			{frame: onlyImm(ipsn, 0, a), replies: ack(ipsn, 1), placed: atImm(ipsn, a)},
			{frame: onlyImm(ipsn+1, 1, b), replies: ack(ipsn+1, 2), placed: atImm(ipsn+1, b)},
			{frame: onlyImm(ipsn+2, 1, c), replies: nak(rdma.NAKInvalidRequest, ipsn+2, 2)},
			{frame: onlyImm(ipsn+2, 3, c), replies: nak(rdma.NAKInvalidRequest, ipsn+2, 2)},
			{frame: onlyImm(ipsn+2, 2, c), replies: ack(ipsn+2, 3), placed: atImm(ipsn+2, c)},
		},
		"recv_WQE_SN reordered": {
			{frame: onlyImm(ipsn+2, 3, c), replies: nak(rdma.NAKInvalidRequest, ipsn+2, 0)},
			{frame: onlyImm(ipsn+2, 1, c), replies: nak(rdma.NAKSequence, ipsn, 0), placed: atImm(ipsn+2, c)},
			{frame: onlyImm(ipsn+1, 2, b), replies: nak(rdma.NAKInvalidRequest, ipsn+1, 0)},
			{frame: onlyImm(ipsn+1, 0, b), replies: nak(rdma.NAKSequence, ipsn, 0), placed: atImm(ipsn+1, b)},
			{frame: onlyImm(ipsn, 1, a), replies: nak(rdma.NAKInvalidRequest, ipsn, 0)},
			{frame: only(qpn, ipsn, regionBase, a), replies: ack(ipsn+2, 3), placed: at(qpn, 0, a)},
			{frame: onlyImm(ipsn+3, 2, a), replies: ack(ipsn+3, 4), placed: atImm(ipsn+3, a)},
		},
		"recv_WQE_SN wrap": {
			{frame: onlyImm(ipsn, 0xffffff, a), replies: nak(rdma.NAKInvalidRequest, ipsn, 0)},
		},
		"unknown QP": {
			{frame: only(0x99, ipsn, regionBase, a), drop: "unknown QP"},
		},
	}
}

// TestIRNResponder runs the crafted traffic through the IRN responder in
// the interpreter: replies, placements and drops as IRN says; the same
// loaded with each device model it is embedded in. (Loaded with naa.nsc,
// as xdp.nsc once did, roce.nsc's parse graph parsed a RETH after WRITE
// First and Only ahead of IRN's own extraction: the RETH was taken from
// the payload.)
func TestIRNResponder(t *testing.T) {
	for _, file := range []string{"rdma/irn.nsc", "rdma/irn.nsc rdma/xdp.nsc", "rdma/irn-nics.nsc", "rdma/irn.nsc rdma/p4.nsc"} {
		for name, steps := range irnScenarios() {
			t.Run(file+"/"+name, func(t *testing.T) { checkSteps(t, newResponderOf(t, file, "IRNResponder"), steps) })
		}
	}
}

// TestIRNFastPathAgainstInterpreter: the generated IRN responder
// (rdma/irnfast) and the ACK maker against the interpreter, each scenario
// on fresh state: the same ACK/NAK frames, placements, counters.
func TestIRNFastPathAgainstInterpreter(t *testing.T) {
	diffScenarios(t, irnScenarios(), newIRNPair)
}

// TestIRNFastPathSynthesized: 3,000 frames made from the crafted ones
// (bytes changed, cut short, transport bytes changed under a right ICRC)
// through one pair, state carried across.
func TestIRNFastPathSynthesized(t *testing.T) {
	diffSynthesized(t, irnScenarios(), []string{"reordered", "lost and resent", "messages completed together", "PSN wrap", "MRSP send", "wrong lengths", "recv_WQE_SN reordered"}, newIRNPair)
}
