package ejfat

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/gopacket/gopacket"
)

// The spec's tables (specs/ejfat-reassembly.md §2), written out by hand.
const (
	// RE: version 1, reserved 0, data id 0x0abc, offset 8936, length
	// 0x00100000 (1 MiB), event number 0x0102030405060708, then 2 payload
	// bytes.
	reHex = "1000 0abc 000022e8 00100000 0102030405060708 beef"
	// EVIO6: version 0, reserved 0, flags first|last, roc id 0x123,
	// offset 100.
	evio6Hex = "0003 0123 00000064 aa"
	// Sync: "LC", version 2, reserved 0, source id 7, event number 1000,
	// rate 250 Hz, clock 1.7e18 ns.
	syncHex = "4c43 02 00 00000007 00000000000003e8 000000fa 17979cfe362a0000"
)

// decodeOne decodes data from layer type lt with gopacket and returns the
// layer and the packet's error layer, if any.
func decodeOne(t *testing.T, hexs string, lt gopacket.LayerType) gopacket.Packet {
	t.Helper()
	p := gopacket.NewPacket(layersUnhex(t, hexs), lt, gopacket.Default)
	if e := p.ErrorLayer(); e != nil {
		t.Fatalf("decoding %s: %v", lt, e.Error())
	}
	return p
}

func TestREDecodeKnownBytes(t *testing.T) {
	p := decodeOne(t, reHex, LayerTypeRE)
	h := p.Layer(LayerTypeRE).(*REHeader)
	want := REHeader{Version: 1, DataID: 0xabc, Offset: 8936, Length: 1 << 20, EventNumber: 0x0102030405060708}
	if h.Version != want.Version || h.Reserved != 0 || h.DataID != want.DataID || h.Offset != want.Offset ||
		h.Length != want.Length || h.EventNumber != want.EventNumber {
		t.Errorf("decoded %+v, want %+v", h, want)
	}
	if app := p.ApplicationLayer(); app == nil || hex.EncodeToString(app.Payload()) != "beef" {
		t.Errorf("payload %v, want beef", app)
	}
	b := RE(layersUnhex(t, reHex))
	if !b.Valid() || b.Version() != 1 || b.DataID() != 0xabc || b.Offset() != 8936 || b.Length() != 1<<20 ||
		b.EventNumber() != 0x0102030405060708 {
		t.Errorf("accessors disagree with the table: %x", []byte(b))
	}
	// Encode and SerializeTo write the table's bytes back.
	enc := make(RE, RELen)
	enc.Encode(0xabc, 8936, 1<<20, 0x0102030405060708)
	sb := gopacket.NewSerializeBuffer()
	if err := h.SerializeTo(sb, gopacket.SerializeOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, b[:RELen]) || !bytes.Equal(sb.Bytes(), b[:RELen]) {
		t.Errorf("Encode %x, SerializeTo %x, want %x", []byte(enc), sb.Bytes(), []byte(b[:RELen]))
	}
}

func TestREValid(t *testing.T) {
	good := layersUnhex(t, reHex)
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"good", good, true},
		{"short", good[:RELen-1], false},
		{"version 2", append([]byte{0x20}, good[1:]...), false},
		{"reserved in byte 0", append([]byte{0x11}, good[1:]...), false},
		{"reserved in byte 1", append([]byte{0x10, 0x01}, good[2:]...), false},
	} {
		if got := RE(tc.b).Valid(); got != tc.want {
			t.Errorf("%s: Valid %v, want %v", tc.name, got, tc.want)
		}
	}
	if p := gopacket.NewPacket(good[:RELen-1], LayerTypeRE, gopacket.Default); p.ErrorLayer() == nil {
		t.Error("a 19-byte RE header decoded without error")
	}
	if err := (&REHeader{Version: 16}).SerializeTo(gopacket.NewSerializeBuffer(), gopacket.SerializeOptions{}); err == nil {
		t.Error("a 5-bit version serialized")
	}
}

func TestEVIO6AccessorsKnownBytes(t *testing.T) {
	b := EVIO6Seg(layersUnhex(t, evio6Hex))
	if b.Version() != 0 || b.Reserved() != 0 || b.Flags() != EVIO6First|EVIO6Last || b.RocID() != 0x123 || b.Offset() != 100 {
		t.Errorf("accessors: version %d reserved %d flags %d roc %#x offset %d", b.Version(), b.Reserved(), b.Flags(), b.RocID(), b.Offset())
	}
	p := decodeOne(t, evio6Hex, LayerTypeEVIO6)
	if e := p.Layer(LayerTypeEVIO6).(*EVIO6); e.Flags != EVIO6First|EVIO6Last || e.RocID != 0x123 || e.Offset != 100 {
		t.Errorf("layer %+v", e)
	}
	// Every field at its widest, then the setters one by one.
	w := make(EVIO6Seg, EVIO6Len)
	w.Encode(0xf, 0x3ff, EVIO6Last, 0xffff, 0xffffffff)
	if got := hex.EncodeToString(w); got != "fffdffffffffffff" {
		t.Errorf("Encode at the widest: %s", got)
	}
	w.SetFlags(EVIO6First)
	w.SetRocID(0x123)
	w.SetOffset(100)
	if w.Version() != 0xf || w.Reserved() != 0x3ff || w.Flags() != EVIO6First || w.RocID() != 0x123 || w.Offset() != 100 {
		t.Errorf("after setters: %x", []byte(w))
	}
}

func TestSyncDecodeKnownBytes(t *testing.T) {
	p := decodeOne(t, syncHex, LayerTypeSync)
	m := p.Layer(LayerTypeSync).(*SyncMessage)
	const clock = 0x17979cfe362a0000
	if m.Magic != SyncMagic || m.Version != 2 || m.Reserved != 0 || m.SourceID != 7 || m.EventNumber != 1000 ||
		m.Rate != 250 || m.UnixNano != clock {
		t.Errorf("decoded %+v", m)
	}
	b := Sync(layersUnhex(t, syncHex))
	if !b.Valid() || b.SourceID() != 7 || b.EventNumber() != 1000 || b.Rate() != 250 || b.UnixNano() != clock {
		t.Errorf("accessors disagree with the table: %x", []byte(b))
	}
	enc := make(Sync, SyncLen)
	enc.Encode(7, 1000, 250, clock)
	sb := gopacket.NewSerializeBuffer()
	if err := m.SerializeTo(sb, gopacket.SerializeOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, b) || !bytes.Equal(sb.Bytes(), b) {
		t.Errorf("Encode %x, SerializeTo %x, want %x", []byte(enc), sb.Bytes(), []byte(b))
	}
}

// TestSyncValid is the control plane's check: length exactly 28, magic,
// version.
func TestSyncValid(t *testing.T) {
	good := layersUnhex(t, syncHex)
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"good", good, true},
		{"27 bytes", good[:SyncLen-1], false},
		{"29 bytes", append(append([]byte{}, good...), 0), false},
		{"magic LB", append([]byte{0x4c, 0x42}, good[2:]...), false},
		{"version 1", append([]byte{0x4c, 0x43, 1}, good[3:]...), false},
		{"reserved set", append([]byte{0x4c, 0x43, 2, 0xff}, good[4:]...), true},
	} {
		if got := Sync(tc.b).Valid(); got != tc.want {
			t.Errorf("%s: Valid %v, want %v", tc.name, got, tc.want)
		}
	}
}
