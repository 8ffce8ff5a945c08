package pcapio

import (
	"bytes"
	"encoding/binary"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/internal/testutil"
)

var srcMAC = net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}

// ipPacket is a UDP datagram in IPv4 or IPv6, serialized by gopacket.
func ipPacket(t testing.TB, v6 bool, payload string) []byte {
	udp := &layers.UDP{SrcPort: 1234, DstPort: 19522}
	var ip gopacket.SerializableLayer
	if v6 {
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: net.ParseIP("fe80::1"), DstIP: net.ParseIP("fe80::2")}
		udp.SetNetworkLayerForChecksum(ip6)
		ip = ip6
	} else {
		ip4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2)}
		udp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, udp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func etherFrame(t testing.TB, payload string) []byte {
	buf := gopacket.NewSerializeBuffer()
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EthernetType: layers.EthernetTypeIPv4}
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, eth, gopacket.Payload(ipPacket(t, false, payload))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sll is ip behind a Linux cooked (v1) header, laid out by hand from
// the tcpdump.org LINKTYPE_LINUX_SLL page.
func sll(proto uint16, ip []byte) []byte {
	h := make([]byte, 16)
	binary.BigEndian.PutUint16(h[0:], 4) // outgoing
	binary.BigEndian.PutUint16(h[2:], 1) // ARPHRD_ETHER
	binary.BigEndian.PutUint16(h[4:], 6)
	copy(h[6:], srcMAC)
	binary.BigEndian.PutUint16(h[14:], proto)
	return append(h, ip...)
}

// sll2 is ip behind a Linux cooked v2 header (LINKTYPE_LINUX_SLL2).
func sll2(proto uint16, ip []byte) []byte {
	h := make([]byte, 20)
	binary.BigEndian.PutUint16(h[0:], proto)
	binary.BigEndian.PutUint32(h[4:], 3) // interface index
	binary.BigEndian.PutUint16(h[8:], 1) // ARPHRD_ETHER
	h[10], h[11] = 0, 6
	copy(h[12:], srcMAC)
	return append(h, ip...)
}

type captured struct {
	link layers.LinkType
	data []byte
}

func ci(i, n int) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: time.Unix(int64(1000+i), 0).UTC(), CaptureLength: n, Length: n}
}

// pcapOf is a classic pcap of frames of one link type.
func pcapOf(t testing.TB, link layers.LinkType, frames ...[]byte) []byte {
	var b bytes.Buffer
	w := pcapgo.NewWriter(&b)
	if err := w.WriteFileHeader(65536, link); err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := w.WritePacket(ci(i, len(f)), f); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// pcapngOf is a pcapng with one interface per distinct link type, in
// order of first use, each frame on its link type's interface.
func pcapngOf(t testing.TB, frames ...captured) []byte {
	var b bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&b, pcapgo.NgInterface{Name: "if0", LinkType: frames[0].link, SnapLength: 65536}, pcapgo.NgWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[layers.LinkType]int{frames[0].link: 0}
	for i, f := range frames {
		id, ok := ids[f.link]
		if !ok {
			if id, err = w.AddInterface(pcapgo.NgInterface{Name: "if" + f.link.String(), LinkType: f.link, SnapLength: 65536}); err != nil {
				t.Fatal(err)
			}
			ids[f.link] = id
		}
		c := ci(i, len(f.data))
		c.InterfaceIndex = id
		if err := w.WritePacket(c, f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// oracle is what gopacket decodes from a frame captured on link: the
// EtherType, source MAC and network-layer bytes an Ethernet frame of it
// must carry.
type oracle struct {
	etherType layers.EthernetType
	src       string
	network   []byte
}

func decodeCaptured(t *testing.T, c captured) oracle {
	first := map[layers.LinkType]gopacket.LayerType{
		layers.LinkTypeEthernet: layers.LayerTypeEthernet, layers.LinkTypeLinuxSLL: layers.LayerTypeLinuxSLL,
		layers.LinkTypeLinuxSLL2: layers.LayerTypeLinuxSLL2, layers.LinkTypeRaw: layers.LayerTypeIPv4,
	}[c.link]
	if c.link == layers.LinkTypeRaw && c.data[0]>>4 == 6 {
		first = layers.LayerTypeIPv6
	}
	p := gopacket.NewPacket(c.data, first, gopacket.Default)
	o := oracle{src: "00:00:00:00:00:00"}
	switch l := p.Layers()[0].(type) {
	case *layers.Ethernet: // as captured, padding and all
		return oracle{l.EthernetType, l.SrcMAC.String(), l.Payload}
	case *layers.LinuxSLL:
		o.etherType, o.src = l.EthernetType, l.Addr.String()
	case *layers.LinuxSLL2:
		o.etherType, o.src = l.ProtocolType, l.Addr.String()
	case *layers.IPv4:
		o.etherType = layers.EthernetTypeIPv4
	case *layers.IPv6:
		o.etherType = layers.EthernetTypeIPv6
	default:
		t.Fatalf("gopacket decodes %T", l)
	}
	nl := p.NetworkLayer()
	if nl == nil {
		t.Fatalf("gopacket finds no network layer in %x", c.data)
	}
	o.network = append(append([]byte{}, nl.LayerContents()...), nl.LayerPayload()...)
	return o
}

func decodeEthernet(t *testing.T, frame []byte) oracle {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	eth, ok := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if !ok {
		t.Fatalf("not Ethernet: %x", frame)
	}
	if eth.DstMAC.String() != "00:00:00:00:00:00" && eth.DstMAC.String() != "ff:ff:ff:ff:ff:ff" {
		t.Errorf("destination %s", eth.DstMAC)
	}
	return oracle{eth.EthernetType, eth.SrcMAC.String(), eth.Payload}
}

// Every frame of every link type comes back as the Ethernet frame
// carrying what gopacket decodes from the capture, in file order, with
// its timestamp: two-interface pcapngs and classic pcaps alike.
func TestReadLinkTypes(t *testing.T) {
	eth := captured{layers.LinkTypeEthernet, etherFrame(t, "eth")}
	sllV4 := captured{layers.LinkTypeLinuxSLL, sll(0x0800, ipPacket(t, false, "sll"))}
	sllV6 := captured{layers.LinkTypeLinuxSLL, sll(0x86DD, ipPacket(t, true, "sll6"))}
	sll2V4 := captured{layers.LinkTypeLinuxSLL2, sll2(0x0800, ipPacket(t, false, "sll2"))}
	rawV4 := captured{layers.LinkTypeRaw, ipPacket(t, false, "raw")}
	rawV6 := captured{layers.LinkTypeRaw, ipPacket(t, true, "raw6")}
	for _, c := range []struct {
		name   string
		file   []byte
		frames []captured
	}{
		{"pcapng Ethernet+SLL", pcapngOf(t, eth, sllV4, eth, sllV6), []captured{eth, sllV4, eth, sllV6}},
		{"pcapng SLL2+raw+Ethernet", pcapngOf(t, sll2V4, rawV6, eth, rawV4), []captured{sll2V4, rawV6, eth, rawV4}},
		{"pcap SLL", pcapOf(t, layers.LinkTypeLinuxSLL, sllV4.data, sllV6.data), []captured{sllV4, sllV6}},
		{"pcap SLL2", pcapOf(t, layers.LinkTypeLinuxSLL2, sll2V4.data), []captured{sll2V4}},
		{"pcap raw", pcapOf(t, layers.LinkTypeRaw, rawV4.data, rawV6.data), []captured{rawV4, rawV6}},
		{"pcap Ethernet", pcapOf(t, layers.LinkTypeEthernet, eth.data), []captured{eth}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Read("x.pcap", c.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.frames) {
				t.Fatalf("%d frames, want %d", len(got), len(c.frames))
			}
			for i, f := range got {
				if diff := cmp.Diff(decodeCaptured(t, c.frames[i]), decodeEthernet(t, f.Data), cmp.AllowUnexported(oracle{})); diff != "" {
					t.Errorf("frame %d (-gopacket +pcapio):\n%s", i+1, diff)
				}
				if !f.CI.Timestamp.Equal(ci(i, 0).Timestamp) || f.CI.CaptureLength != len(f.Data) || f.CI.Length != len(f.Data) {
					t.Errorf("frame %d: capture info %+v for %d bytes", i+1, f.CI, len(f.Data))
				}
			}
		})
	}
}

func TestReadRefusals(t *testing.T) {
	v4 := ipPacket(t, false, "x")
	for _, c := range []struct {
		name, want string
		file       []byte
	}{
		{"802.11", "w.pcap: frame 1: link type 802.11 (105) is not supported", pcapOf(t, layers.LinkTypeIEEE802_11, v4)},
		{"pcapng 802.11 second", "w.pcap: frame 2: link type 802.11 (105) is not supported",
			pcapngOf(t, captured{layers.LinkTypeEthernet, etherFrame(t, "a")}, captured{layers.LinkTypeIEEE802_11, v4})},
		{"SLL 802.2", "w.pcap: frame 1: Linux cooked capture protocol 0x0004 is not an EtherType", pcapOf(t, layers.LinkTypeLinuxSLL, sll(4, v4))},
		{"SLL short", "w.pcap: frame 1: Linux cooked header truncated: 10 of 16 bytes", pcapOf(t, layers.LinkTypeLinuxSLL, make([]byte, 10))},
		{"SLL2 short", "w.pcap: frame 2: Linux cooked header truncated: 19 of 20 bytes", pcapOf(t, layers.LinkTypeLinuxSLL2, sll2(0x800, v4), make([]byte, 19))},
		{"raw v5", "w.pcap: frame 1: IP version 5 in a raw IP capture (link type 101)", pcapOf(t, layers.LinkTypeRaw, append([]byte{0x50}, v4[1:]...))},
		{"IPv4 link v6", "w.pcap: frame 1: IP version 6 in a raw IP capture (link type 228)", pcapOf(t, layers.LinkTypeIPv4, ipPacket(t, true, "x"))},
		{"raw empty", "w.pcap: frame 1: empty frame in a raw IP capture", pcapOf(t, layers.LinkTypeRaw, nil)},
		{"not a capture", "w.pcap: not a pcap or pcapng file", []byte("hello, world, not a pcap")},
	} {
		if _, err := Read("w.pcap", c.file); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// Written frames read back as they were; an aborted writer leaves no
// file, nor anything beside it.
func TestWriter(t *testing.T) {
	dir := t.TempDir()
	frames := []Frame{{ci(0, 0), etherFrame(t, "one")}, {ci(1, 0), etherFrame(t, "two")}}
	path := filepath.Join(dir, "out.pcap")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		w.WritePacket(f.CI, f.Data)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range frames {
		frames[i].CI.CaptureLength, frames[i].CI.Length = len(frames[i].Data), len(frames[i].Data)
	}
	if diff := cmp.Diff(frames, got); diff != "" {
		t.Errorf("read back (-written +read):\n%s", diff)
	}
	w, err = Create(filepath.Join(dir, "aborted.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	w.WritePacket(frames[0].CI, frames[0].Data)
	w.Abort()
	if names := testutil.DirNames(t, dir); !cmp.Equal(names, []string{"out.pcap"}) {
		t.Errorf("after abort the directory has %v", names)
	}
}

// Read never panics, and what it reads writes and reads back the same.
func FuzzRead(f *testing.F) {
	v4, v6 := ipPacket(f, false, "x"), ipPacket(f, true, "y")
	f.Add(pcapOf(f, layers.LinkTypeLinuxSLL, sll(0x0800, v4)))
	f.Add(pcapOf(f, layers.LinkTypeLinuxSLL2, sll2(0x86DD, v6)))
	f.Add(pcapOf(f, layers.LinkTypeRaw, v4, v6))
	f.Add(pcapngOf(f, captured{layers.LinkTypeEthernet, etherFrame(f, "a")}, captured{layers.LinkTypeRaw, v6}))
	f.Fuzz(func(t *testing.T, raw []byte) {
		frames, err := Read("fuzz", raw)
		if err != nil || len(frames) == 0 {
			return
		}
		var b bytes.Buffer
		w := pcapgo.NewWriter(&b)
		w.WriteFileHeader(65536, layers.LinkTypeEthernet)
		for _, fr := range frames {
			if err := w.WritePacket(fr.CI, fr.Data); err != nil {
				return // a capture length pcapgo will not write
			}
		}
		again, err := Read("again", b.Bytes())
		if err != nil || len(again) != len(frames) {
			t.Fatalf("read back: %d frames, %v; wrote %d", len(again), err, len(frames))
		}
		for i := range frames {
			if !bytes.Equal(frames[i].Data, again[i].Data) {
				t.Fatalf("frame %d: %x read back as %x", i+1, frames[i].Data, again[i].Data)
			}
		}
	})
}
