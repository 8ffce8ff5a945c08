package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
	"github.com/dragonet-go/nsc/ejfat/segment"
)

// e2eLB is the lb-2025 configuration of the end-to-end test: epoch 0 for
// every tick with a 1-bit calendar, epoch 1 for ticks 128 to 255 with a
// 2-bit calendar and slot xor 3; member 0 has the LB header removed,
// member 1 keeps it; each member has 2 ports.
var e2eLB = struct {
	bits      [2]int
	xor       [2]uint16
	calendars [2][]int // epoch → calendar slot → member
}{bits: [2]int{1, 2}, xor: [2]uint16{0, 3}, calendars: [2][]int{{0, 1}, {1, 1, 0, 0}}}

// e2eMember is the member the tables send tick to, computed as spec
// ejfat-lb-pipeline-2025.md A.7 steps 5-7 say: the tick's epoch (longest
// prefix), calendar_slot = (low 16 bits of the tick XOR slot_xor) AND
// mask, the calendar's member.
func e2eMember(tick uint64) int {
	epoch := 0
	if tick >= 128 && tick < 256 {
		epoch = 1
	}
	slot := (uint16(tick) ^ e2eLB.xor[epoch]) & (1<<e2eLB.bits[epoch] - 1)
	return e2eLB.calendars[epoch][slot]
}

// e2eTables is e2eLB's table script for an LB at lb, member i receiving
// on 127.0.0.1 ports bases[i] and bases[i]+1, senders on 127.0.0.1.
func e2eTables(lb netip.Addr, bases [2]int) string {
	ip := binary.BigEndian.Uint32(lb.AsSlice())
	var b strings.Builder
	fmt.Fprintf(&b, "table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0\n")
	fmt.Fprintf(&b, "table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0\n", ip, ip)
	fmt.Fprintf(&b, "table_add ipv4_src_filter_table allow_ip_src 0 0x7f000001 =>\n")
	fmt.Fprintf(&b, "table_add epoch_assign_table do_assign_epoch_with_slot_sel_opts 0 0x0/0 => 0 %d %d 63\n", e2eLB.bits[0], e2eLB.xor[0])
	fmt.Fprintf(&b, "table_add epoch_assign_table do_assign_epoch_with_slot_sel_opts 0 0x80/57 => 1 %d %d 5\n", e2eLB.bits[1], e2eLB.xor[1])
	for epoch, cal := range e2eLB.calendars {
		for slot, m := range cal {
			fmt.Fprintf(&b, "table_add load_balance_calendar_table do_assign_member 0 %d %d => %d\n", epoch, slot, m)
		}
	}
	for m, base := range bases {
		fmt.Fprintf(&b, "table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 %d => 0x112233445566 0x7f000001 %d 1 %d\n", m, base, m)
	}
	return b.String()
}

// startRecv starts nsc recv on two free consecutive ports of 127.0.0.1
// (or of the --listen address in args) and returns it with its first port.
func startRecv(t *testing.T, args ...string) (*nscProcess, int) {
	t.Helper()
	p := startNSC(t, append([]string{"recv", "--listen", "127.0.0.1:0", "--ports", "2"}, args...)...)
	m := regexp.MustCompile(`ports (\d+)-(\d+)`).FindStringSubmatch(p.expect(t, p.stdout, "receiving on"))
	if m == nil || atoi(m[2]) != atoi(m[1])+1 {
		t.Fatalf("nsc recv's first line names ports %v, want two", m)
	}
	return p, atoi(m[1])
}

// counter finds the number before what in out's lines.
func counter(t testing.TB, out []string, what string) int {
	t.Helper()
	re := regexp.MustCompile(`(\d+) ` + regexp.QuoteMeta(what))
	for _, l := range out {
		if m := re.FindStringSubmatch(l); m != nil {
			return atoi(m[1])
		}
	}
	t.Fatalf("no %q in %q", what, out)
	return 0
}

// TestSendLBRecv: nsc send → nsc lb → two nsc recv, all processes on
// loopback. Every event arrives whole at exactly the receiver its epoch's
// calendar slot names, byte for byte what was sent; the member that keeps
// the LB header gets every datagram with one; the LB forwards every
// segment; the sender's last sync message names the last event.
func TestSendLBRecv(t *testing.T) {
	const events, size, dataID = 200, 64 << 10, 7
	dirs := [2]string{t.TempDir(), t.TempDir()}
	var recvs [2]*nscProcess
	var bases [2]int
	for i := range recvs {
		recvs[i], bases[i] = startRecv(t, "--out", dirs[i], "--verify", "--timeout", "5s")
	}
	addr := lbtest.Addr(t)
	tables := filepath.Join(t.TempDir(), "lb.tables")
	writeFile(t, tables, e2eTables(addr.AddrPort().Addr(), bases))
	lb := startLB(t, "--lb", "lb-2025", "--tables", tables, "--listen", addr.String(), "--workers", "1")
	syncConn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer syncConn.Close()

	send := startNSC(t, "send", "--to", addr.String(), "--from", "127.0.0.1:0", "--events", strconv.Itoa(events),
		"--size", strconv.Itoa(size), "--rate", "500", "--data-id", strconv.Itoa(dataID), "--sync", syncConn.LocalAddr().String())
	code, sendOut := send.waitExit(t)
	if code != 0 || counter(t, sendOut, "events") != events {
		t.Fatalf("nsc send exited %d: %q", code, sendOut)
	}
	segments := counter(t, sendOut, "segments")
	checkLastSync(t, syncConn, events-1, dataID)

	for end := time.Now().Add(wait); countFiles(dirs[0])+countFiles(dirs[1]) < events; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Errorf("%d and %d events written, want %d in all", countFiles(dirs[0]), countFiles(dirs[1]), events)
			break
		}
	}
	var outs [2][]string
	for i, p := range recvs {
		var code int
		p.cmd.Process.Signal(syscall.SIGTERM)
		if code, outs[i] = p.waitExit(t); code != 0 || t.Failed() {
			t.Errorf("nsc recv %d exited %d: %q", i, code, outs[i])
		}
	}
	if code, last := lb.stop(t, syscall.SIGTERM); code != 0 || !strings.HasPrefix(last, fmt.Sprintf("%d received, %d forwarded, 0 dropped", segments, segments)) {
		t.Errorf("nsc lb exited %d: %q, want all %d segments forwarded", code, last, segments)
	}
	want := [2]int{}
	for tick := range uint64(events) {
		m := e2eMember(tick)
		want[m]++
		name := fmt.Sprintf("%d-%d.bin", tick, dataID)
		if _, err := os.Stat(filepath.Join(dirs[1-m], name)); err == nil {
			t.Errorf("event %d reached member %d, want only %d", tick, 1-m, m)
		}
		got, err := os.ReadFile(filepath.Join(dirs[m], name))
		if err != nil {
			t.Errorf("event %d at member %d: %v", tick, m, err)
			continue
		}
		sent := make([]byte, size)
		segment.Fill(sent, tick, dataID)
		if !bytes.Equal(got, sent) {
			t.Errorf("event %d: %d bytes differ from the %d sent", tick, len(got), len(sent))
		}
	}
	for i, out := range outs {
		if d := counter(t, out, "events delivered"); d != want[i] || counter(t, out, "verified") != want[i] {
			t.Errorf("member %d delivered %d events, want %d: %q", i, d, want[i], out)
		}
		lbHeaders, packets := counter(t, out, "with an LB header"), counter(t, out, "packets")
		if wantLB := i * packets; lbHeaders != wantLB || packets == 0 {
			t.Errorf("member %d: %d of %d datagrams with an LB header, want %d", i, lbHeaders, packets, wantLB)
		}
	}
	t.Logf("%d events, %d to member 0, %d to member 1; %d segments", events, want[0], want[1], segments)
}

// checkLastSync reads the sync messages the sender sent to c and checks
// the last, decoded as spec ejfat-reassembly.md §2 lays it out.
func checkLastSync(t *testing.T, c *net.UDPConn, last uint64, source uint32) {
	t.Helper()
	var msgs [][]byte
	buf := make([]byte, 100)
	for {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := c.Read(buf)
		if err != nil {
			break
		}
		msgs = append(msgs, slices.Clone(buf[:n]))
	}
	if len(msgs) == 0 {
		t.Fatal("no sync message")
	}
	m := msgs[len(msgs)-1]
	if len(m) != 28 || string(m[:2]) != "LC" || m[2] != 2 || m[3] != 0 {
		t.Fatalf("sync message % x: want 28 bytes, LC, version 2", m)
	}
	src, ev, rate, ns := binary.BigEndian.Uint32(m[4:]), binary.BigEndian.Uint64(m[8:]), binary.BigEndian.Uint32(m[16:]), binary.BigEndian.Uint64(m[20:])
	if age := time.Since(time.Unix(0, int64(ns))); src != source || ev != last || rate == 0 || age < 0 || age > wait {
		t.Errorf("last sync: source %d, event %d, rate %d Hz, clock %v ago; want %d, %d, > 0, now", src, ev, rate, age, source, last)
	}
}

func countFiles(dir string) int {
	es, _ := os.ReadDir(dir)
	return len(es)
}

// TestRecvPcapFromSend: nsc recv --in on a pcap nsc send --pcap wrote
// (v2 over IPv4, v3 over IPv6, events of a few sizes and of files) writes
// exactly the events sent; the same send writes the same pcap.
func TestRecvPcapFromSend(t *testing.T) {
	dir := t.TempDir()
	in := [2]string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	os.WriteFile(in[0], []byte("x"), 0o644)
	os.WriteFile(in[1], bytes.Repeat([]byte("event b "), 3000), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want map[string][]byte // file → content
	}{
		{"v2-ipv4", []string{"--to", "10.1.2.3:19522", "--events", "5", "--size", "20000", "--data-id", "3"}, synthetic(5, 20000, 3)},
		{"v3-ipv6-mtu1500", []string{"--to", "[fd00::1]:19522", "--lb", "v3", "--mtu", "1500", "--events", "3", "--size", "8917"}, synthetic(3, 8917, 0)},
		{"files", []string{"--to", "10.1.2.3:19522", "--mtu", "1000", "--in", in[0], in[1]}, map[string][]byte{"0-0.bin": []byte("x"), "1-0.bin": bytes.Repeat([]byte("event b "), 3000)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pcaps := [2]string{filepath.Join(t.TempDir(), "1.pcap"), filepath.Join(t.TempDir(), "2.pcap")}
			for _, p := range pcaps {
				if code, _, stderr := nsc(t, append([]string{"send", "--pcap", p}, c.args...)...); code != 0 {
					t.Fatalf("nsc send exited %d: %s", code, stderr)
				}
			}
			a, _ := os.ReadFile(pcaps[0])
			b, _ := os.ReadFile(pcaps[1])
			if !bytes.Equal(a, b) {
				t.Error("the same nsc send wrote two different pcaps")
			}
			// The runtime, and the code generated from the model.
			for _, engine := range []string{"runtime", "model"} {
				out := filepath.Join(t.TempDir(), "events")
				code, stdout, stderr := nsc(t, "recv", "--in", pcaps[0], "--out", out, "--engine", engine)
				if code != 0 {
					t.Fatalf("nsc recv --engine %s exited %d: %s", engine, code, stderr)
				}
				checkEvents(t, out, c.want)
				if !strings.Contains(stdout, "0 errors") || strings.Contains(stdout, "drop") {
					t.Errorf("nsc recv --engine %s: %s", engine, stdout)
				}
			}
		})
	}
}

// synthetic is n events of nsc send's content, by file name.
func synthetic(n, size int, dataID uint16) map[string][]byte {
	m := map[string][]byte{}
	for i := range n {
		b := make([]byte, size)
		segment.Fill(b, uint64(i), dataID)
		m[fmt.Sprintf("%d-%d.bin", i, dataID)] = b
	}
	return m
}

// checkEvents checks that dir holds exactly the files of want.
func checkEvents(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
		got, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if w, ok := want[e.Name()]; !ok || !bytes.Equal(got, w) {
			t.Errorf("%s: %d bytes, want %d (expected: %v)", e.Name(), len(got), len(w), ok)
		}
	}
	if len(names) != len(want) {
		t.Errorf("events written %v, want %d", names, len(want))
	}
}

// gpFrame is one datagram of the hand-built pcap.
type gpFrame struct {
	v6     bool
	port   uint16
	udp    []byte // the UDP payload
	notUDP bool
}

// lbRE packs an LB header (version lb, 0 for none) and an RE header in
// front of data, byte by byte as spec ejfat-reassembly.md §2 lays them
// out.
func lbRE(lb byte, tick uint64, dataID uint16, offset, length uint32, data []byte) []byte {
	var b []byte
	if lb != 0 {
		b = append(b, 'L', 'B', lb, 1, 0, 0, 0, 9) // reserved or slot select, entropy or port select
		b = binary.BigEndian.AppendUint64(b, tick)
	}
	b = append(b, 0x10, 0)
	b = binary.BigEndian.AppendUint16(b, dataID)
	b = binary.BigEndian.AppendUint32(b, offset)
	b = binary.BigEndian.AppendUint32(b, length)
	b = binary.BigEndian.AppendUint64(b, tick)
	return append(b, data...)
}

// writeGopacketPcap writes frames as Ethernet/IPv4 or IPv6/UDP with
// gopacket, 1 ms apart.
func writeGopacketPcap(t *testing.T, name string, frames []gpFrame) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	w.WriteFileHeader(65536, layers.LinkTypeEthernet)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, fr := range frames {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
		udp := &layers.UDP{SrcPort: 50000, DstPort: layers.UDPPort(fr.port)}
		var ip gopacket.NetworkLayer
		if fr.v6 {
			eth.EthernetType = layers.EthernetTypeIPv6
			ip = &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolUDP, HopLimit: 64, SrcIP: net.ParseIP("fd00::2"), DstIP: net.ParseIP("fd00::1")}
		} else {
			proto := layers.IPProtocolUDP
			if fr.notUDP {
				proto = layers.IPProtocolICMPv4
			}
			ip = &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: net.IPv4(10, 0, 0, 2), DstIP: net.IPv4(10, 0, 0, 1)}
		}
		udp.SetNetworkLayerForChecksum(ip)
		buf := gopacket.NewSerializeBuffer()
		ls := []gopacket.SerializableLayer{eth, ip.(gopacket.SerializableLayer), udp, gopacket.Payload(fr.udp)}
		if fr.notUDP {
			ls = []gopacket.SerializableLayer{eth, ip.(gopacket.SerializableLayer), gopacket.Payload(fr.udp)}
		}
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
			t.Fatal(err)
		}
		ts := start.Add(time.Duration(i) * time.Millisecond)
		w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(buf.Bytes()), Length: len(buf.Bytes())}, buf.Bytes())
	}
}

// TestRecvPcapGopacket: nsc recv --in on a pcap built with gopacket, LB
// and RE headers packed by hand: segments out of order and interleaved,
// with and without an LB header (v2, v3), over IPv4 and IPv6, to either
// of the two ports; a duplicate, a bad RE version, an out-of-bounds
// segment, an event never completed, a frame to another port and one not
// UDP. Exactly the complete events are written; each refusal is counted
// under its reason.
func TestRecvPcapGopacket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	content := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	a, b, c, d := content(3000), content(1), content(2500), content(2000)
	frames := []gpFrame{
		{port: 19522, udp: lbRE(2, 5, 1, 2000, 3000, a[2000:])},
		{port: 19523, udp: lbRE(0, 7, 2, 1200, 2500, c[1200:2400])},
		{port: 19522, udp: lbRE(0, 5, 1, 0, 3000, a[:1000])},
		{port: 19522, udp: lbRE(2, 5, 1, 0, 3000, a[:1000])}, // duplicate
		{port: 19522, udp: lbRE(0, 8, 1, 0, 2000, d[:1000])}, // never completed
		{v6: true, port: 19523, udp: lbRE(0, 6, 1, 0, 1, b)},
		{port: 19523, udp: lbRE(3, 7, 2, 0, 2500, c[:1200])},
		{port: 19522, udp: append([]byte{0x20, 0}, lbRE(0, 9, 1, 0, 100, content(100))[2:]...)}, // RE version 2
		{port: 19522, udp: lbRE(0, 9, 1, 900, 1000, content(200))},                              // out of bounds
		{port: 9999, udp: lbRE(0, 10, 1, 0, 10, content(10))},                                   // another port
		{notUDP: true, udp: content(40)},
		{port: 19522, udp: lbRE(0, 5, 1, 1000, 3000, a[1000:2000])},
		{port: 19523, udp: lbRE(0, 7, 2, 2400, 2500, c[2400:])},
	}
	pcap := filepath.Join(t.TempDir(), "in.pcap")
	writeGopacketPcap(t, pcap, frames)
	out := filepath.Join(t.TempDir(), "events")
	code, stdout, stderr := nsc(t, "recv", "--in", pcap, "--listen", "0.0.0.0:19522", "--ports", "2", "--out", out)
	if code != 0 {
		t.Fatalf("nsc recv exited %d: %s", code, stderr)
	}
	checkEvents(t, out, map[string][]byte{"5-1.bin": a, "6-1.bin": b, "7-2.bin": c})
	lines := strings.Split(stdout, "\n")
	for what, want := range map[string]int{
		"events received": 4, "reassembled": 4 - 1, "timed out": 1, "packets": 11, "with an LB header": 3,
		"skipped": 2, "events delivered": 3,
	} {
		if got := counter(t, lines, what); got != want {
			t.Errorf("%s: %d, want %d", what, got, want)
		}
	}
	for _, drop := range []string{"duplicate", "bad header", "out of bounds"} {
		if !regexp.MustCompile(`drop ` + drop + ` +1\n`).MatchString(stdout) {
			t.Errorf("no drop %s 1 in %s", drop, stdout)
		}
	}

	// Below the 3000 and 2500 bytes of events 5 and 7, their 7 segments
	// are refused as too large.
	out = filepath.Join(t.TempDir(), "small")
	if code, stdout, stderr = nsc(t, "recv", "--in", pcap, "--listen", "0.0.0.0:19522", "--ports", "2", "--max-event", "2499", "--out", out); code != 0 {
		t.Fatalf("nsc recv exited %d: %s", code, stderr)
	}
	checkEvents(t, out, map[string][]byte{"6-1.bin": b})
	if !regexp.MustCompile(`drop too large +7\n`).MatchString(stdout) {
		t.Errorf("no drop too large 7 in %s", stdout)
	}
}

// TestSendRecvInterrupt: nsc send with no end of events stops at SIGINT
// with its summary and exit code 0; both print progress once a second;
// nsc recv, once every event sent is written, stops at SIGINT with its
// counters, every event delivered and verified, exit code 0.
func TestSendRecvInterrupt(t *testing.T) {
	dir := t.TempDir()
	recv, port := startRecv(t, "--out", dir, "--verify")
	send := startNSC(t, "send", "--to", fmt.Sprintf("127.0.0.1:%d", port), "--rate", "200", "--size", "10000", "--data-id", "2")
	send.expect(t, send.stderr, "nsc send: ")
	code, last := send.stop(t, os.Interrupt)
	m := regexp.MustCompile(`^sent (\d+) events, (\d+) segments, (\d+) bytes`).FindStringSubmatch(last)
	if code != 0 || m == nil || atoi(m[1]) < 100 || atoi(m[2]) != 2*atoi(m[1]) || atoi(m[3]) != 10000*atoi(m[1]) {
		t.Fatalf("nsc send exited %d, its last line %q; want 0 and a second's events of 2 segments and 10000 bytes", code, last)
	}
	n := atoi(m[1])
	recv.expect(t, recv.stderr, "nsc recv: ")
	until(t, "every event written", func() bool { return countFiles(dir) >= n })
	recv.cmd.Process.Signal(os.Interrupt)
	code, out := recv.waitExit(t)
	if want := fmt.Sprintf("%d events delivered", n); code != 0 || !strings.HasPrefix(out[len(out)-1], want) || !strings.HasSuffix(out[len(out)-1], fmt.Sprintf("%d verified, 0 bad", n)) {
		t.Errorf("nsc recv exited %d: %q; want 0 and %q, all verified", code, out, want)
	}
}

// TestSendRecvIPv6: over IPv6 loopback, with v3 headers, nsc recv stops
// by itself after --events, every event verified.
func TestSendRecvIPv6(t *testing.T) {
	if c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		c.Close()
	}
	// The runtime, and the code generated from the reassembler model.
	for _, engine := range []string{"runtime", "model"} {
		recv, port := startRecv(t, "--listen", "[::1]:0", "--verify", "--events", "50", "--engine", engine)
		send := startNSC(t, "send", "--to", fmt.Sprintf("[::1]:%d", port), "--lb", "v3", "--events", "50", "--size", "100000", "--rate", "1000")
		if code, out := send.waitExit(t); code != 0 {
			t.Fatalf("nsc send exited %d: %q", code, out)
		}
		code, out := recv.waitExit(t)
		if code != 0 || !strings.HasPrefix(out[len(out)-1], "50 events delivered, 5000000 bytes") || !strings.HasSuffix(out[len(out)-1], "50 verified, 0 bad") {
			t.Errorf("nsc recv --engine %s exited %d: %q", engine, code, out)
		}
	}
}

// TestSendRefused: nsc send to a port no one listens on carries on past
// the ICMP port unreachables, says so, and exits 0.
func TestSendRefused(t *testing.T) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	closed := c.LocalAddr().String()
	c.Close()
	code, stdout, stderr := nsc(t, "send", "--to", closed, "--events", "20", "--size", "20000", "--rate", "1000")
	if code != 0 || !strings.HasPrefix(stdout, "sent 20 events, 60 segments") || !strings.Contains(stderr, closed+" refused datagrams") {
		t.Errorf("nsc send exited %d: %q %q", code, stdout, stderr)
	}
}

func TestSendRecvUsage(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"send"}, exitUsage, "--to is required"},
		{[]string{"send", "--to", "127.0.0.1:1", "--lb", "v4"}, exitUsage, "--lb v4: want v2 or v3"},
		{[]string{"send", "--to", "127.0.0.1:1", "--data-id", "65536"}, exitUsage, "--data-id 65536: must be 0 to 65535"},
		{[]string{"send", "--to", "127.0.0.1:1", "--size", "0"}, exitUsage, "--size 0: must be 1 to"},
		{[]string{"send", "--to", "127.0.0.1:1", "--rate", "-1"}, exitUsage, "--rate -1: must not be negative"},
		{[]string{"send", "--to", "127.0.0.1:1", "--mtu", "60"}, exitUsage, "MTU 60 leaves no payload"},
		{[]string{"send", "--to", "127.0.0.1:1", "--pcap", "x.pcap", "--sync", "127.0.0.1:2"}, exitUsage, "--sync sends; --pcap does not"},
		{[]string{"send", "--to", "127.0.0.1:1", "file"}, exitUsage, "files to send follow --in"},
		{[]string{"send", "--to", "127.0.0.1:1", "--events", "3", "--in", "file"}, exitUsage, "--in sends one per file"},
		{[]string{"send", "--to", "127.0.0.1:1", "--in", empty}, exitModel, "empty: an event holds at least one byte"},
		{[]string{"recv"}, exitUsage, "--listen or --in is required"},
		{[]string{"recv", "--listen", "127.0.0.1:0", "--ports", "3"}, exitUsage, "--ports 3: must be a power of 2"},
		{[]string{"recv", "--listen", "127.0.0.1:0", "--ports", "2", "--threads", "3"}, exitUsage, "--threads 3: must be 1 to --ports (2)"},
		{[]string{"recv", "--listen", "127.0.0.1:65535", "--ports", "2"}, exitUsage, "ports past 65535"},
		{[]string{"recv", "--listen", "127.0.0.1:0", "--timeout", "0s"}, exitUsage, "--timeout 0s: must be positive"},
		{[]string{"recv", "--in", "go.mod"}, exitModel, "go.mod: not a pcap or pcapng file"},
		{[]string{"recv", "--listen", "127.0.0.1:0", "--max-events", "0"}, exitUsage, "--max-events 0: must be at least 1"},
		{[]string{"recv", "--listen", "127.0.0.1:0", "--max-bytes", "0"}, exitUsage, "--max-bytes 0: must be positive"},
		{[]string{"recv", "--listen", "127.0.0.1:0", "--ports", "2", "--threads", "2", "--max-bytes", "100000000"}, exitUsage, "--max-bytes 100000000 over 2 threads: reasm: the buffer of a 67108864-byte event"},
	} {
		code, _, stderr := nsc(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("nsc %v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
}
