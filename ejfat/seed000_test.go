package ejfat

import (
	"bytes"
	"encoding/hex"
	"os"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// seedScapyFrames reads testdata/seed000-scapy.pcap, the output of seed 000's
// generator script run by scapy itself.
func seedScapyFrames(t testing.TB) [][]byte {
	t.Helper()
	f, err := os.Open("testdata/seed000-scapy.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		t.Fatalf("scapy pcap link type %v", r.LinkType())
	}
	var out [][]byte
	for {
		data, _, err := r.ReadPacketData()
		if err != nil {
			break
		}
		out = append(out, data)
	}
	return out
}

func seedGoFrames(t testing.TB) [][]byte {
	t.Helper()
	frames, err := Seed000Frames()
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

func TestSeed000FramesAreScapys(t *testing.T) {
	want := seedScapyFrames(t)
	got := seedGoFrames(t)
	if len(want) != 22 || len(got) != len(want) {
		t.Fatalf("%d frames, scapy wrote %d (want 22)", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("frame %d differs from scapy's:\n got %x\nwant %x", i, got[i], want[i])
		}
	}
}

// TestSeed000FirstFrames checks the first frame of each transfer against
// bytes written out by hand from the generator script (the checksums are
// the ones scapy computed).
func TestSeed000FirstFrames(t *testing.T) {
	frames := seedGoFrames(t)
	zeros := func(n int) string { return hex.EncodeToString(make([]byte, n)) }
	want4 := "00aabbccddee" + "001122334455" + "0800" +
		"4500" + "0094" + "0001" + "0000" + "4011" + "6252" + "0a010202" + "0a010203" + // IPv4, 148 bytes
		"c350" + "4c42" + "0080" + "7f49" + // UDP 50000 -> 19522, 128 bytes
		"4c42" + "01" + "01" + "000000000000000a" + // LB v1, protocol 1, tick 10
		"0002" + "0abc" + "00000000" + // EVIO6: first, rocid 0xabc, offset 0
		zeros(100)
	want6 := "00aabbccddee" + "000102030405" + "86dd" +
		"60000000" + "0080" + "11" + "40" + // IPv6: payload 128, UDP, hop limit 64
		"fe800000000000000000000000000001" + "fe800000000000000000000000000002" +
		"3039" + "4c42" + "0080" + "36f2" + // UDP 12345 -> 19522
		"4c42" + "01" + "01" + "0000000000000014" + // tick 20
		"0002" + "0123" + "00000000" +
		zeros(100)
	if got := hex.EncodeToString(frames[0]); got != want4 {
		t.Errorf("IPv4 frame 0:\n got %s\nwant %s", got, want4)
	}
	if got := hex.EncodeToString(frames[1]); got != want6 {
		t.Errorf("IPv6 frame 0:\n got %s\nwant %s", got, want6)
	}
	// The last segment: offset 1000, 50 bytes, flag last.
	last := frames[20]
	if len(last) != 14+20+8+12+8+50 {
		t.Errorf("last IPv4 frame is %d bytes", len(last))
	}
	if seg := hex.EncodeToString(last[54:62]); seg != "00010abc000003e8" {
		t.Errorf("last IPv4 EVIO6 header %s, want 00010abc000003e8", seg)
	}
}

func TestWriteSeed000Pcap(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSeed000Pcap(&b); err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet || r.Snaplen() != 65535 {
		t.Errorf("link type %v, snap length %d", r.LinkType(), r.Snaplen())
	}
	want := seedScapyFrames(t)
	for i := 0; ; i++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			if i != len(want) {
				t.Errorf("read %d packets, want %d (%v)", i, len(want), err)
			}
			break
		}
		if i >= len(want) || !bytes.Equal(data, want[i]) || ci.Length != len(data) {
			t.Errorf("packet %d differs", i)
		}
	}
}
