package prg_test

import (
	"io/fs"
	"net"
	"net/netip"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
	"github.com/dragonet-go/nsc/prg"
	"github.com/dragonet-go/nsc/sim"
)

// steering is a PRG whose Rx steers by five-tuple filters; Mode picks
// whether the filters run at all.
const steering = `include "lib/inet.nsc"
prg Steer {
    node Wire [hardware] {
        op input parse ethernet
        port out -> Mode
    }
    config Mode: enum<2> = filtered [hardware] {
        port plain -> Miss
        port filtered -> Filters
    }
    config Filters: list<filter5, 8> = [
        [udp, any, any, any, 19000, 1, q1],
        [udp, any, 10.0.0.9, any, any, 5, q2],
        [udp, 192.0.2.1, any, any, 19001, 1, q1],
        [udp, any, any, any, 19000, 1, q2]
    ] [hardware] {
        port miss -> Miss
        port q1 -> Q1
        port q2 -> Q2
    }
    node Miss [hardware] { op emit }
    node Q1 [hardware] { op emit }
    node Q2 [hardware] { op emit }
}
`

func load(t *testing.T, src string) (*lang.Model, error) {
	t.Helper()
	fsys := fstest.MapFS{"m.nsc": {Data: []byte(src)}}
	return lang.Loader{ReadFile: func(n string) ([]byte, error) { return fs.ReadFile(fsys, n) }, Library: models.FS}.Load("m.nsc")
}

func udp4(t *testing.T, src, dst string, dport uint16) []byte {
	ip := testutil.IPv4(layers.IPProtocolUDP)
	ip.SrcIP, ip.DstIP = net.ParseIP(src).To4(), net.ParseIP(dst).To4()
	u := &layers.UDP{SrcPort: 5000, DstPort: layers.UDPPort(dport)}
	_ = u.SetNetworkLayerForChecksum(ip)
	return testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload("segment"))
}

// sinkOf runs frame through g and names the sink it reached.
func sinkOf(t *testing.T, g *dataflow.Graph, frame []byte) string {
	t.Helper()
	mach, err := sim.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	mach.Run(frame, func(s *dataflow.Node, _ []byte) { got = append(got, s.Name) })
	return strings.Join(got, ",")
}

// The interpreter runs the configured filters: the sinks below follow from
// the datasheet's rule (highest priority wins, then the lower index; IPv4
// only; unmatched to miss), worked out by hand for each packet.
func TestFiltersRun(t *testing.T) {
	m, err := load(t, steering)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.Graph("Steer")
	v6 := testutil.IPv6(layers.IPProtocolUDP)
	u6 := &layers.UDP{SrcPort: 5000, DstPort: 19000}
	_ = u6.SetNetworkLayerForChecksum(v6)
	tcp := testutil.IPv4(layers.IPProtocolTCP)
	tcp.DstIP = net.IP{10, 0, 0, 9}
	for _, c := range []struct {
		name  string
		frame []byte
		want  string
	}{
		{"dport 19000: filter 0 (filter 3 matches too, same priority, higher index)", udp4(t, "192.0.2.7", "192.0.2.2", 19000), "Q1"},
		{"dport 19000 to 10.0.0.9: filter 1 by priority 5", udp4(t, "192.0.2.7", "10.0.0.9", 19000), "Q2"},
		{"dport 19001 from 192.0.2.1: filter 2", udp4(t, "192.0.2.1", "192.0.2.2", 19001), "Q1"},
		{"dport 19001 from elsewhere: no filter", udp4(t, "192.0.2.7", "192.0.2.2", 19001), "Miss"},
		{"IPv6 to port 19000: the filters match IPv4 only", testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv6), v6, u6, gopacket.Payload("x")), "Miss"},
		{"TCP to 10.0.0.9: filter 1 wants UDP", testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), tcp, gopacket.Payload("x")), "Miss"},
	} {
		if got := sinkOf(t, g, c.frame); got != c.want {
			t.Errorf("%s: reached %q, want %s", c.name, got, c.want)
		}
	}

	// Another value for Mode: the filters and their queues are gone, every
	// packet takes plain.
	plain := &dataflow.Literal{Kind: dataflow.LitIdent, Text: "plain"}
	pg, err := prg.Configure(g, prg.Values{"Mode": plain})
	if err != nil {
		t.Fatal(err)
	}
	if pg.Node("Filters") != nil || pg.Node("Q1") != nil || pg.Declared != g.Declared {
		t.Errorf("plain: the filters stay: %v", pg.Node("Filters"))
	}
	if got := sinkOf(t, pg, udp4(t, "192.0.2.7", "10.0.0.9", 19000)); got != "Miss" {
		t.Errorf("plain: reached %q", got)
	}

	// From a file: no filters at all.
	vals, err := lang.ParseConfig("none.cfg", []byte("// all to miss\nFilters = []\n"))
	if err != nil {
		t.Fatal(err)
	}
	ng, err := prg.Configure(g, vals)
	if err != nil {
		t.Fatal(err)
	}
	if got := sinkOf(t, ng, udp4(t, "192.0.2.7", "192.0.2.2", 19000)); got != "Miss" {
		t.Errorf("no filters: reached %q", got)
	}
}

// Without a value a C-node is kept and never run: nothing reaches a sink.
func TestUnconfiguredKept(t *testing.T) {
	m, err := load(t, strings.Replace(steering, "= filtered ", "", 1))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.Graph("Steer")
	if n := g.Node("Mode"); n == nil || n.Kind != dataflow.CNode {
		t.Fatalf("Mode: %+v", n)
	}
	if got := sinkOf(t, g, udp4(t, "192.0.2.7", "192.0.2.2", 19000)); got != "" {
		t.Errorf("an unconfigured C-node ran: %q", got)
	}
}

// Bad values are errors at their position, in a model or a file.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct{ old, new, want string }{
		{"= filtered ", "= fast ", "m.nsc:7:28: config Mode: value fast is not one of its ports (plain, filtered)"},
		{"= filtered ", "= 2 ", "m.nsc:7:28: config Mode: value 2 is not one of its ports (plain, filtered)"},
		{"enum<2> = filtered", "map<bit<8>, bit<8> > = filtered", "m.nsc:7:5: config Mode: type map<bit<8>,bit<8>> has no meaning as a configuration (known: bool, enum<N>, list<filter5,N>)"},
		{"[udp, any, 10.0.0.9, any, any, 5, q2]", "[udp, any, 10.0.0.9, any, any, 9, q2]", "m.nsc:13:40: filter priority 9: want 1 to 7 (7 wins)"},
		{"[udp, any, 10.0.0.9, any, any, 5, q2]", "[udp, any, 10.0.0.9, any, any, 5, q9]", "m.nsc:13:43: config Filters: filter port q9 is not a queue port of the node (miss, q1, q2)"},
		{"[udp, any, 10.0.0.9, any, any, 5, q2]", "[any, any, 10.0.0.9, any, 80, 5, q2]", "m.nsc:13:35: filter port 80: a port is compared only with a protocol (udp, tcp, sctp)"},
		{"[udp, any, 10.0.0.9, any, any, 5, q2]", "[udp, any, 2001:db8::1, any, any, 5, q2]", "m.nsc:13:24: unexpected token"},
		{"[udp, any, 10.0.0.9, any, any, 5, q2]", "[udp, any, \"10.0.0.9\", any, any, 5, q2]", "m.nsc:13:20: filter address 10.0.0.9: want an IPv4 address or any (the filters match IPv4 only)"},
		{"[udp, any, 10.0.0.9, any, any, 5, q2]", "[icmp, any, 10.0.0.9, any, any, 5, q2]", "m.nsc:13:10: filter protocol icmp: want udp, tcp, sctp or any"},
		{"[udp, any, 10.0.0.9, any, any, 5, q2]", "[udp, 10.0.0.9]", "m.nsc:13:9: a five-tuple filter is [proto, src, dst, sport, dport, priority, port]"},
		{"list<filter5, 8>", "list<filter5, 3>", "m.nsc:11:40: config Filters: list<filter5,3> holds 3 filters, the value has 4"},
		{"port miss -> Miss", "port other -> Miss", "m.nsc:11:5: config Filters: a filter list needs a port miss for packets no filter matches"},
	} {
		src := strings.Replace(steering, c.old, c.new, 1)
		if src == steering {
			t.Fatalf("%q not in the model", c.old)
		}
		_, err := load(t, src)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %s", c.new, err, c.want)
		}
	}
	m, err := load(t, steering)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.Graph("Steer")
	for _, c := range []struct{ file, want string }{
		{"Filter = []", "x.cfg:1:10: prg Steer has no config node Filter (it has Mode, Filters)"},
		{"Wire = plain", "x.cfg:1:8: prg Steer has no config node Wire (it has Mode, Filters)"},
		{"Mode = plain\nMode = filtered", "x.cfg:2:1: config Mode given twice"},
		{"Mode = ", "x.cfg:1:8: "},
		{"\n\nFilters = [[udp, any, any, any, 70000, 1, q1]]", "x.cfg:3:33: filter port 70000: want a number below 65536 or any"},
	} {
		vals, err := lang.ParseConfig("x.cfg", []byte(c.file))
		if err == nil {
			_, err = prg.Configure(g, vals)
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %s", c.file, err, c.want)
		}
	}
}

// A filter list printed by FormatFilters and built by Literal configures
// the same filters: the search's value is one a file could hold.
func TestLiteralRoundTrip(t *testing.T) {
	m, err := load(t, steering)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.Graph("Steer")
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("10.0.0.9")
	sp, dp := uint16(5000), uint16(19000)
	fs := []prg.Filter{{Proto: "udp", Src: &src, Dst: &dst, SPort: &sp, DPort: &dp, Priority: 7, Port: "q2"}, {Priority: 1, Port: "q1"}}
	const want = "[[udp, 192.0.2.1, 10.0.0.9, 5000, 19000, 7, q2], [any, any, any, any, any, 1, q1]]"
	if got := prg.FormatFilters(fs); got != want {
		t.Fatalf("printed %s, want %s", got, want)
	}
	vals, err := lang.ParseConfig("f.cfg", []byte("Filters = "+want))
	if err != nil {
		t.Fatal(err)
	}
	for _, lit := range []*dataflow.Literal{vals["Filters"], prg.Literal(fs)} {
		got, err := prg.ParseFilters(g.Declared.Node("Filters"), prg.Type{Kind: prg.Filters, N: 8}, lit)
		if err != nil {
			t.Fatal(err)
		}
		if prg.FormatFilters(got) != want {
			t.Errorf("read back %s", prg.FormatFilters(got))
		}
	}
	// Any IPv4 packet to 10.0.0.9 matches the second filter, which the
	// first's priority beats only for its own five-tuple.
	cg, err := prg.Configure(g, prg.Values{"Filters": prg.Literal(fs)})
	if err != nil {
		t.Fatal(err)
	}
	if got := sinkOf(t, cg, udp4(t, "192.0.2.7", "10.0.0.9", 19000)); got != "Q1" {
		t.Errorf("catch-all: %s", got)
	}
	if got := sinkOf(t, cg, udp4(t, "192.0.2.1", "10.0.0.9", 19000)); got != "Q2" {
		t.Errorf("five-tuple (sport 5000): %s", got)
	}
}
