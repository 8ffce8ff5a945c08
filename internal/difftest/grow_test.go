package difftest

import (
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// TestGrow: a UDP datagram over IPv4 and over IPv6 (behind a VLAN tag)
// grown to 9,018 bytes decodes with gopacket, an independent decoder, as
// the same datagram with a longer payload whose checksums verify; a frame
// that is not IP is only padded.
func TestGrow(t *testing.T) {
	payload := gopacket.Payload("some payload")
	eth := &layers.Ethernet{SrcMAC: []byte{0, 1, 2, 3, 4, 5}, DstMAC: []byte{0, 6, 7, 8, 9, 10}, EthernetType: layers.EthernetTypeDot1Q}
	vlan := &layers.Dot1Q{VLANIdentifier: 7}
	ip4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: []byte{10, 0, 0, 1}, DstIP: []byte{10, 0, 0, 2}}
	ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: make([]byte, 16), DstIP: append(make([]byte, 15), 1)}
	for _, ip := range []gopacket.NetworkLayer{ip4, ip6} {
		udp := &layers.UDP{SrcPort: 1, DstPort: 19522}
		udp.SetNetworkLayerForChecksum(ip)
		vlan.Type = layers.EthernetTypeIPv4
		if ip == ip6 {
			vlan.Type = layers.EthernetTypeIPv6
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, vlan, ip.(gopacket.SerializableLayer), udp, payload); err != nil {
			t.Fatal(err)
		}
		f := Grow(buf.Bytes(), 9018)
		if len(f) != 9018 {
			t.Fatalf("%d bytes, want 9018", len(f))
		}
		p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
		if p.ErrorLayer() != nil {
			t.Fatalf("%v: %v", ip.LayerType(), p.ErrorLayer().Error())
		}
		u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		hl := 20
		if ip == ip6 {
			hl = 40
		}
		if u == nil || int(u.Length) != 9018-18-hl || string(u.Payload[:len(payload)]) != string(payload) {
			t.Fatalf("%v: not the grown datagram", ip.LayerType())
		}
		// gopacket recomputes the checksum: it must equal the one Grow wrote.
		want := u.Checksum
		udp2 := *u
		udp2.SetNetworkLayerForChecksum(p.NetworkLayer())
		out := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(out, gopacket.SerializeOptions{ComputeChecksums: true}, &udp2, gopacket.Payload(u.Payload)); err != nil {
			t.Fatal(err)
		}
		if got := uint16(out.Bytes()[6])<<8 | uint16(out.Bytes()[7]); got != want {
			t.Errorf("%v: UDP checksum %#x, gopacket computes %#x", ip.LayerType(), want, got)
		}
		if v4, ok := p.NetworkLayer().(*layers.IPv4); ok && int(v4.Length) != 9018-18 {
			t.Errorf("IPv4 total length %d", v4.Length)
		}
	}
	if f := Grow([]byte{1, 2, 3}, 60); len(f) != 60 || f[0] != 1 || f[2] != 3 {
		t.Errorf("padded %x", f)
	}
}
