package embed_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// TestDeviceSplit: lb-2026 on an XDP hook whose maps hold 4096 entries.
// The calendar (16384) goes to the host, and with it what only follows it;
// the VLAN pop before it too, and the pops on the way to ToHost, since the
// device hands the host every frame as the wire gave it. The rest stays in the program, and the device's
// part leads the host's frames to the punt.
func TestDeviceSplit(t *testing.T) {
	em := testutil.Embedding(t, "LB2026", "XDPSmall", "ejfat/lb-2026.nsc")
	want := map[string]string{
		"LbCalendar": "table load_balance_calendar_table has 16384 entries and XDPSmall holds at most 4096 (limit table_size)",
		"L2PopVlan":  "writes the frame on the way to LbCalendar",
		"PuntPopNs":  "writes the frame on the way to ToHost",
		"LbMember":   "only frames the device hands to the host reach it",
		"LbTxCount":  "only frames the device hands to the host reach it",
	}
	for n, why := range want {
		if p := place(t, em, n); p.Kind != embed.Host || !strings.Contains(p.Reason, why) {
			t.Errorf("%s: %+v", n, p)
		}
	}
	for _, n := range []string{"LbCalendar", "L2PopVlan"} {
		if p := place(t, em, n); !strings.Contains(p.Counterexample, "valid(ethernet)") {
			t.Errorf("%s: no counterexample class: %+v", n, p)
		}
	}
	if p := place(t, em, "L2PopVlan"); !strings.Contains(p.Counterexample, "valid(vlan)") {
		t.Errorf("L2PopVlan's class is not the tagged frames: %q", p.Counterexample)
	}
	for _, n := range []string{"LbEpoch", "LbSlot", "NsCsum", "ArpReply", "PuntCount", "L2Iface"} {
		if p := place(t, em, n); p.Kind != embed.Program {
			t.Errorf("%s: %+v, want program", n, p)
		}
	}
	d := em.Device
	if d == nil {
		t.Fatal("no device part")
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Node("LbCalendar") != nil || d.Node("LbMember") != nil || d.Node("L2PopVlan") != nil {
		t.Errorf("the device part keeps host nodes")
	}
	var into []string
	for _, e := range d.Node(embed.PuntNode).In {
		into = append(into, e.From.Node.Name+"."+e.From.Name)
	}
	if strings.Join(into, " ") != "PuntHasNsMac.true PuntHasNsOpt.true PuntHasNs.true PuntHasUdp.true PuntHasIPv4.true PuntHasIPv6.true L2VlanId.out LbSlot.out" {
		t.Errorf("edges into the punt: %v", into)
	}
	var report bytes.Buffer
	em.WriteReport(&report)
	for _, line := range []string{
		"LbCalendar                host:     table load_balance_calendar_table has 16384 entries and XDPSmall holds at most 4096 (limit table_size)\n",
		"LbEpoch                   program   in the program behind RxFrames\n",
	} {
		if !strings.Contains(report.String(), line) {
			t.Errorf("report lacks %q:\n%s", line, report.String())
		}
	}
	// The full XDP PRG holds it all.
	if full := testutil.Embedding(t, "LB2026", "XDP", "ejfat/lb-2026.nsc"); full.Device != nil || place(t, full, "LbCalendar").Kind != embed.Program {
		t.Errorf("on XDP the calendar fits: %+v", place(t, full, "LbCalendar"))
	}
}

// BenchmarkEmbedSplit embeds lb-2026 into the XDP hook, where it fits,
// and into XDPSmall, where the embedder splits it (the cut, the device's
// graph and the host nodes' classes): the split's cost is the difference.
func BenchmarkEmbedSplit(b *testing.B) {
	m := testutil.Model(b, "ejfat/lb-2026.nsc")
	l, _ := m.Graph("LB2026")
	for _, prg := range []string{"XDP", "XDPSmall"} {
		p, _ := m.Graph(prg)
		b.Run(prg, func(b *testing.B) {
			for b.Loop() {
				if _, err := embed.Embed(l, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDevicePayload: the P4 PRGs read no payload (payload_bytes 0). The
// reassembler's UDP checksum verify and its len(udp) test go to the host
// behind U280's punt, with the frames that reach them; the IPv4 header
// checksum, over a header, stays. On the XDP hook, which declares no such
// limit (it reads every byte of the frames it runs), the verify stays in
// the program. lb-2026's neighbor advertisement computes its ICMPv6
// checksum over a frame whose payload_len it set: headers only, in the
// program (the P4 backend compiles it: backends/p4 TestGolden).
func TestDevicePayload(t *testing.T) {
	em := testutil.Embedding(t, "Reassembler", "U280", "ejfat/reassembler.nsc", "ejfat/p4.nsc")
	for n, why := range map[string]string{
		"UDPCsum":   "checksum verify udp reads the payload, which the checksum covers; U280 reads none of the payload (limit payload_bytes)",
		"UDPLength": "len(udp) reads where the frame ends, past its payload; U280 reads none of the payload (limit payload_bytes)",
	} {
		if p := place(t, em, n); p.Kind != embed.Host || p.Reason != why || !strings.Contains(p.Counterexample, "valid(udp)") {
			t.Errorf("%s: %+v", n, p)
		}
	}
	for _, n := range []string{"V4Csum", "V4Src", "BadIPv4Csum"} {
		if p := place(t, em, n); p.Kind != embed.Program {
			t.Errorf("%s: %+v, want program", n, p)
		}
	}
	if em.Device == nil || em.Device.Node("UDPCsum") != nil || em.Device.Node("V4Csum") == nil {
		t.Errorf("the device part: %v", em.Device)
	}
	if p := place(t, testutil.Embedding(t, "Reassembler", "XDP", "ejfat/reassembler.nsc", "ejfat/xdp.nsc"), "UDPCsum"); p.Kind != embed.Program {
		t.Errorf("on XDP: %+v", p)
	}
	// A RoCE ICRC covers the payload too (it was left in the program).
	naa := testutil.Embedding(t, "NAAResponder", "U280", "rdma/naa.nsc", "ejfat/p4.nsc")
	if p := place(t, naa, "RxICRC"); p.Kind != embed.Host || !strings.Contains(p.Reason, "reads the payload, which the ICRC covers; U280 reads none of the payload") {
		t.Errorf("NAAResponder on U280: RxICRC %+v", p)
	}
	lb := testutil.Embedding(t, "LB2026", "U280", "ejfat/lb-2026.nsc")
	if p := place(t, lb, "NsCsum"); lb.Device != nil || p.Kind != embed.Program {
		t.Errorf("lb-2026 on U280: NsCsum %+v, split %v", p, lb.Device != nil)
	}
}
