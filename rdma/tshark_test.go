package rdma_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/backends/wireshark"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/rdma"
)

// tshark runs tshark over pcap and returns each frame's fields, or skips
// (fails in CI) without tshark.
func tshark(t *testing.T, pcap string, fields []string, args ...string) [][]string {
	t.Helper()
	path, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tshark is not installed; CI must install it")
		}
		t.Skip("tshark is not installed")
	}
	args = append(args, "-r", pcap, "-T", "fields", "-E", "occurrence=f")
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, err := exec.Command(path, args...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		rows = append(rows, strings.Split(l, "\t"))
	}
	return rows
}

// TestTsharkDecodesNsc: Wireshark's InfiniBand dissector (its RoCEv2 over
// UDP 4791) reads in nsc's frames the BTH, RETH, ImmDt and AETH fields and
// the ICRC as the bytes nsc wrote.
func TestTsharkDecodesNsc(t *testing.T) {
	frames := corpus()
	fields := []string{"infiniband.bth.opcode", "infiniband.bth.se", "infiniband.bth.p_key", "infiniband.bth.destqp",
		"infiniband.bth.a", "infiniband.bth.psn", "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
		"infiniband.immdt", "infiniband.aeth.syndrome", "infiniband.aeth.msn", "infiniband.invariant.crc"}
	asWritten(t, frames, fields)
}

// asWritten runs tshark over frames and checks that it reads each of
// fields as nsc wrote it (expected); it returns the rows of fields and
// then of extra.
func asWritten(t *testing.T, frames [][]byte, fields []string, extra ...string) [][]string {
	t.Helper()
	rows := tshark(t, writePcap(t, frames), append(slices.Clip(fields), extra...))
	if len(rows) != len(frames) {
		t.Fatalf("tshark shows %d frames, want %d", len(rows), len(frames))
	}
	for i, row := range rows {
		want := expected(frames[i])
		for j, f := range fields {
			if row[j] != want[f] {
				t.Errorf("frame %d: %s = %q, nsc wrote %q", i, f, row[j], want[f])
			}
		}
	}
	return rows
}

// TestDissectorAgreesWithTshark: the Lua dissector nsc generates for
// lib/roce.nsc (nsc dissector) reads the same BTH, RETH and AETH values
// from nsc's frames as Wireshark's own InfiniBand dissector.
func TestDissectorAgreesWithTshark(t *testing.T) {
	m := testutil.Model(t, "lib/roce.nsc")
	src, err := wireshark.Generate(m, wireshark.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lua := filepath.Join(t.TempDir(), "roce.lua")
	if err := os.WriteFile(lua, src, 0o644); err != nil {
		t.Fatal(err)
	}
	pairs := [][2]string{{"bth.opcode", "infiniband.bth.opcode"}, {"bth.pkey", "infiniband.bth.p_key"}, {"bth.dqpn", "infiniband.bth.destqp"},
		{"bth.psn", "infiniband.bth.psn"}, {"reth.va", "infiniband.reth.va"}, {"reth.rkey", "infiniband.reth.r_key"},
		{"reth.dma_len", "infiniband.reth.dmalen"}, {"aeth.syndrome", "infiniband.aeth.syndrome"}, {"aeth.msn", "infiniband.aeth.msn"}}
	var ours, theirs []string
	for _, p := range pairs {
		ours, theirs = append(ours, p[0]), append(theirs, p[1])
	}
	frames := corpus()
	pcap := writePcap(t, frames)
	a, b := tshark(t, pcap, ours, "-X", "lua_script:"+lua), tshark(t, pcap, theirs)
	if len(a) != len(frames) || len(b) != len(frames) {
		t.Fatalf("tshark shows %d and %d frames, want %d", len(a), len(b), len(frames))
	}
	for i := range frames {
		for j, p := range pairs {
			x, errx := strconv.ParseUint(a[i][j], 0, 64)
			y, erry := strconv.ParseUint(b[i][j], 0, 64)
			if (a[i][j] == "") != (b[i][j] == "") || (a[i][j] != "" && (errx != nil || erry != nil || x != y)) {
				t.Errorf("frame %d: nsc's %s = %q, Wireshark's %s = %q", i, p[0], a[i][j], p[1], b[i][j])
			}
		}
	}
}

// expected reads the transport fields of a frame from its bytes (after
// the IP and UDP headers gopacket finds), as tshark prints them.
func expected(frame []byte) map[string]string {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	b := p.Layer(layers.LayerTypeUDP).LayerPayload()
	u32 := func(b []byte) uint32 { return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) }
	op := b[0]
	m := map[string]string{
		"infiniband.bth.opcode":    fmt.Sprint(op),
		"infiniband.bth.se":        fmt.Sprint(b[1] >> 7),
		"infiniband.bth.p_key":     fmt.Sprint(uint16(b[2])<<8 | uint16(b[3])),
		"infiniband.bth.destqp":    fmt.Sprintf("0x%06x", u32(b[4:])&0xffffff),
		"infiniband.bth.a":         fmt.Sprint(b[8] >> 7),
		"infiniband.bth.psn":       fmt.Sprint(u32(b[8:]) & 0xffffff),
		"infiniband.invariant.crc": fmt.Sprintf("0x%08x", u32(b[len(b)-4:])),
	}
	ext := b[12:]
	if op == 0x06 || op == 0x0a || op == 0x0b {
		m["infiniband.reth.va"] = fmt.Sprintf("0x%016x", uint64(u32(ext))<<32|uint64(u32(ext[4:])))
		m["infiniband.reth.r_key"] = fmt.Sprintf("0x%08x", u32(ext[8:]))
		m["infiniband.reth.dmalen"] = fmt.Sprint(u32(ext[12:]))
		ext = ext[16:]
	}
	if op == 0x03 || op == 0x05 || op == 0x09 || op == 0x0b {
		m["infiniband.immdt"] = fmt.Sprintf("%08x", u32(ext))
	}
	if op == 0x11 {
		m["infiniband.aeth.syndrome"] = fmt.Sprint(ext[0])
		m["infiniband.aeth.msn"] = fmt.Sprint(u32(ext) & 0xffffff)
	}
	return m
}

// TestTsharkDecodesIRNETH: IRN's recv_WQE_SN (irneth) follows the
// extension headers the opcode has, so on the opcodes where IRN adds
// nothing else (every SEND, WRITE Only with Immediate) Wireshark's
// InfiniBand dissector reads the BTH, RETH and ImmDt as nsc wrote them and
// the payload it shows starts with the irneth: a reserved zero byte and
// the recv_WQE_SN as written.
func TestTsharkDecodesIRNETH(t *testing.T) {
	var frames [][]byte
	var sns []uint32
	for i, op := range []uint8{rdma.SendFirst, rdma.SendMiddle, rdma.SendLast, rdma.SendLastImm, rdma.SendOnly, rdma.SendOnlyImm, rdma.WriteOnlyImm} {
		p := withRETH(write(qpn, op, ipsn+uint32(i), fill(64*i, byte(i))), regionBase, rkey, uint32(64*i))
		p.IRN, p.Imm, p.WQESN = true, 0x1000+uint32(i), 0xfffff0+uint32(i)*3 // past 2^24 - 1 too: masked to 24 bits
		frames, sns = append(frames, frame(p)), append(sns, p.WQESN&0xffffff)
	}
	fields := []string{"infiniband.bth.opcode", "infiniband.bth.psn", "infiniband.reth.va", "infiniband.reth.r_key",
		"infiniband.reth.dmalen", "infiniband.immdt", "infiniband.invariant.crc"}
	for i, row := range asWritten(t, frames, fields, "data.data") {
		if payload := strings.ReplaceAll(row[len(fields)], ":", ""); !strings.HasPrefix(payload, fmt.Sprintf("00%06x", sns[i])) {
			t.Errorf("frame %d (opcode %s): the payload tshark shows, %.16s…, does not start with the irneth 00%06x", i, row[0], payload, sns[i])
		}
	}
}
