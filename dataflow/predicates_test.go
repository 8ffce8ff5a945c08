package dataflow_test

import (
	"testing"

	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/predicate"
)

// Seed 003's prPred example: what reaches the NIC's software Tx output is
// non-P packets straight from the queue, and P packets through the node
// that sets the checksum context.
func TestSeed003TxSwOut(t *testing.T) {
	g := testutil.Graph(t, "IPNicTx", "dragonet/nic.nsc")
	got := g.Predicates().Reaching(g.Node("TxSwOut")).Format("TxSwOut")
	want := `TxSwOut:
OR
  AND
    net.prot != 2
    pred(TxQueue,out)
  AND
    net.prot == 2
    pred(TxPsetCtx,out)
    pred(TxQueue,out)`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// The three Rx sinks of the I/P NIC: not P; P with a valid checksum; P
// with an invalid one. They partition what the queue delivers.
func TestSeed003RxSinks(t *testing.T) {
	g := testutil.Graph(t, "IPNicRx", "dragonet/nic.nsc")
	ps := g.Predicates()
	s := ps.Space
	// The queue delivers frames that parse from the net header.
	q := s.Symbol("pred(RxQueue,out)").And(s.Symbol("parsed(net)"))
	isP := s.Eq(predicate.Field{Name: "net.prot", Width: 8}, packet.V(2))
	ok := s.Symbol("csum_ok(p)")
	for node, want := range map[string]predicate.Pred{
		"RxOut_":        q.And(isP.Not()),
		"RxCsumValid":   q.And(isP, ok),
		"RxCsumInvalid": q.And(isP, ok.Not()),
	} {
		got := ps.Reaching(g.Node(node))
		if !predicate.Equivalent(got, want) {
			t.Errorf("%s:\n%s", node, got.Format(node))
		}
	}
	all := s.Or(ps.Reaching(g.Node("RxOut_")), ps.Reaching(g.Node("RxCsumValid")), ps.Reaching(g.Node("RxCsumInvalid")))
	if !predicate.Equivalent(all, q) {
		t.Errorf("the sinks do not cover the queue: %s", all.Format("all"))
	}
}

// O-node ports in the I/P LPG: the AND passes P packets with a valid
// checksum to the port demultiplexer and the rest of the P packets to the
// failure node.
func TestLPGAndNode(t *testing.T) {
	g := testutil.Graph(t, "IPStack", "dragonet/stack.nsc")
	ps := g.Predicates()
	s := ps.Space
	base := s.Symbol("pred(RxQueue,out)").And(s.Symbol("parsed(net)"))
	isP := s.Eq(predicate.Field{Name: "net.prot", Width: 8}, packet.V(2))
	ok := s.Symbol("csum_ok(p)")
	valid := g.Node("RxValid")
	if got, want := ps.Port(valid.Port("true")), base.And(isP, ok); !predicate.Equivalent(got, want) {
		t.Errorf("RxValid.true = %s", got.Format("RxValid.true"))
	}
	if got, want := ps.Reaching(g.Node("RxPCsumFailed")), base.And(isP, ok.Not()); !predicate.Equivalent(got, want) {
		t.Errorf("RxPCsumFailed = %s", got.Format("RxPCsumFailed"))
	}
}

// The reassembler's place ports: each carries its own outcome of the
// state, and the outcomes exclude each other; the delivered packets have none of the segment's headers left, and a
// segment dropped as a duplicate still has its RE header.
func TestPlacePredicates(t *testing.T) {
	g := testutil.Graph(t, "Reassembler", "ejfat/reassembler.nsc")
	ps := g.Predicates()
	s := ps.Space
	complete, dup := ps.Atom("complete(events)"), ps.Atom("duplicate(events)")
	deliver, duplicate := ps.Reaching(g.Node("Deliver")), ps.Reaching(g.Node("Duplicate"))
	for _, c := range []struct {
		name  string
		got   predicate.Pred
		want  predicate.Pred
		holds bool
	}{
		{"Deliver: complete(events)", deliver, complete, true},
		{"Deliver: no RE header", deliver, s.Valid("re").Not(), true},
		{"Deliver: no UDP header", deliver, s.Valid("udp").Not(), true},
		{"Deliver: duplicate(events)", deliver, dup, false},
		{"Deliver: not duplicate(events)", deliver, dup.Not(), true},
		{"Duplicate: duplicate(events)", duplicate, dup, true},
		{"Duplicate: the RE header", duplicate, s.Valid("re"), true},
		{"Duplicate: complete(events)", duplicate, complete, false},
		{"Duplicate: not complete(events)", duplicate, complete.Not(), true},
		{"complete and duplicate exclusive", complete.And(dup), s.False(), true},
	} {
		if predicate.Implies(c.got, c.want) != c.holds {
			t.Errorf("%s: implied %v, want %v", c.name, !c.holds, c.holds)
		}
	}
}
