package ejfat

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func layersUnhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLBDecodeKnownBytes decodes LB headers written out by hand.
func TestLBDecodeKnownBytes(t *testing.T) {
	for _, tc := range []struct {
		name, hex string
		want      LB
		payload   string
	}{
		// Seed 000's first IPv4 frame: v1, protocol 1, tick 10, then EVIO6.
		{"v1", "4c42 01 01 000000000000000a 0002 0abc", LB{Magic: 0x4c42, Version: 1, Protocol: 1, Tick: 10}, "00020abc"},
		// The spec's worked example: v2, protocol 0, entropy 1, tick 10.
		{"v2", "4c42 02 00 0000 0001 000000000000000a 736f6d65", LB{Magic: 0x4c42, Version: 2, Entropy: 1, Tick: 10}, "736f6d65"},
		{"v2 reserved", "4c42 02 07 1234 fffe 0102030405060708", LB{Magic: 0x4c42, Version: 2, Protocol: 7, Reserved: 0x1234, Entropy: 0xfffe, Tick: 0x0102030405060708}, ""},
		// v3: slot_select 21, port_select 7, tick 16.
		{"v3", "4c42 03 01 0015 0007 0000000000000010 ff", LB{Magic: 0x4c42, Version: 3, Protocol: 1, SlotSelect: 21, PortSelect: 7, Tick: 16}, "ff"},
	} {
		data := layersUnhex(t, tc.hex)
		var lb LB
		if err := lb.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		n := LBHeaderLen(tc.want.Version)
		if lb.Magic != tc.want.Magic || lb.Version != tc.want.Version || lb.Protocol != tc.want.Protocol ||
			lb.Reserved != tc.want.Reserved || lb.Entropy != tc.want.Entropy ||
			lb.SlotSelect != tc.want.SlotSelect || lb.PortSelect != tc.want.PortSelect || lb.Tick != tc.want.Tick {
			t.Errorf("%s: decoded %+v", tc.name, lb)
		}
		if hex.EncodeToString(lb.Contents) != hex.EncodeToString(data[:n]) || hex.EncodeToString(lb.Payload) != tc.payload {
			t.Errorf("%s: contents %x payload %x", tc.name, lb.Contents, lb.Payload)
		}
		// And back: the same bytes.
		buf := gopacket.NewSerializeBuffer()
		if err := lb.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(buf.Bytes()); got != hex.EncodeToString(data[:n]) {
			t.Errorf("%s: serialized %s, want %x", tc.name, got, data[:n])
		}
	}
}

func TestLBRoundTrip(t *testing.T) {
	for _, in := range []LB{
		{Magic: LBMagic, Version: 1, Protocol: 0xff, Tick: 0xffffffffffffffff},
		{Magic: LBMagic, Version: 2, Protocol: 1, Reserved: 0xabcd, Entropy: 0x8001, Tick: 1 << 63},
		{Magic: LBMagic, Version: 3, Protocol: 2, SlotSelect: 0x1ff, PortSelect: 0xffff, Tick: 42},
	} {
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, &in, gopacket.Payload{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		if len(buf.Bytes()) != LBHeaderLen(in.Version)+3 {
			t.Errorf("v%d: %d bytes", in.Version, len(buf.Bytes()))
		}
		var out LB
		if err := out.DecodeFromBytes(buf.Bytes(), gopacket.NilDecodeFeedback); err != nil {
			t.Fatal(err)
		}
		if layersLBFields(&out) != layersLBFields(&in) {
			t.Errorf("v%d: round trip %+v, want %+v", in.Version, out, in)
		}
	}
	// v2 and v3 share the bytes: only the version's pair is written.
	buf := gopacket.NewSerializeBuffer()
	v2 := LB{Magic: LBMagic, Version: 2, Entropy: 5, PortSelect: 9}
	if err := v2.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(buf.Bytes()); got != "4c42020000000005"+"0000000000000000" {
		t.Errorf("v2 wrote %s", got)
	}
}

// layersLBFields and layersEVIO6Fields are a header's fields, comparable.
func layersLBFields(l *LB) [8]uint64 {
	return [8]uint64{uint64(l.Magic), uint64(l.Version), uint64(l.Protocol), uint64(l.Reserved),
		uint64(l.Entropy), uint64(l.SlotSelect), uint64(l.PortSelect), l.Tick}
}

func layersEVIO6Fields(e *EVIO6) [5]uint64 {
	return [5]uint64{uint64(e.Version), uint64(e.Reserved), uint64(e.Flags), uint64(e.RocID), uint64(e.Offset)}
}

type layersTruncFeedback struct{ truncated bool }

func (f *layersTruncFeedback) SetTruncated() { f.truncated = true }

func TestLBDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, hex string
		truncated bool
	}{
		{"empty", "", true},
		{"3 bytes", "4c4201", true},
		{"bad magic", "4c43 01 00 000000000000000a", false},
		{"version 0", "4c42 00 00 000000000000000a", false},
		{"version 4", "4c42 04 00 0000 0000 000000000000000a", false},
		{"v1 cut", "4c42 01 00 0000000000000a", true},
		{"v2 cut", "4c42 02 00 0000 0001 00000000000000", true},
	} {
		var lb LB
		df := &layersTruncFeedback{}
		if err := lb.DecodeFromBytes(layersUnhex(t, tc.hex), df); err == nil {
			t.Errorf("%s: decoded", tc.name)
		}
		if df.truncated != tc.truncated {
			t.Errorf("%s: truncated %v", tc.name, df.truncated)
		}
	}
	for _, v := range []uint8{0, 4} {
		lb := LB{Magic: LBMagic, Version: v}
		if err := lb.SerializeTo(gopacket.NewSerializeBuffer(), gopacket.SerializeOptions{}); err == nil {
			t.Errorf("serialized version %d", v)
		}
	}
}

func TestEVIO6(t *testing.T) {
	for _, tc := range []struct {
		hex  string
		want EVIO6
	}{
		{"0002 0abc 00000000", EVIO6{Flags: EVIO6First, RocID: 0xabc}},
		{"0001 0123 000003e8", EVIO6{Flags: EVIO6Last, RocID: 0x123, Offset: 1000}},
		{"0003 0000 00000000", EVIO6{Flags: EVIO6First | EVIO6Last}},
		// 0x1ffd: version 1, reserved all ones, flags last.
		{"1ffd ffff ffffffff", EVIO6{Version: 1, Reserved: 0x3ff, Flags: EVIO6Last, RocID: 0xffff, Offset: 0xffffffff}},
		{"f004 0001 00000064", EVIO6{Version: 15, Reserved: 1, RocID: 1, Offset: 100}},
	} {
		data := layersUnhex(t, tc.hex+"aa")
		var e EVIO6
		if err := e.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
			t.Fatal(err)
		}
		if layersEVIO6Fields(&e) != layersEVIO6Fields(&tc.want) {
			t.Errorf("%s: decoded %+v, want %+v", tc.hex, e, tc.want)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := tc.want.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
			t.Fatal(err)
		}
		if got, want := hex.EncodeToString(buf.Bytes()), strings.ReplaceAll(tc.hex, " ", ""); got != want {
			t.Errorf("serialized %s, want %s", got, want)
		}
	}
	var e EVIO6
	df := &layersTruncFeedback{}
	if err := e.DecodeFromBytes(make([]byte, 7), df); err == nil || !df.truncated {
		t.Error("decoded 7 bytes")
	}
	for _, bad := range []EVIO6{{Version: 16}, {Reserved: 0x400}, {Flags: 4}} {
		if err := bad.SerializeTo(gopacket.NewSerializeBuffer(), gopacket.SerializeOptions{}); err == nil {
			t.Errorf("serialized %+v", bad)
		}
	}
}

// TestDecodeSeedFrame decodes seed frames with gopacket's packet decoder:
// the UDP payload from LayerTypeLB gives the LB layer, and v1 protocol 1
// leads to EVIO6.
func TestDecodeSeedFrame(t *testing.T) {
	frames := seedGoFrames(t)
	for i, f := range frames[:2] {
		p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
		udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if !ok || udp.DstPort != LBPort {
			t.Fatalf("frame %d: no UDP to the LB port", i)
		}
		q := gopacket.NewPacket(udp.Payload, LayerTypeLB, gopacket.Default)
		if el := q.ErrorLayer(); el != nil {
			t.Fatal(el.Error())
		}
		var types []gopacket.LayerType
		for _, l := range q.Layers() {
			types = append(types, l.LayerType())
		}
		want := []gopacket.LayerType{LayerTypeLB, LayerTypeEVIO6, gopacket.LayerTypePayload}
		if len(types) != len(want) || types[0] != want[0] || types[1] != want[1] || types[2] != want[2] {
			t.Fatalf("frame %d: layers %v, want %v", i, types, want)
		}
		lb := q.Layer(LayerTypeLB).(*LB)
		seg := q.Layer(LayerTypeEVIO6).(*EVIO6)
		if lb.Version != 1 || lb.Protocol != 1 || lb.Tick != uint64(10+10*i) {
			t.Errorf("frame %d: LB %+v", i, lb)
		}
		if seg.Flags != EVIO6First || seg.Offset != 0 || len(seg.Payload) != 100 {
			t.Errorf("frame %d: EVIO6 %+v", i, seg)
		}
	}
}

// TestLBHeaderView: the view writes and reads the bytes the spec gives
// (ejfat-lb-pipeline.md: "LB", version, protocol, two 16-bit words, the
// tick), and takes for an LB header only version 2 or 3 with the magic.
func TestLBHeaderView(t *testing.T) {
	want := []byte{'L', 'B', 3, 1, 0x01, 0x02, 0x03, 0x04, 0, 0, 0, 0, 0, 0, 0x12, 0x34}
	b := make(LBHeader, LBLen)
	b.Encode(3, 0x0102, 0x0304, 0x1234)
	if !bytes.Equal(b, want) {
		t.Fatalf("Encode wrote % x, want % x", []byte(b), want)
	}
	if b.Magic() != LBMagic || b.Version() != 3 || b.Protocol() != REVersion || b.Slot() != 0x0102 || b.Port() != 0x0304 || b.Tick() != 0x1234 || !b.Valid() {
		t.Errorf("read back %#x %d %d %#x %#x %#x valid %v", b.Magic(), b.Version(), b.Protocol(), b.Slot(), b.Port(), b.Tick(), b.Valid())
	}
	for _, bad := range [][]byte{want[:LBLen-1], append([]byte{'L', 'C'}, want[2:]...), append([]byte{'L', 'B', 1}, want[3:]...), {0x10, 0}} {
		if LBHeader(bad).Valid() {
			t.Errorf("% x taken for an LB header", bad)
		}
	}
}
