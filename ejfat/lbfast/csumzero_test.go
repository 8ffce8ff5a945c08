package lbfast_test

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/sim"
)

// TestComputedZeroChecksum: lb-2026 strips the LB header and patches the
// UDP checksum; when the patch computes zero it sends 0xffff (RFC 768).
// The frame is the spec's example with a word appended to its payload,
// chosen so that the stripped datagram's checksum computes to zero. The
// oracle is the interpreter on the LPG alone, not on an embedding: the
// embedder once folded that branch away as never taken, and the fast
// path generated from the embedding sent 0x0000.
func TestComputedZeroChecksum(t *testing.T) {
	m, g, err := ejfat.LPG("lb-2026")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(tablesFile["lb-2026"])
	if err != nil {
		t.Fatal(err)
	}
	ts, err := ejfat.Tables(m, tablesFile["lb-2026"], strings.NewReader(string(script)))
	if err != nil {
		t.Fatal(err)
	}
	alone, err := sim.New(g, ts)
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := hex.DecodeString(v2Forward)
	p := gopacket.NewPacket(ex, layers.LayerTypeEthernet, gopacket.Default)
	eth, ip, udp := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet), p.Layer(layers.LayerTypeIPv4).(*layers.IPv4), p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	frame := func(word uint16) []byte {
		body := binary.BigEndian.AppendUint16(append([]byte(nil), udp.Payload...), word)
		udp.SetNetworkLayerForChecksum(ip)
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(body)); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	// The stripped datagram's checksum field with word 0 is the complement
	// of its sum; adding that word makes the sum all ones: a computed zero.
	out := difftest.Interp(alone, frame(0))
	if out.Where != "sink TxQueue" { // the LPG's Tx exit; TxWire on HostRaw
		t.Fatalf("the example frame with word 0: %s", out.Where)
	}
	b, _ := hex.DecodeString(out.Data)
	c0 := binary.BigEndian.Uint16(b[14+20+6:])
	f := frame(c0)
	want := difftest.Interp(alone, f)
	b, _ = hex.DecodeString(want.Data)
	if want.Where != "sink TxQueue" || binary.BigEndian.Uint16(b[14+20+6:]) != 0xffff {
		t.Fatalf("the LPG alone: %s %s, want the stripped frame with checksum ffff", want.Where, want.Data)
	}
	pl, embedded := pair(t, "lb-2026")
	var buf []byte
	for name, got := range map[string]difftest.Outcome{"generated Go": difftest.Fast(pl, f, &buf), "interpreter on the embedding": difftest.Interp(embedded, f)} {
		if got.Where != "sink TxWire" || got.Data != want.Data {
			t.Errorf("%s: %+v\nwant %+v", name, got, want)
		}
	}
}
