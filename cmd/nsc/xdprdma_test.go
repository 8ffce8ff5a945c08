package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/rdma"
	"github.com/dragonet-go/nsc/sim"
)

// TestXDPAttachResponders runs each RDMA responder split between RDMAXDP's
// program and the host for real (models/rdma/xdp.nsc): `nsc xdp attach
// --host naa|irn` in one network namespace attaches the program (the
// header and ICRC checks) to one end of a veth pair and runs the host
// part and its runtime (the QP register on, placement, ACK/NAK frames) on
// every frame the program passes. The other end sends, in order, a clean
// 1 MiB WRITE with Immediate on a QP of its own (256 packets of 4 KiB,
// an ACK asked for every 16th), the responder's crafted traffic
// (rdma/testdata), each crafted frame again with its ICRC broken, and
// 2,000 frames derived from them (half with the ICRC made right again),
// and receives the replies. Against the interpreter on
// the responder's LPG alone with the same tables and the same frames in
// the same order (state carried across), and NAAAck on what it hands out:
// the same ACK/NAK frames (as a multiset: the replies may cross on the
// way back), the same bytes in the region (its SHA-256, which nsc prints
// when it stops), and the host part ran exactly the frames the program
// passed.
func TestXDPAttachResponders(t *testing.T) {
	xdptest.Require(t)
	// rdma/testdata's QPs and region, and QP 0x13 for the clean message.
	base, err := os.ReadFile("../../rdma/testdata/rdma.tables")
	if err != nil {
		t.Fatal(err)
	}
	tables := filepath.Join(t.TempDir(), "rdma.tables")
	if err := os.WriteFile(tables, append(base, "table_add connections connected 0x13 => 0x0 0x22\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ host, file, lpg, pcap string }{
		{"naa", "rdma/naa.nsc", "NAAResponder", "naa.pcap"},
		{"irn", "rdma/irn.nsc", "IRNResponder", "irn.pcap"},
	} {
		t.Run(c.host, func(t *testing.T) {
			dir := t.TempDir()
			if code, _, stderr := nsc(t, "compile", "models/"+c.file, "models/rdma/xdp.nsc", "--lpg", c.lpg, "--prg", "RDMAXDP", "--target", "xdp", "-o", dir); code != exitOK {
				t.Fatalf("compile: exit %d: %s", code, stderr)
			}
			crafted, err := pcapio.ReadFile("../../rdma/testdata/" + c.pcap)
			if err != nil {
				t.Fatal(err)
			}
			var seeds [][]byte
			for _, f := range crafted {
				seeds = append(seeds, f.Data)
			}
			frames := append(cleanWrite(c.host == "irn"), difftest.ICRCTraffic(seeds, 2000, 26, func(f []byte) bool { return len(f) >= 14 && len(f) <= 9014 })...)
			want, region := interpretResponder(t, c.file, c.lpg, tables, frames)

			out, back := attachHost(t, c.host, filepath.Join(dir, strings.ToLower(c.lpg)+".o"), tables, frames, want, syscall.SIGTERM)
			all := strings.Join(out, "\n")
			device, host, ok := strings.Cut(all, "host part of "+c.host+":\n")
			if !ok {
				t.Fatalf("no host part counters:\n%s", all)
			}
			m := regexp.MustCompile(`sink PuntToHost +(\d+)  -> XDP_PASS`).FindStringSubmatch(device)
			if m == nil {
				t.Fatalf("the program passed nothing:\n%s", all)
			}
			passed, _ := strconv.Atoi(m[1])
			if !strings.HasPrefix(host, fmt.Sprintf("%d packets in\n", passed)) {
				t.Errorf("the program passed %d frames; the host part did not run exactly those:\n%s", passed, host)
			}
			if sum := fmt.Sprintf("region R_Key 0xabcd at 0x10000, %d bytes: sha256 %x", len(region), sha256.Sum256(region)); !strings.Contains(host, sum) {
				t.Errorf("the region is not the interpreter's (%s):\n%s", sum, host)
			}
			if !strings.Contains(device, "drop RxBadICRC") || !strings.Contains(host, "sink RxMemory") || !strings.Contains(device, "QP 0x13: message complete, immediate 0x7") {
				t.Errorf("the traffic misses a path (a bad ICRC dropped by the program, a payload placed, a message completed):\n%s", all)
			}
			if strings.Contains(host, "not sent") || strings.Contains(host, "lost") || strings.Contains(device, "longer than") {
				t.Errorf("frames lost or not run:\n%s", all)
			}
			t.Logf("%d frames sent, %d replies came back; %d passed to the host part:\n%s", len(frames), len(back), passed, all)
		})
	}
}

// interpretResponder runs frames, in order, through responder lpg of
// model file in the interpreter, with the table script tables, and NAAAck
// on what it hands out, doing what the runtime does with it: the reply
// frames (hex), and region 0xabcd (rdma.tables': 16 MiB at 0x10000) with
// every payload placed.
func interpretResponder(t *testing.T, file, lpg, tables string, frames [][]byte) (replies []string, region []byte) {
	t.Helper()
	mod := testutil.Model(t, file)
	script, err := os.Open(tables)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := packet.LoadTables(mod.Schema, tables, script)
	script.Close()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := mod.Graph(lpg)
	resp, err := sim.New(g, ts)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := mod.Graph("NAAAck")
	ack, err := sim.New(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	const flagData, flagAck, flagSend = 0x80, 0x40, 0x10
	region = make([]byte, 0x1000000)
	for _, f := range frames {
		resp.Run(bytes.Clone(f), func(sink *dataflow.Node, out []byte) {
			flags := out[23]
			if sink.Name == "RxMemory" && flags&(flagData|flagSend) == flagData && binary.BigEndian.Uint32(out) == 0xabcd {
				off, n := binary.BigEndian.Uint64(out[4:]), binary.BigEndian.Uint32(out[12:])
				from := rdma.PlacementLen + int(binary.BigEndian.Uint16(out[24:]))
				copy(region[off:off+uint64(n)], out[from:])
			}
			if sink.Name == "RxReply" || flags&flagAck != 0 {
				ack.Run(bytes.Clone(out), func(_ *dataflow.Node, reply []byte) { replies = append(replies, hex.EncodeToString(reply)) })
			}
		})
	}
	return replies, region
}

// cleanWrite is a 1 MiB WRITE with Immediate (7) on QP 0x13 from PSN 0 to
// R_Key 0xabcd at 0x20000: 256 packets of 4 KiB, each 16th asking for an
// ACK; with a RETH in every packet for IRN.
func cleanWrite(irn bool) [][]byte {
	const n, mtu = 256, 4096
	src := rdma.Endpoint{MAC: net.HardwareAddr{0, 0x11, 0x22, 0x33, 0x44, 0x55}, IP: net.IPv4(10, 0, 0, 1), Port: 49152}
	dst := rdma.Endpoint{MAC: net.HardwareAddr{0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}, IP: net.IPv4(10, 0, 0, 2), Port: 49152}
	var frames [][]byte
	for i := range n {
		payload := make([]byte, mtu)
		for k := range payload {
			payload[k] = byte(i*31 + k*7)
		}
		p := &rdma.Packet{Opcode: rdma.WriteOpcode(i, n, true), PKey: rdma.DefaultPKey, DQPN: 0x13, PSN: uint32(i), AckReq: i%16 == 15,
			VA: 0x20000, RKey: 0xabcd, DMALen: n * mtu, Imm: 7, IRN: irn, Payload: payload}
		if irn {
			p.VA += uint64(i * mtu)
		}
		frames = append(frames, rdma.AppendFrame(nil, src, dst, p))
	}
	return frames
}
