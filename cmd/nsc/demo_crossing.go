package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"

	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/reasmfast"
	"github.com/dragonet-go/nsc/ejfat/segment"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

// demoCrossing sends one event across EJFAT in memory, every stage code nsc
// generates from a model: cut into segments (ejfat/segment), forwarded by
// lb-2025's generated fast path over tables as the control plane writes
// them (ejfat/cp/calendar: two members, slots alternating), reassembled by
// the code generated from the reassembler model — and compared with what
// was sent.
func demoCrossing(e *env) error {
	const lbIP, sender = "10.1.2.3", "10.1.2.2"
	lbMAC := net.HardwareAddr{0x00, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
	ip := func(s string) uint32 {
		a := netip.MustParseAddr(s).As4()
		return uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	}
	base := fmt.Sprintf(`table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0
table_add ipv4_src_filter_table allow_ip_src 0 %#x =>
`, ip(lbIP), ip(lbIP), ip(sender))
	ts, err := lbfast.Tables("lb-2025", "demo", strings.NewReader(base))
	if err != nil {
		return err
	}
	byName := map[string]*table.Table{}
	for _, t := range ts {
		byName[t.Spec().Name] = t
	}
	w, err := calendar.NewWriter(func(name string) (*packet.TableSpec, bool) {
		if t, ok := byName[name]; ok {
			return t.Spec(), true
		}
		return nil, false
	})
	if err != nil {
		return err
	}
	cal := calendar.Empty()
	for i := range cal {
		cal[i] = uint16(i % 2)
	}
	var members []calendar.Member
	for m := range 2 {
		members = append(members, calendar.Member{ID: uint16(m), MAC: [6]byte{0x02, 0, 0, 0, 0, byte(m + 1)},
			IPv4: netip.AddrFrom4([4]byte{10, 1, 3, byte(m + 1)}), UDPBase: 19000, PortBits: 1})
	}
	es, err := w.Entries(0, []calendar.Epoch{{Boundary: 0, Calendar: *cal}}, members)
	if err != nil {
		return err
	}
	for _, te := range es {
		if err := byName[te.Table].Insert(te.Entry); err != nil {
			return fmt.Errorf("%s: %v", te.Table, err)
		}
	}
	lb, err := lbfast.New("lb-2025", ts)
	if err != nil {
		return err
	}
	re, err := reasmfast.New(nil)
	if err != nil {
		return err
	}
	seg, err := segment.New(segment.Config{MTU: 1500, LBVersion: 2, Src: netip.MustParseAddrPort(sender + ":50000"),
		Dst: netip.MustParseAddrPort(lbIP + ":19522"), Frames: true, SrcMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 0x10}, DstMAC: lbMAC})
	if err != nil {
		return err
	}
	const number, dataID = 7, 1
	event := make([]byte, 20000)
	segment.Fill(event, number, dataID)
	if err := seg.Start(event, number, dataID); err != nil {
		return err
	}
	buf := make([]byte, 2*packet.Headroom+seg.MaxLen()) // Next wants MaxLen past where it writes
	out := make([]byte, 2*packet.Headroom+seg.MaxLen())
	segments, forwarded := 0, map[string]int{}
	var got []byte
	for {
		n, err := seg.Next(buf[packet.Headroom:])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		segments++
		r := lb.Process(buf, packet.Headroom, n)
		if r.Sink < 0 {
			return fmt.Errorf("segment %d dropped by the LB at %v", segments, lb.DropSite(int(r.Drop)))
		}
		forwarded[memberOf(r.Data)]++
		m := copy(out[packet.Headroom:], r.Data)
		if d := re.Process(out, packet.Headroom, m); d.Sink >= 0 {
			got = bytes.Clone(d.Data)
		}
	}
	fmt.Fprintf(e.stdout, "\n== an event across EJFAT, every stage generated from a model\n")
	fmt.Fprintf(e.stdout, "event %d (data id %d, %d bytes) cut into %d segments (LB v2 + RE headers)\n", number, dataID, len(event), segments)
	for _, k := range sortedKeys(forwarded) {
		fmt.Fprintf(e.stdout, "lb-2025 (generated Go, calendar as the control plane writes it) sent %d segments to %s\n", forwarded[k], k)
	}
	if !bytes.Equal(got, event) {
		return fmt.Errorf("the reassembled event (%d bytes) is not the one sent", len(got))
	}
	fmt.Fprintf(e.stdout, "reassembled by the code generated from models/ejfat/reassembler.nsc: %d bytes, byte for byte the event sent\n", len(got))
	return nil
}
