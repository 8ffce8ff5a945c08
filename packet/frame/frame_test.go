package frame

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

var (
	srcMAC = net.HardwareAddr{2, 0, 0, 0, 0, 1}
	dstMAC = net.HardwareAddr{0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
)

// datagrams are the frames the tests build: IPv4 with and without the
// UDP checksum, IPv4-mapped, IPv6 with and without it; payloads of odd and
// even lengths.
func datagrams() []Datagram {
	return []Datagram{
		{DstMAC: dstMAC, SrcMAC: srcMAC, Src: netip.MustParseAddrPort("10.0.0.2:5000"), Dst: netip.MustParseAddrPort("10.0.0.1:19522"), TTL: 64, DontFragment: true, Checksum: true},
		{DstMAC: dstMAC, Src: netip.MustParseAddrPort("127.0.0.1:40000"), Dst: netip.MustParseAddrPort("127.0.0.9:1"), TTL: 64},
		{Src: netip.MustParseAddrPort("[::ffff:10.1.2.3]:7"), Dst: netip.MustParseAddrPort("[::ffff:10.1.2.4]:8"), TTL: 1, Checksum: true},
		{DstMAC: dstMAC, SrcMAC: srcMAC, Src: netip.MustParseAddrPort("[fd00::2]:5000"), Dst: netip.MustParseAddrPort("[fd00::1]:19522"), TTL: 64},
		{Src: netip.MustParseAddrPort("[fd00::3]:49152"), Dst: netip.MustParseAddrPort("[fd00::4]:4791"), TTL: 64, ZeroIPv6Checksum: true},
	}
}

// TestBuildAgainstGopacket: every field of a built frame as gopacket
// decodes it, and gopacket's own serialization of the decoded layers,
// lengths and checksums computed (the checksum left 0 where Build leaves
// it so), is byte-equal to the frame; ParseUDP finds the datagram.
func TestBuildAgainstGopacket(t *testing.T) {
	for _, d := range datagrams() {
		for _, n := range []int{0, 1, 1000, 8999} {
			payload := make([]byte, n)
			for i := range payload {
				payload[i] = byte(i*7 + n)
			}
			f := make([]byte, d.HeaderLen()+n)
			copy(f[d.HeaderLen():], payload)
			d.Build(f)
			pkt := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
			eth, _ := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
			udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
			if eth == nil || udp == nil || pkt.ErrorLayer() != nil {
				t.Fatalf("%v n=%d: gopacket: %v", d.Src, n, pkt)
			}
			src, dst := pkt.NetworkLayer().NetworkFlow().Endpoints()
			s, _ := netip.AddrFromSlice(src.Raw())
			ds, _ := netip.AddrFromSlice(dst.Raw())
			if !bytes.Equal(eth.SrcMAC, pad(d.SrcMAC)) || !bytes.Equal(eth.DstMAC, pad(d.DstMAC)) || s.Unmap() != d.Src.Addr().Unmap() ||
				ds.Unmap() != d.Dst.Addr().Unmap() || uint16(udp.SrcPort) != d.Src.Port() || uint16(udp.DstPort) != d.Dst.Port() ||
				!bytes.Equal(udp.Payload, payload) {
				t.Errorf("%v n=%d: gopacket decodes %v", d.Src, n, pkt)
			}
			var net gopacket.SerializableLayer
			if ip4, ok := pkt.NetworkLayer().(*layers.IPv4); ok {
				if d.DontFragment != (ip4.Flags == layers.IPv4DontFragment) || ip4.TTL != d.TTL {
					t.Errorf("%v: flags %v, TTL %d", d.Src, ip4.Flags, ip4.TTL)
				}
				net = ip4
				udp.SetNetworkLayerForChecksum(ip4)
			} else {
				ip6 := pkt.NetworkLayer().(*layers.IPv6)
				net = ip6
				udp.SetNetworkLayerForChecksum(ip6)
			}
			buf := gopacket.NewSerializeBuffer()
			if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, net, udp, gopacket.Payload(payload)); err != nil {
				t.Fatal(err)
			}
			want := buf.Bytes()
			if len(want) > len(f) && !bytes.Equal(want[len(f):], make([]byte, len(want)-len(f))) {
				t.Fatalf("gopacket pads with non-zero bytes: %x", want)
			}
			want = want[:min(len(want), len(f))] // gopacket pads to Ethernet's 60 bytes
			if d.ipv4() && !d.Checksum {
				UDP(want[EthernetLen+IPv4MinLen:]).SetChecksum(0)
			}
			if !d.ipv4() && d.ZeroIPv6Checksum {
				UDP(want[EthernetLen+IPv6Len:]).SetChecksum(0)
			}
			if !bytes.Equal(f, want) {
				t.Errorf("%v n=%d: built\n%x\ngopacket\n%x", d.Src, n, f, want)
			}
			if u, src, dst := UDP(f[d.HeaderLen()-UDPLen:]), d.Src.Addr(), d.Dst.Addr(); u.Checksum() != 0 {
				if d.ipv4() {
					src, dst = src.Unmap(), dst.Unmap()
				}
				if !u.ChecksumValid(src, dst) {
					t.Errorf("%v n=%d: the checksum gopacket agrees with is not valid", d.Src, n)
				}
				u[len(u)-1] ^= 0x10
				if u.ChecksumValid(src, dst) {
					t.Errorf("%v n=%d: valid with a byte changed", d.Src, n)
				}
				u[len(u)-1] ^= 0x10
			}
			ps, pd, p, ok := ParseUDP(f)
			if !ok || ps != netip.AddrPortFrom(d.Src.Addr().Unmap(), d.Src.Port()) || pd != netip.AddrPortFrom(d.Dst.Addr().Unmap(), d.Dst.Port()) || !bytes.Equal(p, payload) {
				t.Errorf("%v n=%d: ParseUDP %v %v %d bytes %v", d.Src, n, ps, pd, len(p), ok)
			}
		}
	}
}

func pad(a net.HardwareAddr) []byte { return append(bytes.Clone(a), make([]byte, 6-len(a))...) }

// TestParseUDPRefuses: frames that hold no whole unfragmented datagram.
func TestParseUDPRefuses(t *testing.T) {
	d4, d6 := datagrams()[0], datagrams()[3]
	build := func(d Datagram, n int, change func(f []byte)) []byte {
		f := make([]byte, d.HeaderLen()+n)
		d.Build(f)
		change(f)
		return f
	}
	ip := func(f []byte) []byte { return f[EthernetLen:] }
	for name, f := range map[string][]byte{
		"empty":              {},
		"ARP":                build(d4, 10, func(f []byte) { Ethernet(f).SetType(0x0806) }),
		"IPv4 short":         build(d4, 10, func(f []byte) {})[:EthernetLen+19],
		"IPv4 IHL 4":         build(d4, 10, func(f []byte) { ip(f)[0] = 0x44 }),
		"IPv4 version 6":     build(d4, 10, func(f []byte) { ip(f)[0] = 0x65 }),
		"IPv4 more frags":    build(d4, 10, func(f []byte) { ip(f)[6] |= 0x20 }),
		"IPv4 frag offset":   build(d4, 10, func(f []byte) { ip(f)[7] = 1 }),
		"IPv4 TCP":           build(d4, 10, func(f []byte) { ip(f)[9] = 6 }),
		"IPv4 truncated":     build(d4, 10, func(f []byte) {})[:EthernetLen+IPv4MinLen+UDPLen+9],
		"IPv4 total < IHL":   build(d4, 10, func(f []byte) { IPv4(ip(f)).SetTotalLength(19) }),
		"UDP length long":    build(d4, 10, func(f []byte) { UDP(ip(f)[IPv4MinLen:]).SetLength(19) }),
		"UDP length short":   build(d4, 10, func(f []byte) { UDP(ip(f)[IPv4MinLen:]).SetLength(17) }),
		"UDP length < 8":     build(d4, 10, func(f []byte) { UDP(ip(f)[IPv4MinLen:]).SetLength(7) }),
		"IPv6 short":         build(d6, 10, func(f []byte) {})[:EthernetLen+39],
		"IPv6 hop-by-hop":    build(d6, 10, func(f []byte) { ip(f)[6] = 0 }),
		"IPv6 truncated":     build(d6, 10, func(f []byte) {})[:EthernetLen+IPv6Len+UDPLen+9],
		"IPv6 payload short": build(d6, 10, func(f []byte) { IPv6(ip(f)).SetPayloadLength(17) }),
		"IPv6 version 4":     build(d6, 10, func(f []byte) { ip(f)[0] = 0x40 }),
	} {
		if _, _, _, ok := ParseUDP(f); ok {
			t.Errorf("%s: ParseUDP found a datagram", name)
		}
	}
	// Ethernet padding past the IP length is not the datagram's.
	f := append(build(d4, 10, func([]byte) {}), 0, 0, 0, 0)
	if _, _, p, ok := ParseUDP(f); !ok || len(p) != 10 {
		t.Errorf("padded frame: %d bytes, %v", len(p), ok)
	}
}

// FuzzParseUDP: on any frame, what ParseUDP finds gopacket's full
// decoding finds too: a UDP datagram with the same addresses, ports and
// payload.
func FuzzParseUDP(f *testing.F) {
	for _, d := range datagrams() {
		b := make([]byte, d.HeaderLen()+30)
		d.Build(b)
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		src, dst, payload, ok := ParseUDP(b)
		if !ok {
			return
		}
		pkt := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.DecodeOptions{NoCopy: true})
		udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if udp == nil || !bytes.Equal(udp.Payload, payload) || uint16(udp.SrcPort) != src.Port() || uint16(udp.DstPort) != dst.Port() || int(udp.Length) != UDPLen+len(payload) {
			t.Fatalf("ParseUDP found a datagram %v → %v of %d bytes gopacket does not: %v", src, dst, len(payload), pkt)
		}
		s, d := pkt.NetworkLayer().NetworkFlow().Endpoints()
		sa, _ := netip.AddrFromSlice(s.Raw())
		da, _ := netip.AddrFromSlice(d.Raw())
		if sa.Unmap() != src.Addr() || da.Unmap() != dst.Addr() {
			t.Fatalf("addresses %v → %v, gopacket %v → %v", src, dst, sa, da)
		}
	})
}

// TestBuildNoAllocs: Build allocates nothing.
func TestBuildNoAllocs(t *testing.T) {
	for _, d := range datagrams() {
		f := make([]byte, d.HeaderLen()+100)
		if a := testing.AllocsPerRun(100, func() { d.Build(f) }); a != 0 {
			t.Errorf("%v: %v allocations", d.Src, a)
		}
	}
}

// TestChecksumMappedIPv6: over an IPv6 header with IPv4-mapped addresses
// the checksum is gopacket's, whichever family's pseudo-header sums them
// (their 0xffff words are one's-complement zero).
func TestChecksumMappedIPv6(t *testing.T) {
	src, dst := netip.MustParseAddr("::ffff:0.0.0.0"), netip.MustParseAddr("::ffff:10.1.2.4")
	ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	udp := &layers.UDP{SrcPort: 0xffff, DstPort: 53}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, udp, gopacket.Payload("abc")); err != nil {
		t.Fatal(err)
	}
	u := UDP(buf.Bytes())
	want := u.Checksum()
	if !u.ChecksumValid(src, dst) || !u.ChecksumValid(src.Unmap(), dst.Unmap()) {
		t.Errorf("gopacket's checksum %#04x: valid %v over IPv6, %v over IPv4", want, u.ChecksumValid(src, dst), u.ChecksumValid(src.Unmap(), dst.Unmap()))
	}
	u.SetChecksum(0)
	if got, got4 := u.CalculateChecksum(src, dst), u.CalculateChecksum(src.Unmap(), dst.Unmap()); got != want || got4 != want {
		t.Errorf("checksum %#04x (unmapped %#04x), gopacket %#04x", got, got4, want)
	}
}
