package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/reasm"
)

var (
	mac1 = net.HardwareAddr{2, 0, 0, 0, 0, 1}
	mac2 = net.HardwareAddr{2, 0, 0, 0, 0, 2}
)

func configs() map[string]Config {
	v4 := Config{Src: netip.MustParseAddrPort("10.0.0.1:40000"), Dst: netip.MustParseAddrPort("10.0.0.2:19522"),
		Frames: true, SrcMAC: mac1, DstMAC: mac2}
	v6 := v4
	v6.Src, v6.Dst = netip.MustParseAddrPort("[fd00::1]:40000"), netip.MustParseAddrPort("[fd00::2]:19522")
	v4v3, v6v3 := v4, v6
	v4v3.LBVersion, v6v3.LBVersion = 3, 3
	small := v4
	small.MTU = 1500
	return map[string]Config{"ipv4 lbv2": v4, "ipv6 lbv2": v6, "ipv4 lbv3": v4v3, "ipv6 lbv3": v6v3, "ipv4 mtu 1500": small}
}

// cutAll writes every segment of an event and returns copies.
func cutAll(t *testing.T, s *Segmenter, event []byte, number uint64, dataID uint16) [][]byte {
	t.Helper()
	if err := s.Start(event, number, dataID); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, s.MaxLen())
	var out [][]byte
	for {
		n, err := s.Next(buf)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(buf[:n]))
	}
}

// TestFramesDecode decodes every frame with gopacket: each field as spec
// §2-3 says, headers byte-equal to gopacket's own serialization with
// lengths and checksums computed, payloads concatenating to the event.
func TestFramesDecode(t *testing.T) {
	for name, cfg := range configs() {
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ipLen := IPv4Len
		if cfg.Src.Addr().Is6() {
			ipLen = IPv6Len
		}
		if want := mtuOf(cfg) - ipLen - 8 - 16 - 20; s.PayloadSize() != want {
			t.Errorf("%s: payload size %d, want %d", name, s.PayloadSize(), want)
		}
		for _, n := range []int{1, s.PayloadSize() - 1, s.PayloadSize(), s.PayloadSize() + 1, 5*s.PayloadSize() + 17} {
			event := make([]byte, n)
			Fill(event, 77, 5)
			frames := cutAll(t, s, event, 77, 5)
			if want := (n + s.PayloadSize() - 1) / s.PayloadSize(); len(frames) != want {
				t.Errorf("%s n=%d: %d segments, want %d", name, n, len(frames), want)
			}
			var got []byte
			for i, f := range frames {
				payload := checkFrame(t, cfg, f, uint32(len(got)), uint32(n))
				if i < len(frames)-1 && len(payload) != s.PayloadSize() {
					t.Errorf("%s n=%d: segment %d of %d holds %d bytes", name, n, i, len(frames), len(payload))
				}
				got = append(got, payload...)
			}
			if !bytes.Equal(got, event) {
				t.Errorf("%s n=%d: payloads do not concatenate to the event", name, n)
			}
		}
	}
}

// mtuOf is cfg's MTU, 9000 by default.
func mtuOf(cfg Config) int {
	if cfg.MTU == 0 {
		return 9000
	}
	return cfg.MTU
}

// checkFrame decodes one frame and checks its headers; it returns the
// payload.
func checkFrame(t *testing.T, cfg Config, f []byte, off, length uint32) []byte {
	t.Helper()
	p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if !ok || p.ErrorLayer() != nil {
		t.Fatalf("not a UDP frame: %v", p)
	}
	eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	var ipLayer gopacket.SerializableLayer
	var src, dst net.IP
	if ip4, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		ipLayer, src, dst = ip4, ip4.SrcIP, ip4.DstIP
		if ip4.TTL != 64 || ip4.Flags != layers.IPv4DontFragment || int(ip4.Length) != len(f)-EthLen {
			t.Errorf("IPv4 header %+v", ip4)
		}
		_ = udp.SetNetworkLayerForChecksum(ip4)
	} else {
		ip6 := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		ipLayer, src, dst = ip6, ip6.SrcIP, ip6.DstIP
		if ip6.HopLimit != 64 || int(ip6.Length) != len(f)-EthLen-IPv6Len {
			t.Errorf("IPv6 header %+v", ip6)
		}
		_ = udp.SetNetworkLayerForChecksum(ip6)
	}
	if !bytes.Equal(eth.SrcMAC, cfg.SrcMAC) || !bytes.Equal(eth.DstMAC, cfg.DstMAC) ||
		!src.Equal(cfg.Src.Addr().AsSlice()) || !dst.Equal(cfg.Dst.Addr().AsSlice()) ||
		uint16(udp.SrcPort) != cfg.Src.Port() || uint16(udp.DstPort) != cfg.Dst.Port() {
		t.Errorf("addresses: %v %v %v %v %v", eth.SrcMAC, eth.DstMAC, src, dst, udp)
	}
	if len(f)-EthLen > mtuOf(cfg) {
		t.Errorf("frame of %d bytes exceeds the MTU", len(f))
	}
	// gopacket's serialization of the decoded layers, lengths and checksums
	// computed, is the same frame.
	sb := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(sb, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ipLayer, udp, gopacket.Payload(udp.Payload))
	if err != nil || !bytes.Equal(sb.Bytes(), f) {
		t.Errorf("gopacket serializes the decoded frame differently (%v)", err)
	}

	q := gopacket.NewPacket(udp.Payload, ejfat.LayerTypeLB, gopacket.Default)
	lb, ok := q.Layer(ejfat.LayerTypeLB).(*ejfat.LB)
	if !ok {
		t.Fatalf("no LB header: %v", q)
	}
	number, dataID := uint64(77), uint16(5)
	sel := uint16(mix(number ^ uint64(dataID)<<48))
	lbv := cfg.LBVersion
	if lbv == 0 {
		lbv = 2
	}
	switch {
	case lb.Magic != ejfat.LBMagic || lb.Version != lbv || lb.Protocol != 1 || lb.Tick != number:
		t.Errorf("LB header %+v", lb)
	case lbv == 2 && (lb.Reserved != 0 || lb.Entropy != sel):
		t.Errorf("LB v2 reserved %d entropy %d, want 0, %d", lb.Reserved, lb.Entropy, sel)
	case lbv == 3 && (lb.SlotSelect != uint16(number) || lb.PortSelect != sel):
		t.Errorf("LB v3 slot %d port %d, want %d, %d", lb.SlotSelect, lb.PortSelect, uint16(number), sel)
	}
	r := gopacket.NewPacket(lb.Payload, ejfat.LayerTypeRE, gopacket.Default)
	re, ok := r.Layer(ejfat.LayerTypeRE).(*ejfat.REHeader)
	if !ok || !ejfat.RE(lb.Payload).Valid() {
		t.Fatalf("no valid RE header: %v", r)
	}
	if re.Version != 1 || re.Reserved != 0 || re.DataID != dataID || re.Offset != off || re.Length != length || re.EventNumber != number {
		t.Errorf("RE header %+v, want offset %d length %d", re, off, length)
	}
	return re.Payload
}

// TestDatagramsReassemble: UDP payloads, the LB header stripped as the LB
// does, reassemble into the event, whose content Verify accepts.
func TestDatagramsReassemble(t *testing.T) {
	cfg := configs()["ipv6 lbv3"]
	cfg.Frames = false
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reasm.New(reasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	event := make([]byte, 100000)
	Fill(event, 9, 2)
	for _, d := range cutAll(t, s, event, 9, 2) {
		r.Datagram(cfg.Src.Addr(), d[ejfat.LBLen:])
	}
	ev, ok := r.TryDequeue()
	if !ok || ev.Number != 9 || ev.DataID != 2 || ev.Src != cfg.Src.Addr() || Verify(ev.Data, 9, 2) != -1 {
		t.Fatalf("reassembled %v, %v", ev, ok)
	}
}

// TestContentStream: Fill and Verify's stream is splitmix64's output of
// (seed + word index)·γ, little-endian, whatever the length and offset —
// written here word by word as the definition says, for senders and
// receivers of different versions to agree.
func TestContentStream(t *testing.T) {
	const gamma = 0x9e3779b97f4a7c15
	for _, n := range []int{0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 1000, 4099} {
		for _, number := range []uint64{0, 1, 1 << 40} {
			s := number*gamma ^ 5<<48 ^ 0x5ca1ab1e
			want := make([]byte, (n+7)/8*8)
			for w := range uint64(len(want) / 8) {
				z := (s + w) * gamma
				z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
				z = (z ^ z>>27) * 0x94d049bb133111eb
				binary.LittleEndian.PutUint64(want[8*w:], z^z>>31)
			}
			got := make([]byte, n)
			Fill(got, number, 5)
			if !bytes.Equal(got, want[:n]) {
				t.Fatalf("%d bytes of event %d: %x, want %x", n, number, got, want[:n])
			}
			if at := Verify(want[:n], number, 5); at != -1 {
				t.Fatalf("Verify of %d bytes of event %d: byte %d", n, number, at)
			}
		}
	}
}

func TestContent(t *testing.T) {
	a, b := make([]byte, 1001), make([]byte, 1001)
	Fill(a, 1, 1)
	Fill(b, 1, 2)
	if bytes.Equal(a, b) || bytes.Equal(a[:8], make([]byte, 8)) {
		t.Error("two events' content is the same, or zero")
	}
	if got := Verify(a, 1, 1); got != -1 {
		t.Errorf("Verify of the event's own content: %d", got)
	}
	for _, i := range []int{0, 511, 512, 1000} {
		a[i] ^= 1
		if got := Verify(a, 1, 1); got != i {
			t.Errorf("Verify with byte %d changed: %d", i, got)
		}
		a[i] ^= 1
	}
}

func TestErrors(t *testing.T) {
	good := configs()["ipv4 lbv2"]
	for name, mod := range map[string]func(*Config){
		"lb v1":       func(c *Config) { c.LBVersion = 1 },
		"mtu 64":      func(c *Config) { c.MTU = 64 },
		"mtu 70000":   func(c *Config) { c.MTU = 70000 },
		"mixed":       func(c *Config) { c.Dst = netip.MustParseAddrPort("[fd00::2]:1") },
		"4in6":        func(c *Config) { c.Src = netip.MustParseAddrPort("[::ffff:10.0.0.1]:1") },
		"no MAC":      func(c *Config) { c.SrcMAC = nil },
		"no src addr": func(c *Config) { c.Src = netip.AddrPort{} },
	} {
		c := good
		mod(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	s, _ := New(good)
	if err := s.Start(nil, 1, 1); err == nil {
		t.Error("an empty event started")
	}
	if err := s.Start(make([]byte, 10), 1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(make([]byte, s.MaxLen()-1)); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("short buffer: %v", err)
	}
}

// TestNoAllocs: Next allocates nothing, frames or datagrams.
func TestNoAllocs(t *testing.T) {
	for _, frames := range []bool{true, false} {
		cfg := configs()["ipv4 lbv2"]
		cfg.Frames = frames
		s, _ := New(cfg)
		event := make([]byte, 1<<20)
		buf := make([]byte, s.MaxLen())
		_ = s.Start(event, 1, 1)
		if a := testing.AllocsPerRun(100, func() {
			if _, err := s.Next(buf); err == io.EOF {
				_ = s.Start(event, 2, 1)
			}
		}); a != 0 {
			t.Errorf("frames %v: %v allocations per segment", frames, a)
		}
	}
}
