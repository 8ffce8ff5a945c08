package search_test

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/prg"
	"github.com/dragonet-go/nsc/prg/search"
	"github.com/dragonet-go/nsc/sim"
	"github.com/dragonet-go/nsc/verify"
)

func reassembler(t testing.TB) (*lang.Model, *dataflow.Graph, *dataflow.Graph) {
	m := testutil.Model(t, "ejfat/reassembler.nsc", "inet/i82599.nsc")
	l, _ := m.Graph("Reassembler")
	p, _ := m.Graph("I82599")
	return m, l, p
}

// A member with four receive ports, a thread each: a person steers each
// port to a queue of its own with one filter per port (the 82599 has no
// port ranges in a five-tuple filter), leaving queue 0 to other traffic.
func TestPersonsPick(t *testing.T) {
	m, l, p := reassembler(t)
	flows, err := search.PortFlows(m.Schema, false, 19000, 4)
	if err != nil {
		t.Fatal(err)
	}
	r, err := search.Search(l, p, flows, embed.ForSearch)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := r.Write(&out, flows); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	const want = "[[udp, any, any, any, 19000, 1, q1], [udp, any, any, any, 19001, 1, q2], [udp, any, any, any, 19002, 1, q3], [udp, any, any, any, 19003, 1, q4]]"
	if got := prg.FormatFilters(r.Filters); got != want {
		t.Errorf("chose %s, want %s", got, want)
	}
	// By hand: with no filter all four flows and other traffic share
	// queue 0 (RxL4Good): each flow's demux is 3 flows + other traffic.
	// Steered, each is alone. The software behind a queue is the same.
	if r.Baseline.Demux != 16 || r.Cost.Demux != 0 || r.Cost.Software != r.Baseline.Software || len(r.Why) != 0 || r.Method != "exhaustive" {
		t.Errorf("cost %+v, baseline %+v, why %v, %s", r.Cost, r.Baseline, r.Why, r.Method)
	}
	// The embedding into the configured NIC behaves as the LPG alone on
	// packets of every class, filtered or not.
	g, err := r.Configured(p)
	if err != nil {
		t.Fatal(err)
	}
	em, err := embed.Embed(l, g)
	if err != nil {
		t.Fatal(err)
	}
	res, err := verify.Run(em, verify.Generate(em, 3000, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cases < 3000 {
		t.Errorf("verify ran %d cases", res.Cases)
	}
	for i, m := range res.Mismatches {
		if i < 3 {
			t.Errorf("verify: %s", m)
		}
	}
	// The interpreter agrees with the steering the search counted on: a
	// segment to port 19002 leaves the configured NIC at queue 3.
	mach, err := sim.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	ip := testutil.IPv4(layers.IPProtocolUDP)
	ip.DstIP = net.IP{10, 0, 0, 2}
	for port, want := range map[uint16]string{19002: "RxQ3", 19000: "RxQ1", 19004: "RxL4Good"} {
		u := &layers.UDP{SrcPort: 40000, DstPort: layers.UDPPort(port)}
		_ = u.SetNetworkLayerForChecksum(ip)
		var got []string
		mach.Run(testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload(make([]byte, 40))), func(s *dataflow.Node, _ []byte) { got = append(got, s.Name) })
		if strings.Join(got, ",") != want {
			t.Errorf("port %d: left by %v, want %s", port, got, want)
		}
	}
}

// Over IPv6 the 82599's filters (IPv4 only, behind its IPv4 checks) never
// see the segments: no configuration does better than none, and the
// report says where the packets went instead.
func TestNothingToOffload(t *testing.T) {
	m, l, p := reassembler(t)
	flows, err := search.PortFlows(m.Schema, true, 19000, 2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := search.Search(l, p, flows, embed.ForSearch)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Filters) != 0 || r.Cost.Total != r.Baseline.Total {
		t.Errorf("chose %s at %+v, baseline %+v", prg.FormatFilters(r.Filters), r.Cost, r.Baseline)
	}
	want := []string{
		"udp port 19000 over IPv6: its packets never reach RxFilters; I82599 delivers them behind RxOut, before the filters",
		"udp port 19001 over IPv6: its packets never reach RxFilters; I82599 delivers them behind RxOut, before the filters",
	}
	if strings.Join(r.Why, "\n") != strings.Join(want, "\n") {
		t.Errorf("why:\n%s\nwant:\n%s", strings.Join(r.Why, "\n"), strings.Join(want, "\n"))
	}
}

// Ten ports and seven filter queues: too many assignments to try each, so
// the greedy pass runs; it gives the first seven ports a queue each, in
// order, and the result is the same on every run.
func TestGreedy(t *testing.T) {
	m, l, p := reassembler(t)
	flows, err := search.PortFlows(m.Schema, false, 19000, 10)
	if err != nil {
		t.Fatal(err)
	}
	r, err := search.Search(l, p, flows, embed.ForSearch)
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != "greedy" || !(r.Cost.Total < r.Baseline.Total) {
		t.Fatalf("%s: cost %d, baseline %d", r.Method, r.Cost.Total, r.Baseline.Total)
	}
	for i := range 7 {
		if f := r.Filters[i]; *f.DPort != uint16(19000+i) || f.Port != "q"+string(rune('1'+i)) {
			t.Errorf("filter %d: %s", i, f)
		}
	}
	again, err := search.Search(l, p, flows, embed.ForSearch)
	if err != nil {
		t.Fatal(err)
	}
	if prg.FormatFilters(again.Filters) != prg.FormatFilters(r.Filters) || again.Cost.Total != r.Cost.Total {
		t.Errorf("not deterministic: %s then %s", prg.FormatFilters(r.Filters), prg.FormatFilters(again.Filters))
	}
	t.Logf("%s: %s, cost %d (no filter %d), %d tried", r.Method, prg.FormatFilters(r.Filters), r.Cost.Total, r.Baseline.Total, r.Tried)
}
