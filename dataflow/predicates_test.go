package dataflow_test

import (
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/predicate"
	"github.com/dragonet-go/nsc/sim"
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
	// The queue delivers frames that parse from the net header (which is
	// then there).
	q := s.Symbol("pred(RxQueue,out)").And(s.Symbol("parsed(net)"), s.Valid("net"))
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
	base := s.Symbol("pred(RxQueue,out)").And(s.Symbol("parsed(net)"), s.Valid("net"))
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

// A checksum patched incrementally stays valid but its value is new: what
// a test knew of it before (not zero) no longer decides a test after the
// patch — lb-2026's "a computed zero becomes 0xffff" was folded away as
// never taken. Except for an optional checksum (RFC 768), which stays
// zero or non-zero. The interpreter is the oracle: over every value of the
// word behind a popped tag, the patched raw checksum is sometimes zero and
// the optional one never.
func TestUpdatedChecksum(t *testing.T) {
	for _, tc := range []struct {
		udp      string
		zeroSeen bool
	}{{"ejfat/udp-raw.nsc", true}, {"lib/udp.nsc", false}} {
		t.Run(tc.udp, func(t *testing.T) {
			m := testutil.ModelSource(t, `include "lib/ethernet.nsc"
include "lib/ipv4.nsc"
include "`+tc.udp+`"
header tag { v: 16 }
next ethernet.type { 0x0800 -> ipv4 }
next ipv4.proto { 17 -> udp }
next udp.dport { 7 -> tag }
lpg L {
  node Rx { op input parse ethernet  port out -> NonZero }
  node NonZero { op test valid(tag) && udp.checksum != 0  port true -> Pop  port false -> Other }
  node Pop { op pop tag update udp  port out -> Len }
  node Len { op set { udp.length = udp.length - 2 } update udp  port out -> Zero }
  node Zero { op test udp.checksum == 0  port true -> Z  port false -> NZ }
  node Z { op emit }
  node NZ { op emit }
  node Other { op drop "other" }
}`)
			g, _ := m.Graph("L")
			ps := g.Predicates()
			if got := predicate.Satisfiable(ps.Port(g.Node("Zero").Port("true"))); got != tc.zeroSeen {
				t.Errorf("predicates: udp.checksum == 0 after the patches satisfiable: %v, want %v", got, tc.zeroSeen)
			}
			if !predicate.Satisfiable(ps.Port(g.Node("Zero").Port("false"))) {
				t.Error("predicates: udp.checksum != 0 after the patches unsatisfiable")
			}
			m2, err := sim.New(g, nil)
			if err != nil {
				t.Fatal(err)
			}
			seen, other := false, 0
			for v := range 1 << 16 {
				ip := testutil.IPv4(layers.IPProtocolUDP)
				u := &layers.UDP{SrcPort: 4000, DstPort: 7}
				u.SetNetworkLayerForChecksum(ip)
				frame := testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload{0xab, 0xcd, byte(v >> 8), byte(v)})
				m2.Run(frame, func(n *dataflow.Node, _ []byte) { seen = seen || n.Name == "Z" })
				if _, dropped := m2.LastDrop(); dropped {
					other++
				}
			}
			if seen != tc.zeroSeen || other > 1 {
				t.Errorf("interpreter: a zero after the patches seen %v, want %v (%d frames not patched)", seen, tc.zeroSeen, other)
			}
		})
	}
}

// Two lookups of one table take the same action while nothing their key
// reads changes, and decide afresh after a set of a key field (seed
// 31337, model 276: the second lookup's miss port was cut although the
// set made the key miss). The interpreter is the oracle for the second.
func TestLookupAgainAfterKeySet(t *testing.T) {
	for _, tc := range []struct {
		set      string
		missSeen bool
	}{{"udp.dport = udp.dport + 1", true}, {"udp.sport = 9", false}} {
		t.Run(tc.set, func(t *testing.T) {
			m := testutil.ModelSource(t, `include "lib/inet.nsc"
action hit() {  }
action miss() {  }
table t { key { udp.dport: exact } actions { hit, miss } size 4 default miss() }
lpg L {
  node Rx { op input  port out -> Parse }
  node Parse { op parse ethernet  port true -> UDP  port false -> Other }
  node UDP { op test valid(udp)  port true -> First  port false -> Other }
  node First { op lookup t  port hit -> Set  port miss -> Other }
  node Set { op set { `+tc.set+` }  port out -> Again }
  node Again { op lookup t  port hit -> H  port miss -> M }
  node H { op emit }
  node M { op emit }
  node Other { op drop "other" }
}`)
			g, _ := m.Graph("L")
			ps := g.Predicates()
			if got := predicate.Satisfiable(ps.Port(g.Node("Again").Port("miss"))); got != tc.missSeen {
				t.Errorf("predicates: the second lookup's miss satisfiable: %v, want %v", got, tc.missSeen)
			}
			ts, err := table.Load(g.Schema, "t.tables", strings.NewReader("table_add t hit 7 =>\n"))
			if err != nil {
				t.Fatal(err)
			}
			m2, err := sim.New(g, ts)
			if err != nil {
				t.Fatal(err)
			}
			ip := testutil.IPv4(layers.IPProtocolUDP)
			u := &layers.UDP{SrcPort: 4000, DstPort: 7}
			u.SetNetworkLayerForChecksum(ip)
			missed := false
			m2.Run(testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload{1, 2}),
				func(n *dataflow.Node, _ []byte) { missed = missed || n.Name == "M" })
			if missed != tc.missSeen {
				t.Errorf("interpreter: the second lookup missed: %v, want %v", missed, tc.missSeen)
			}
		})
	}
}

// A header pushed after udp lies in its payload: a set of one of its
// fields after the UDP checksum is computed breaks that checksum, though
// the parse graph never leads from udp to it. The interpreter is the
// oracle: the check after the set fails.
func TestPushedIntoPayloadIsCovered(t *testing.T) {
	m := testutil.ModelSource(t, `include "lib/inet.nsc"
header tag { v: 16 }
lpg L {
  node Rx { op input  port out -> Parse }
  node Parse { op parse ethernet  port true -> UDP  port false -> Other }
  node UDP { op test valid(udp) && valid(ipv4)  port true -> Push  port false -> Other }
  node Push { op push tag after udp  port out -> Len }
  node Len { op set { udp.length = udp.length + 2  ipv4.total_len = ipv4.total_len + 2 }  port out -> Sum }
  node Sum { op checksum compute udp  port out -> Set }
  node Set { op set { tag.v = 0x1234 }  port out -> Check }
  node Check { op checksum verify udp  port true -> Good  port false -> Bad }
  node Good { op emit }
  node Bad { op emit }
  node Other { op drop "other" }
}`)
	g, _ := m.Graph("L")
	if !predicate.Satisfiable(g.Predicates().Port(g.Node("Check").Port("false"))) {
		t.Error("predicates: the UDP check after the set cannot fail")
	}
	m2, err := sim.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	ip := testutil.IPv4(layers.IPProtocolUDP)
	u := &layers.UDP{SrcPort: 4000, DstPort: 9}
	u.SetNetworkLayerForChecksum(ip)
	bad := false
	m2.Run(testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload{1, 2, 3, 4}),
		func(n *dataflow.Node, _ []byte) { bad = bad || n.Name == "Bad" })
	if !bad {
		t.Error("interpreter: the UDP check after the set passed; the test does not test what it says")
	}
}
