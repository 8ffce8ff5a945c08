package calendar_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
)

// The reference configurations' LB instances 0 and 1 (ejfat/testdata):
// their addresses and allowed senders.
var (
	ownMAC  = net.HardwareAddr{0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
	peerMAC = net.HardwareAddr{0, 0x11, 0x22, 0x33, 0x44, 0x55}
	lbIPv4  = []net.IP{net.IPv4(10, 1, 2, 3).To4(), net.IPv4(10, 1, 2, 4).To4()}
	lbIPv6  = []net.IP{net.ParseIP("fd9f:53b7:a261:48ed:2aa:bbff:fecc:ddee"), net.ParseIP("fd9f:53b7:a261:48ed::1")}
	srcIPv4 = []net.IP{net.IPv4(10, 1, 2, 2).To4(), net.IPv4(10, 1, 2, 10).To4()}
	srcIPv6 = []net.IP{net.ParseIP("fe80::1"), net.ParseIP("fe80::10")}
)

var catchAllMAC = []byte{2, 0, 0, 0, 0, 0xff}

var epochTables = []string{calendar.EpochTable, calendar.CalendarTable, calendar.MemberTable}

// baseScript is a version's reference table script without its epoch,
// calendar and member entries.
func baseScript(t *testing.T, version string) string {
	t.Helper()
	b, err := os.ReadFile("../../testdata/" + version + ".tables")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 1 && f[0] == "table_add" && strings.Contains(strings.Join(epochTables, " "), f[1]) {
			continue
		}
		fmt.Fprintln(&out, sc.Text())
	}
	return out.String()
}

// catchAll sends every tick of LB 0 and 1 to member 0 at catchAllMAC:
// with it, the reference interpreter forwards there exactly the frames that
// reach the epoch lookup, whatever their tick: the frames whose route the
// generated entries decide.
func catchAll() string {
	var b strings.Builder
	for lb := range 2 {
		fmt.Fprintf(&b, "table_add epoch_assign_table do_assign_epoch_with_slot_sel_opts %d 0x0/0 => 0 0 0 64\n", lb) // slot 0 always
		fmt.Fprintf(&b, "table_add load_balance_calendar_table do_assign_member %d 0 0 => 0\n", lb)
		fmt.Fprintf(&b, "table_add member_info_lookup_table do_ipv4_member_rewrite %d 0x0800 0 => 0x0200000000ff 0x0a0000ff 0x4000 0 1\n", lb)
		fmt.Fprintf(&b, "table_add member_info_lookup_table do_ipv6_member_rewrite %d 0x86dd 0 => 0x0200000000ff 0xfd0000000000000000000000000000ff 0x4000 0 1\n", lb)
	}
	return b.String()
}

// lbFrame is an LB frame to instance lb.
func lbFrame(t *testing.T, lb int, v6 bool, h *ejfat.LB) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: peerMAC, DstMAC: ownMAC, EthernetType: layers.EthernetTypeIPv4}
	udp := &layers.UDP{SrcPort: 50000, DstPort: ejfat.LBPort}
	var ip gopacket.SerializableLayer
	if v6 {
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: srcIPv6[lb], DstIP: lbIPv6[lb]}
		udp.SetNetworkLayerForChecksum(ip6)
		eth.EthernetType, ip = layers.EthernetTypeIPv6, ip6
	} else {
		ip4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: srcIPv4[lb], DstIP: lbIPv4[lb]}
		udp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	}
	h.Magic = ejfat.LBMagic
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, h, gopacket.Payload("event data")); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sent runs one frame and returns what left by the wire, nil if dropped.
func sent(m *sim.Machine, frame []byte) []byte {
	var out []byte
	m.Run(frame, func(sink *dataflow.Node, data []byte) {
		if strings.HasSuffix(sink.Name, "TxWire") {
			out = append([]byte(nil), data...)
		}
	})
	return out
}

// expected is where the generated tables must send an LB frame: the
// member of the calendar slot of its tick's epoch, the destination address
// of its family, the port base + its port select's low PortBits; ok false
// when the slot is unassigned (dropped).
func expected(t *testing.T, frame []byte, live [2][]calendar.Epoch, members map[uint16]calendar.Member) (mac net.HardwareAddr, ip net.IP, port uint16, ok bool) {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	var h ejfat.LB
	if udp == nil || h.DecodeFromBytes(udp.Payload, gopacket.NilDecodeFeedback) != nil || h.Version < 2 {
		t.Fatalf("frame %x reaches the epoch lookup but is no LB v2/v3 frame", frame)
	}
	lb, v6 := 0, false
	if ip4, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		lb = map[bool]int{true: 0, false: 1}[ip4.DstIP.Equal(lbIPv4[0])]
	} else {
		lb, v6 = map[bool]int{true: 0, false: 1}[p.Layer(layers.LayerTypeIPv6).(*layers.IPv6).DstIP.Equal(lbIPv6[0])], true
	}
	sel, psel := uint16(h.Tick), h.Entropy
	if h.Version == 3 {
		sel, psel = h.SlotSelect, h.PortSelect
	}
	e := &live[lb][calendar.EpochOf(live[lb], h.Tick)]
	id := e.Calendar[sel%calendar.Slots]
	if id == calendar.Unassigned {
		return nil, nil, 0, false
	}
	m := members[id]
	ip = net.IP(m.IPv4.AsSlice())
	if v6 {
		ip = net.IP(m.IPv6.AsSlice())
	}
	return m.MAC[:], ip, m.UDPBase + psel&(1<<m.PortBits-1), true
}

// TestRoutesByCalendar: with the generated epoch, calendar and member
// entries for LB 0 and 1 in place of the reference ones, the interpreter
// sends every frame of the LB corpus and of frames around the boundaries
// that reaches the epoch lookup (known from the reference interpreter
// with a catch-all configuration) to the member the calendar names for
// its tick's epoch and slot, at its address and port, and drops it when
// the slot is unassigned.
func TestRoutesByCalendar(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	ms := testMembers(6)
	members := map[uint16]calendar.Member{}
	for _, m := range ms {
		members[m.ID] = m
	}
	live := [2][]calendar.Epoch{
		testEpochs(t, r, ms, 8, 16, 31, 0x100),
		testEpochs(t, r, ms, 3, 11, 1<<20, 1<<40+5),
	}
	corpus, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	frames := corpus
	for lb := range 2 {
		for _, tick := range probeTicks(r, live[lb]) {
			for _, v6 := range []bool{false, true} {
				frames = append(frames,
					lbFrame(t, lb, v6, &ejfat.LB{Version: 2, Protocol: 1, Entropy: uint16(r.Uint32()), Tick: tick}),
					lbFrame(t, lb, v6, &ejfat.LB{Version: 3, Protocol: 1, SlotSelect: uint16(r.Uint32()), PortSelect: uint16(r.Uint32()), Tick: tick}))
			}
		}
	}
	for _, version := range versions {
		specs, w := model(t, version)
		var es []packet.TableEntry
		for lb := range 2 {
			e, err := w.Entries(uint8(lb), live[lb], ms)
			if err != nil {
				t.Fatal(err)
			}
			es = append(es, e...)
		}
		var script bytes.Buffer
		script.WriteString(baseScript(t, version))
		if err := packet.FormatEntries(&script, es, specs); err != nil {
			t.Fatal(err)
		}
		mine, err := ejfat.Interpreter(version, ejfat.HostPRG, "generated", &script)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := ejfat.Interpreter(version, ejfat.HostPRG, "catch-all", strings.NewReader(baseScript(t, version)+catchAll()))
		if err != nil {
			t.Fatal(err)
		}
		forwarded, dropped := 0, 0
		for _, f := range frames {
			if out := sent(ref, f); out == nil || !bytes.Equal(out[:6], catchAllMAC) {
				if out := sent(mine, f); out != nil && bytes.HasPrefix(out, catchAllMAC[:5]) {
					t.Fatalf("%s: frame %x forwarded to a member, but it does not reach the epoch lookup", version, f)
				}
				continue
			}
			mac, ip, port, ok := expected(t, f, live, members)
			out := sent(mine, f)
			if !ok {
				if out != nil {
					t.Fatalf("%s: frame %x of an unassigned slot forwarded", version, f)
				}
				dropped++
				continue
			}
			if out == nil {
				t.Fatalf("%s: frame %x dropped, want member %v", version, f, mac)
			}
			p := gopacket.NewPacket(out, layers.LayerTypeEthernet, gopacket.Default)
			gotIP := net.IP(nil)
			if l, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
				gotIP = l.DstIP
			} else if l, ok := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
				gotIP = l.DstIP
			}
			udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
			if eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet); !bytes.Equal(eth.DstMAC, mac) || !gotIP.Equal(ip) || udp == nil || uint16(udp.DstPort) != port {
				t.Fatalf("%s: frame %x went to %x, want %v %v port %d", version, f, out, mac, ip, port)
			}
			forwarded++
		}
		t.Logf("%s: %d frames to their calendar members, %d of unassigned slots dropped", version, forwarded, dropped)
		if forwarded < 500 || dropped < 20 {
			t.Errorf("%s: %d forwarded, %d dropped: too few to tell", version, forwarded, dropped)
		}
	}
}
