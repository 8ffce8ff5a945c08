package rdma_test

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/rdma"
	"github.com/dragonet-go/nsc/sim"
)

var (
	host  = rdma.Endpoint{MAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, IP: net.IPv4(10, 236, 0, 1), Port: 49152}
	naa   = rdma.Endpoint{MAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, IP: net.IPv4(10, 236, 0, 2), Port: 49153}
	host6 = rdma.Endpoint{MAC: host.MAC, IP: net.ParseIP("fd00:236::1"), Port: host.Port}
	naa6  = rdma.Endpoint{MAC: naa.MAC, IP: net.ParseIP("fd00:236::2"), Port: naa.Port}
)

// corpus is RoCEv2 frames of every opcode the responder handles, over
// IPv4 and IPv6, with random fields and payloads (fixed seed).
func corpus() [][]byte {
	rnd := rand.New(rand.NewPCG(26, 4791))
	ops := []uint8{rdma.SendFirst, rdma.SendMiddle, rdma.SendLast, rdma.SendLastImm, rdma.SendOnly, rdma.SendOnlyImm,
		rdma.WriteFirst, rdma.WriteMiddle, rdma.WriteLast, rdma.WriteLastImm, rdma.WriteOnly, rdma.WriteOnlyImm, rdma.Acknowledge}
	var frames [][]byte
	for i := range 3 * len(ops) {
		p := &rdma.Packet{Opcode: ops[i%len(ops)], SE: rnd.IntN(2) == 0, AckReq: rnd.IntN(2) == 0, PKey: rdma.DefaultPKey,
			Resv8a: uint8(rnd.IntN(2)) << 7, DQPN: rnd.Uint32() & 0xffffff, PSN: rnd.Uint32() & 0xffffff,
			VA: rnd.Uint64(), RKey: rnd.Uint32(), DMALen: rnd.Uint32N(1 << 20), Imm: rnd.Uint32(),
			Syndrome: uint8(rnd.IntN(256)), MSN: rnd.Uint32() & 0xffffff}
		p.Payload = make([]byte, 4*rnd.IntN(100))
		if p.Opcode == rdma.Acknowledge {
			p.Payload = nil // an ACK carries none
		}
		for j := range p.Payload {
			p.Payload[j] = byte(rnd.IntN(256))
		}
		src, dst := host, naa
		if i%3 == 2 {
			src, dst = host6, naa6
		}
		frames = append(frames, rdma.AppendFrame(nil, src, dst, p))
	}
	return frames
}

// scapyPython finds a python3 that has scapy's RoCE layer; outside CI the
// tests that need it skip without one.
func scapyPython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import scapy.contrib.roce").Run() == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("python3 with scapy is not installed; CI must install python3-scapy")
	}
	t.Skip("python3 with scapy is not installed")
	return ""
}

// The scapy side: "check PCAP" prints, per frame, the ICRC scapy computes
// (BTH.compute_icrc over IPv4; over IPv6, which that method leaves out,
// the same masking done by hand: traffic class, flow label, hop limit,
// UDP checksum, the BTH's FECN/BECN byte) and the ICRC the frame holds;
// "build PCAP SEED N" writes N frames scapy builds, its BTH adding the
// ICRC.
const scapyScript = `
import random, struct, sys, zlib
from scapy.all import rdpcap, wrpcap, Ether, IP, IPv6, UDP, Raw
from scapy.contrib.roce import BTH, AETH

def icrc6(pkt):
    ip6 = pkt[IPv6].copy()
    ip6.tc, ip6.fl, ip6.hlim = 0xff, 0xfffff, 0xff
    ip6[UDP].chksum = 0xffff
    b = bytearray(bytes(ip6))
    b[40 + 8 + 4] = 0xff
    return struct.pack('<I', zlib.crc32(b'\xff' * 8 + bytes(b[:-4])) & 0xffffffff)

if sys.argv[1] == 'check':
    for pkt in rdpcap(sys.argv[2]):
        got = pkt[BTH].compute_icrc(None) if IP in pkt else icrc6(pkt)
        print(got.hex(), bytes(pkt)[-4:].hex())
else:
    random.seed(int(sys.argv[3]))
    frames = []
    for i in range(int(sys.argv[4])):
        op = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x11][i % 13]
        ext = b''
        if op in (0x06, 0x0a, 0x0b):
            ext += random.randbytes(16)
        if op in (0x03, 0x05, 0x09, 0x0b):
            ext += random.randbytes(4)
        bth = BTH(opcode=op, solicited=random.getrandbits(1), pkey=0xffff, fecn=random.getrandbits(1),
                  becn=random.getrandbits(1), dqpn=random.getrandbits(24), ackreq=random.getrandbits(1),
                  psn=random.getrandbits(24))
        l4 = bth / (AETH(syndrome=random.getrandbits(8), msn=random.getrandbits(24)) if op == 0x11 else Raw(ext))
        l4 = l4 / Raw(random.randbytes(4 * random.randrange(0, 100)))
        ip = IP(src='10.236.0.1', dst='10.236.0.2', tos=random.getrandbits(8), ttl=random.randrange(1, 256))
        frames.append(Ether(src='02:00:00:00:00:01', dst='02:00:00:00:00:02') / ip / UDP(sport=random.randrange(49152, 65536), dport=4791) / l4)
    wrpcap(sys.argv[2], frames)
`

// scapy runs the script with args and returns its output.
func scapy(t *testing.T, args ...string) string {
	t.Helper()
	py := scapyPython(t)
	out, err := exec.Command(py, append([]string{"-c", scapyScript}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("scapy: %v\n%s", err, out)
	}
	return string(out)
}

// run runs frames through graph name of testdata/icrc.nsc in the
// interpreter and returns what leaves by a sink (nil for a dropped frame).
func run(t *testing.T, name string, frames [][]byte) ([][]byte, *sim.Machine) {
	t.Helper()
	src, err := os.ReadFile("testdata/icrc.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.ModelSource(t, string(src))
	g, ok := m.Graph(name)
	if !ok {
		t.Fatalf("no graph %s", name)
	}
	mach, _ := testutil.Interpreter(t, m, g, "")
	out := make([][]byte, len(frames))
	for i, f := range frames {
		mach.Run(bytes.Clone(f), func(_ *dataflow.Node, data []byte) { out[i] = bytes.Clone(data) })
	}
	return out, mach
}

// TestICRCScapyChecksNsc: the model's `checksum compute icrc bth` writes
// into frames with a zeroed ICRC the ICRC scapy computes for them, also
// into the IRN responder's crafted frames (a RETH in every WRITE packet).
func TestICRCScapyChecksNsc(t *testing.T) {
	frames := corpus()
	sc := irnScenarios()
	for _, name := range slices.Sorted(maps.Keys(sc)) {
		for _, s := range sc[name] {
			if name != "bad ICRC" || s.drop == "" { // not the broken one
				frames = append(frames, s.frame)
			}
		}
	}
	zeroed := make([][]byte, len(frames))
	for i, f := range frames {
		zeroed[i] = bytes.Clone(f)
		copy(zeroed[i][len(f)-4:], []byte{0, 0, 0, 0})
	}
	built, _ := run(t, "Compute", zeroed)
	pcap := writePcap(t, built)
	lines := strings.Split(strings.TrimSpace(scapy(t, "check", pcap)), "\n")
	if len(lines) != len(built) {
		t.Fatalf("scapy read %d frames, nsc wrote %d", len(lines), len(built))
	}
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) != 2 || f[0] != f[1] || f[1] == "00000000" {
			t.Errorf("frame %d: scapy's ICRC and nsc's: %s", i, l)
		}
		if !bytes.Equal(built[i], frames[i]) {
			t.Errorf("frame %d: the model's ICRC differs from rdma.AppendFrame's", i)
		}
	}
}

// TestICRCNscChecksScapy: the model's `checksum verify icrc bth` accepts
// every frame scapy builds, also with the fields the ICRC masks changed,
// and refuses it with any covered byte changed.
func TestICRCNscChecksScapy(t *testing.T) {
	pcap := filepath.Join(t.TempDir(), "scapy.pcap")
	scapy(t, "build", pcap, "26", "52")
	raw, err := os.ReadFile(pcap)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var frames, masked, broken [][]byte
	for {
		f, _, err := r.ReadPacketData()
		if err != nil {
			break
		}
		frames = append(frames, f)
		m := bytes.Clone(f)
		m[14+1] ^= 0xfc    // IPv4 TOS
		m[14+8]--          // TTL
		m[14+10] ^= 0x55   // header checksum
		m[14+20+6] ^= 0x1  // UDP checksum
		m[14+28+4] ^= 0xc0 // FECN, BECN
		masked = append(masked, m)
		b := bytes.Clone(f)
		b[14+28+11] ^= 1 // the PSN's low bit
		broken = append(broken, b)
	}
	if len(frames) != 52 {
		t.Fatalf("read %d frames of scapy's 52", len(frames))
	}
	for _, c := range []struct {
		name   string
		frames [][]byte
		good   bool
	}{{"scapy's", frames, true}, {"masked fields changed", masked, true}, {"PSN changed", broken, false}} {
		out, mach := run(t, "Verify", c.frames)
		for i := range out {
			if (out[i] != nil) != c.good {
				t.Errorf("%s frame %d: ICRC good %v, want %v (drops %v)", c.name, i, out[i] != nil, c.good, mach.Counters().Drops)
			}
		}
	}
}

// writePcap writes frames to a pcap in a temporary directory.
func writePcap(t *testing.T, frames [][]byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := ejfat.WritePcap(&buf, frames); err != nil {
		t.Fatal(err)
	}
	pcap := filepath.Join(t.TempDir(), "nsc.pcap")
	if err := os.WriteFile(pcap, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return pcap
}
