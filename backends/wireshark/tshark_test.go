package wireshark_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/backends/wireshark"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/lang"
)

// tsharkPath finds tshark; outside CI the tests that need it skip.
func tsharkPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tshark is not installed; CI must install it")
		}
		t.Skip("tshark is not installed")
	}
	return p
}

// dissect writes the frames to a pcap and the model's dissector to a file,
// runs tshark over them and returns, per frame, each field's values
// (comma-separated occurrences). It fails on anything tshark prints on
// stderr and on any Lua error in the dissection.
func dissect(t *testing.T, m *lang.Model, opt wireshark.Options, frames [][]byte, fields []string, tsharkArgs ...string) []map[string]string {
	t.Helper()
	var buf bytes.Buffer
	if err := ejfat.WritePcap(&buf, frames); err != nil {
		t.Fatal(err)
	}
	return dissectPcap(t, m, opt, buf.Bytes(), len(frames), fields, tsharkArgs...)
}

// dissectPcap is dissect over a pcap of n frames.
func dissectPcap(t *testing.T, m *lang.Model, opt wireshark.Options, pcapData []byte, n int, fields []string, tsharkArgs ...string) []map[string]string {
	t.Helper()
	tshark := tsharkPath(t)
	dir := t.TempDir()
	src, err := wireshark.Generate(m, opt)
	if err != nil {
		t.Fatal(err)
	}
	lua := filepath.Join(dir, "d.lua")
	pcap := filepath.Join(dir, "in.pcap")
	if err := os.WriteFile(pcap, pcapData, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lua, src, 0o644); err != nil {
		t.Fatal(err)
	}
	all := append([]string{"frame.number", "_ws.lua.error", "_ws.malformed"}, fields...)
	args := append([]string{"-X", "lua_script:" + lua, "-r", pcap, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"}, tsharkArgs...)
	for _, f := range all {
		args = append(args, "-e", f)
	}
	cmd := exec.Command(tshark, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if l != "" && !strings.HasPrefix(l, "Running as user") {
			t.Fatalf("tshark stderr: %s", stderr.String())
		}
	}
	var rows []map[string]string
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		cols := strings.Split(l, "\t")
		row := map[string]string{}
		for i, c := range cols {
			if c != "" {
				row[all[i]] = normal(all[i], c)
			}
		}
		if row["_ws.lua.error"] != "" || strings.Contains(l, "Lua Error") {
			t.Fatalf("frame %s: Lua error: %s", row["frame.number"], l)
		}
		rows = append(rows, row)
	}
	if len(rows) != n {
		t.Fatalf("tshark shows %d frames, want %d", len(rows), n)
	}
	return rows
}

// normal evens out how tshark versions print booleans (1 or True) and
// expert fields (1 or their message): a mark is "1".
func normal(field, v string) string {
	switch {
	case strings.HasSuffix(field, ".nsc.malformed") || field == "_ws.malformed":
		return "1"
	case v == "True":
		return "1"
	case v == "False":
		return "0"
	}
	return v
}

// udpPayload is what gopacket finds after UDP, leaving out ICMP errors
// (Wireshark dissects the datagram they quote; gopacket does not) and IPv4
// headers of another version (Wireshark takes version 6 for IPv6; gopacket
// and the LB models do not).
func udpPayload(frame []byte) (dport uint16, payload []byte, ok bool) {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	if p.Layer(layers.LayerTypeICMPv4) != nil || p.Layer(layers.LayerTypeICMPv6) != nil {
		return 0, nil, false
	}
	if ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ip != nil && ip.Version != 4 {
		return 0, nil, false
	}
	u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if u == nil {
		return 0, nil, false
	}
	payload = u.Payload
	if n := int(u.Length) - 8; n >= 0 && n < len(payload) {
		payload = payload[:n]
	}
	return uint16(u.DstPort), payload, true
}

// lbFields are the fields of the generated LB headers, by version.
var lbFields = map[string][]string{
	"lb-2021": {"lbv1.L", "lbv1.B", "lbv1.Version", "lbv1.Protocol", "lbv1.Tick", "lbv1.nsc.malformed"},
	"lb-2025": {"lb_common.magic", "lb_common.version", "lb_common.proto", "lb_common.nsc.malformed",
		"lb_v2.rsvd", "lb_v2.entropy", "lb_v2.tick", "lb_v2.nsc.malformed",
		"lb_v3.slot_select", "lb_v3.port_select", "lb_v3.tick", "lb_v3.nsc.malformed"},
}

// lbWant is what the LB of a version reads of a frame, from gopacket and
// the LB layer (ejfat.LB): the 2021 LB takes UDP port 0x4c42 and reads a
// 12-byte v1 header whatever its version; the 2025 and 2026 LBs take ports
// 0x4000..0x7fff, want the magic and version 2 or 3.
func lbWant(version string, frame []byte) map[string]string {
	dport, p, ok := udpPayload(frame)
	want := map[string]string{}
	if !ok || len(p) == 0 {
		return want
	}
	var lb ejfat.LB
	lbErr := lb.DecodeFromBytes(p, gopacket.NilDecodeFeedback)
	u := func(v any) string { return fmt.Sprint(v) }
	if version == "lb-2021" {
		if dport != ejfat.LBPort {
			return want
		}
		if len(p) < ejfat.LBv1Len {
			want["lbv1.nsc.malformed"] = "1"
			return want
		}
		tick := binary.BigEndian.Uint64(p[4:]) // the v1 layout, whatever the version
		if lbErr == nil && lb.Version == 1 {
			tick = lb.Tick
		}
		want["lbv1.L"], want["lbv1.B"] = u(lb.Magic>>8), u(lb.Magic&0xff)
		want["lbv1.Version"], want["lbv1.Protocol"], want["lbv1.Tick"] = u(lb.Version), u(lb.Protocol), u(tick)
		return want
	}
	if dport&0xc000 != 0x4000 {
		return want
	}
	if len(p) < 4 {
		want["lb_common.nsc.malformed"] = "1"
		return want
	}
	want["lb_common.magic"], want["lb_common.version"], want["lb_common.proto"] = u(lb.Magic), u(lb.Version), u(lb.Protocol)
	if lb.Magic != ejfat.LBMagic || (lb.Version != 2 && lb.Version != 3) {
		want["lb_common.nsc.malformed"] = "1"
		return want
	}
	v := fmt.Sprintf("lb_v%d", lb.Version)
	if len(p) < ejfat.LBLen {
		want[v+".nsc.malformed"] = "1"
		return want
	}
	if lb.Version == 2 {
		want["lb_v2.rsvd"], want["lb_v2.entropy"] = u(lb.Reserved), u(lb.Entropy)
	} else {
		want["lb_v3.slot_select"], want["lb_v3.port_select"] = u(lb.SlotSelect), u(lb.PortSelect)
	}
	want[v+".tick"] = u(lb.Tick)
	return want
}

// Every LB version's generated dissector, over seed 000's frames and the
// LB corpus (every LB version's headers, bad magics and versions, ports
// in and out of range, every truncation of a few good frames), shows what
// gopacket and the LB layer read, and marks malformed what the model's
// parser rejects.
func TestLBCorpus(t *testing.T) {
	frames, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range ejfat.Versions {
		t.Run(version, func(t *testing.T) {
			m, err := ejfat.Model(version)
			if err != nil {
				t.Fatal(err)
			}
			oracle := version
			if version == "lb-2026" { // the same parser as lb-2025
				oracle = "lb-2025"
			}
			fields := lbFields[oracle]
			rows := dissect(t, m, wireshark.Options{}, frames, fields)
			compared, malformed := 0, 0
			for i, row := range rows {
				want := lbWant(oracle, frames[i])
				for _, f := range fields {
					if row[f] != want[f] {
						t.Errorf("frame %d: %s = %q, want %q", i+1, f, row[f], want[f])
					}
					if want[f] != "" {
						compared++
					}
				}
				mal := false
				for f := range want {
					mal = mal || strings.HasSuffix(f, ".nsc.malformed")
				}
				if mal {
					malformed++
					if row["_ws.malformed"] == "" {
						t.Errorf("frame %d: not shown as malformed", i+1)
					}
				}
			}
			t.Logf("%d frames, %d field values compared, %d malformed", len(rows), compared, malformed)
			if compared < 500 || malformed < 10 {
				t.Errorf("compared %d values and %d malformed headers: the corpus no longer exercises the dissector", compared, malformed)
			}
		})
	}
}

// A frame the capture cut short (snaplen) inside a header is not
// malformed; the same bytes as the whole packet are.
func TestSnaplen(t *testing.T) {
	frames, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	good := frames[22] // the corpus's first v2 frame over IPv4
	m, err := ejfat.Model("lb-2025")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	cuts := []int{42 + 2, 42 + 4, 42 + 10} // in lb_common, after it, in lb_v2
	for _, whole := range []bool{false, true} {
		for _, n := range cuts {
			length := len(good)
			if whole {
				length = n
			}
			if err := w.WritePacket(gopacket.CaptureInfo{CaptureLength: n, Length: length}, good[:n]); err != nil {
				t.Fatal(err)
			}
		}
	}
	fields := []string{"lb_common.magic", "lb_common.nsc.malformed", "lb_v2.nsc.malformed"}
	rows := dissectPcap(t, m, wireshark.Options{}, buf.Bytes(), 2*len(cuts), fields)
	want := []map[string]string{
		{}, {"lb_common.magic": "19522"}, {"lb_common.magic": "19522"}, // cut by the capture
		{"lb_common.nsc.malformed": "1", "_ws.malformed": "1"},
		{"lb_common.magic": "19522", "lb_v2.nsc.malformed": "1", "_ws.malformed": "1"},
		{"lb_common.magic": "19522", "lb_v2.nsc.malformed": "1", "_ws.malformed": "1"},
	}
	for i, row := range rows {
		for _, f := range append(fields, "_ws.malformed") {
			if row[f] != want[i][f] {
				t.Errorf("frame %d: %s = %q, want %q", i+1, f, row[f], want[i][f])
			}
		}
	}
}
