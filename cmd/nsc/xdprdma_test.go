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
	"time"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/packet/table"
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
	tables := rdmaTables(t)
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
			frames := append(cleanWrite(c.host == "irn", 0, 0), difftest.ICRCTraffic(seeds, 2000, 26, func(f []byte) bool { return len(f) >= 14 && len(f) <= 9014 })...)
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
	ts, err := table.Load(mod.Schema, tables, script)
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

// cleanWrite is a 1 MiB WRITE with Immediate (7) on QP 0x13 from PSN
// first, consuming receive WQE sn (IRN), to R_Key 0xabcd at 0x20000: 256
// packets of 4 KiB, each 16th asking for an ACK; with a RETH in every
// packet for IRN.
func cleanWrite(irn bool, first, sn uint32) [][]byte {
	const n, mtu = 256, 4096
	src := rdma.Endpoint{MAC: net.HardwareAddr{0, 0x11, 0x22, 0x33, 0x44, 0x55}, IP: net.IPv4(10, 0, 0, 1), Port: 49152}
	dst := rdma.Endpoint{MAC: net.HardwareAddr{0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}, IP: net.IPv4(10, 0, 0, 2), Port: 49152}
	var frames [][]byte
	for i := range n {
		payload := make([]byte, mtu)
		for k := range payload {
			payload[k] = byte(i*31 + k*7)
		}
		p := &rdma.Packet{Opcode: rdma.WriteOpcode(i, n, true), PKey: rdma.DefaultPKey, DQPN: 0x13, PSN: (first + uint32(i)) & 0xffffff,
			AckReq: i%16 == 15, VA: 0x20000, RKey: 0xabcd, DMALen: n * mtu, Imm: 7, IRN: irn, WQESN: sn, Payload: payload}
		if irn {
			p.VA += uint64(i * mtu)
		}
		frames = append(frames, rdma.AppendFrame(nil, src, dst, p))
	}
	return frames
}

// rdmaTables is rdma/testdata's table script and QP 0x13 (initial PSN 0),
// in a file of its own.
func rdmaTables(t testing.TB) string {
	base, err := os.ReadFile("../../rdma/testdata/rdma.tables")
	if err != nil {
		t.Fatal(err)
	}
	tables := filepath.Join(t.TempDir(), "rdma.tables")
	if err := os.WriteFile(tables, append(base, "table_add connections connected 0x13 => 0x0 0x22\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	return tables
}

// BenchmarkXDPAttachResponders: 1 MiB WRITEs with Immediate (256 frames
// of 4 KiB, cleanWrite) through each responder split on RDMAXDP, live
// (nsc xdp attach --host, generic mode, on a veth pair between two network
// namespaces): the other end sends the frames over a packet socket with a
// window of 64 frames that the ACKs move (IRN answers every packet,
// go-back-N every 16th, AckReq). Next to it, frame-copy: the same frames
// over the same kind of veth pair with no program, a packet socket at the
// far end copying each payload into memory and sending a credit frame
// every 16. messages/s counts the 1 MiB messages, Gbps their payload.
func BenchmarkXDPAttachResponders(b *testing.B) {
	xdptest.Require(b)
	tables := rdmaTables(b)
	for _, c := range []struct{ host, file, lpg string }{
		{"naa", "rdma/naa.nsc", "NAAResponder"},
		{"irn", "rdma/irn.nsc", "IRNResponder"},
	} {
		b.Run(c.host, func(b *testing.B) {
			dir := b.TempDir()
			if code, _, stderr := nsc(b, "compile", "models/"+c.file, "models/rdma/xdp.nsc", "--lpg", c.lpg, "--prg", "RDMAXDP", "--target", "xdp", "-o", dir); code != exitOK {
				b.Fatalf("compile: exit %d: %s", code, stderr)
			}
			var frames [][]byte
			for k := range b.N {
				frames = append(frames, cleanWrite(c.host == "irn", uint32(k*256), uint32(k))...)
			}
			devNS, peerNS := vethNamespaces(b, "bench"+c.host, "vlb", "vtx")
			p := startNSCIn(b, devNS, "xdp", "attach", "--dev", "vlb", "--mode", "generic", "--obj", filepath.Join(dir, strings.ToLower(c.lpg)+".o"), "--tables", tables, "--host", c.host)
			p.expect(b, p.stdout, "host part of "+c.host+" on vlb")
			conn := peerConn(b, peerNS)
			b.ResetTimer()
			start := time.Now()
			pump(b, conn, frames, func(f []byte) int {
				if len(f) < 58 || f[42] != rdma.Acknowledge || f[54] != 0 {
					return -1
				}
				return int(uint32(f[51])<<16|uint32(f[52])<<8|uint32(f[53])) + 1 // acknowledged through this PSN
			})
			perMessage(b, start)
			p.cmd.Process.Signal(syscall.SIGTERM)
			if code, out := p.waitExit(b); code != exitOK {
				b.Fatalf("nsc xdp attach: exit %d:\n%s", code, strings.Join(out, "\n"))
			}
		})
	}
	b.Run("frame-copy", func(b *testing.B) {
		var frames [][]byte
		for k := range b.N {
			frames = append(frames, cleanWrite(false, uint32(k*256), 0)...)
		}
		devNS, peerNS := vethNamespaces(b, "benchcopy", "vlb", "vtx")
		var rx *xdprun.PacketConn
		xdptest.InNetns(b, devNS, func() (err error) {
			rx, err = xdprun.ListenPacket("vlb", 4<<20)
			return err
		})
		defer rx.Close()
		go func() { // a payload copied into memory, a credit frame every 16
			mem, buf := make([]byte, 1<<20), make([]byte, 9100)
			credit := make([]byte, 60)
			copy(credit, []byte{0, 0x11, 0x22, 0x33, 0x44, 0x55, 0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x88, 0xb5})
			for i := 0; ; {
				n, err := rx.Read(buf)
				if err != nil {
					return
				}
				if n < 4096 {
					continue
				}
				copy(mem[i%256*4096:], buf[n-4-4096:n-4])
				if i++; i%16 == 0 {
					binary.BigEndian.PutUint32(credit[14:], uint32(i))
					rx.Write(credit)
				}
			}
		}()
		conn := peerConn(b, peerNS)
		b.ResetTimer()
		start := time.Now()
		pump(b, conn, frames, func(f []byte) int {
			if len(f) < 18 || f[12] != 0x88 || f[13] != 0xb5 {
				return -1
			}
			return int(binary.BigEndian.Uint32(f[14:]))
		})
		perMessage(b, start)
	})
}

// peerConn is a packet socket on vtx in network namespace ns.
func peerConn(b *testing.B, ns string) *xdprun.PacketConn {
	var conn *xdprun.PacketConn
	xdptest.InNetns(b, ns, func() (err error) {
		conn, err = xdprun.ListenPacket("vtx", 4<<20)
		return err
	})
	b.Cleanup(func() { conn.Close() })
	return conn
}

// pump sends frames over conn, at most 64 of them not yet acknowledged;
// acked reads from a frame that comes back how many of all frames the far
// end acknowledged (-1: not an acknowledgement). Two seconds without one
// fail the benchmark.
func pump(b *testing.B, conn *xdprun.PacketConn, frames [][]byte, acked func([]byte) int) {
	b.Helper()
	buf := make([]byte, 9100)
	sent, done, idle := 0, 0, 0
	for done < len(frames) {
		for ; sent < len(frames) && sent-done < 64; sent++ {
			if err := conn.Write(frames[sent]); err != nil {
				b.Fatal(err)
			}
		}
		n, err := conn.Read(buf)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			if idle++; idle*int(xdprun.Timeout) > int(2*time.Second) {
				b.Fatalf("stalled: %d of %d frames acknowledged", done, len(frames))
			}
			continue
		}
		idle = 0
		if k := acked(buf[:n]); k > done {
			done = k
		}
	}
}

// perMessage stops the timer and reports messages/s and Gbps for b.N
// 1 MiB messages since start.
func perMessage(b *testing.B, start time.Time) {
	b.StopTimer()
	b.SetBytes(1 << 20)
	s := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N)/s, "messages/s")
	b.ReportMetric(float64(b.N)*8*(1<<20)/s/1e9, "Gbps")
}
