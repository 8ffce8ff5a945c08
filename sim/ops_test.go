package sim_test

import (
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
)

// An LB-like rewrite: change addresses, port and TTL, drop the LB header,
// fix the lengths, all with incremental checksum updates only.
const rewriteModel = `
include "lib/inet.nsc"
include "lib/ejfat.nsc"
next udp.dport { 0x4c42 -> lb }
lpg R {
  node Q { op input parse ethernet  port out -> IsLB }
  node IsLB { op test valid(lb)  port true -> Rewrite  port false -> Other }
  node Other { op drop "not LB" }
  node Rewrite {
    op set { ipv4.dst = 10.1.2.3  udp.dport = 0x4556  ipv4.ttl = ipv4.ttl - 1  ethernet.dst = 0x112233445566 } update ipv4, udp
    port out -> Pop
  }
  node Pop { op pop lb update udp  port out -> Lengths }
  node Lengths {
    op set { udp.length = udp.length - 16  ipv4.total_len = ipv4.total_len - 16 } update ipv4, udp
    port out -> Out
  }
  node Out { op emit }
}`

func lbFrame(t *testing.T, payload int, corruptUDP bool) []byte {
	ip := testutil.IPv4(layers.IPProtocolUDP)
	u := &layers.UDP{SrcPort: 1234, DstPort: 0x4c42}
	u.SetNetworkLayerForChecksum(ip)
	lb := make([]byte, 16+payload)
	copy(lb, []byte{'L', 'B', 2, 1, 0, 0, 0x12, 0x34})
	binary.BigEndian.PutUint64(lb[8:], 0x0102030405060708)
	for i := 16; i < len(lb); i++ {
		lb[i] = byte(i * 13)
	}
	f := testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload(lb))
	if corruptUDP {
		f[14+20+6] ^= 0x10
	}
	return f
}

// recompute returns the checksums gopacket computes for the frame's IPv4
// and UDP headers from scratch.
func recompute(t *testing.T, frame []byte) (ipSum, udpSum uint16) {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	u := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	u.SetNetworkLayerForChecksum(ip)
	again := testutil.Serialize(t, p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet), ip, u, gopacket.Payload(u.Payload))
	return binary.BigEndian.Uint16(again[14+10:]), binary.BigEndian.Uint16(again[14+20+6:])
}

func TestIncrementalRewrite(t *testing.T) {
	m := machine(t, rewriteModel, "R")
	for _, n := range []int{0, 1, 7, 100} {
		in := lbFrame(t, n, false)
		out := outcome(m, in)["Out"]
		if len(out) != len(in)-16 {
			t.Fatalf("payload %d: out %d bytes, want %d", n, len(out), len(in)-16)
		}
		p := gopacket.NewPacket(out, layers.LayerTypeEthernet, gopacket.Default)
		ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		u := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if ip.DstIP.String() != "10.1.2.3" || u.DstPort != 0x4556 || ip.TTL != 63 || int(u.Length) != 8+n {
			t.Errorf("payload %d: fields %v %v %v %v", n, ip.DstIP, u.DstPort, ip.TTL, u.Length)
		}
		ipSum, udpSum := recompute(t, out)
		if ip.Checksum != ipSum || u.Checksum != udpSum {
			t.Errorf("payload %d: checksums %#04x %#04x, full recomputation gives %#04x %#04x", n, ip.Checksum, u.Checksum, ipSum, udpSum)
		}
	}
}

// An incremental update keeps a wrong checksum wrong by the same amount
// (RFC 1624): the receiver still sees the corruption.
func TestIncrementalKeepsErrors(t *testing.T) {
	m := machine(t, rewriteModel, "R")
	in := lbFrame(t, 20, true)
	out := outcome(m, in)["Out"]
	_, udpSum := recompute(t, out)
	got := binary.BigEndian.Uint16(out[14+20+6:])
	if got == udpSum {
		t.Fatalf("corrupted checksum became valid")
	}
	// The checksum field carries the same one's-complement offset from
	// the correct value before and after the rewrite.
	inCorrect, inGot := recomputeUDPOf(t, in)
	if off, want := onesSub(got, udpSum), onesSub(inGot, inCorrect); off != want {
		t.Errorf("checksum %#04x is %#04x off the correct %#04x; the input was %#04x off", got, off, udpSum, want)
	}
}

func recomputeUDPOf(t *testing.T, frame []byte) (correct, got uint16) {
	_, correct = recompute(t, frame)
	return correct, binary.BigEndian.Uint16(frame[14+20+6:])
}

// onesSub is a-b in 16-bit one's-complement arithmetic, with -0 read as 0.
func onesSub(a, b uint16) uint16 {
	s := uint32(a) + uint32(^b)
	s = s&0xffff + s>>16
	if s == 0xffff {
		return 0
	}
	return uint16(s)
}

// Checksum verification of a truncated or inconsistent packet is "invalid",
// never a panic.
func TestChecksumOnBadLengths(t *testing.T) {
	mod := testutil.Model(t, "lib/inet.nsc")
	udp, _ := mod.Schema.Header("udp")
	eth, _ := mod.Schema.Header("ethernet")
	good := lbFrame(t, 10, false)
	p := packet.NewPacket(mod.Schema)
	for n := 0; n <= len(good); n++ {
		p.Reset(good[:n])
		p.Parse(eth.ID)
		valid, _ := p.VerifyChecksum(udp.ID)
		if valid != (n == len(good)) {
			t.Errorf("truncated to %d: valid=%v", n, valid)
		}
	}
}
