package wireshark_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/backends/wireshark"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// What a receiver gets: RE headers (the reassembler model's) in front of
// segment payloads, built from the spec by testutil; every field tshark
// shows is the one the segment was built with, and a bad version or
// reserved byte shows as malformed, as the model drops it.
func TestReassemblySegments(t *testing.T) {
	m := testutil.Model(t, "ejfat/reassembler.nsc")
	var segs []testutil.Segment
	for i, src := range []net.IP{net.IPv4(10, 0, 0, 1).To4(), net.ParseIP("fe80::7")} {
		data := bytes.Repeat([]byte{byte(i + 1)}, 3000)
		segs = append(segs, testutil.Segments(testutil.Event{Src: src, DataID: uint16(0x100 + i), Tick: 0x1122334455667788 + uint64(i), Data: data}, 1000, 0)...)
	}
	bad := segs[0]
	bad.RE0 = 0x20
	segs = append(segs, bad)
	var frames [][]byte
	for _, s := range segs {
		frames = append(frames, s.Frame(t))
	}
	fields := []string{"re.Version", "re.Rsvd", "re.Data_ID", "re.Offset", "re.Length", "re.Tick"}
	rows := dissect(t, m, wireshark.Options{Headers: []string{"re"}}, frames, fields, "-d", "udp.port==19522,re")
	for i, s := range segs {
		want := map[string]string{
			"re.Version": fmt.Sprint(s.RE0 >> 4), "re.Rsvd": fmt.Sprint(uint16(s.RE0&0xf)<<8 | uint16(s.RE1)),
			"re.Data_ID": fmt.Sprint(s.DataID), "re.Offset": fmt.Sprint(s.Offset),
			"re.Length": fmt.Sprint(s.Length), "re.Tick": fmt.Sprint(s.Tick),
		}
		for _, f := range fields {
			if rows[i][f] != want[f] {
				t.Errorf("segment %d: %s = %q, want %q", i, f, rows[i][f], want[f])
			}
		}
		if mal := rows[i]["_ws.malformed"] != ""; mal != (s.RE0 != 0x10) {
			t.Errorf("segment %d (byte 0 %#x): malformed %v", i, s.RE0, mal)
		}
	}
}

// Sync messages (spec §2, 28 bytes) packed here from the spec's table:
// tshark shows each field as packed.
func TestSyncMessages(t *testing.T) {
	m := testutil.Model(t, "lib/ejfat-sender.nsc")
	type sync struct {
		src  uint32
		tick uint64
		rate uint32
		ns   uint64
	}
	msgs := []sync{{7, 1000, 100, 1_700_000_000_000_000_000}, {0xdeadbeef, 1 << 63, 1_000_000, 1}}
	var frames [][]byte
	for _, s := range msgs {
		b := []byte{'L', 'C', 2, 0}
		b = binary.BigEndian.AppendUint32(b, s.src)
		b = binary.BigEndian.AppendUint64(b, s.tick)
		b = binary.BigEndian.AppendUint32(b, s.rate)
		b = binary.BigEndian.AppendUint64(b, s.ns)
		frames = append(frames, udpFrame(t, 40000, layers.UDPPort(19523), b))
	}
	fields := []string{"lbsync.L", "lbsync.C", "lbsync.Version", "lbsync.Source_ID", "lbsync.Tick", "lbsync.Rate", "lbsync.Time"}
	rows := dissect(t, m, wireshark.Options{Headers: []string{"lbsync"}}, frames, fields, "-d", "udp.port==19523,lbsync")
	for i, s := range msgs {
		want := map[string]string{"lbsync.L": "76", "lbsync.C": "67", "lbsync.Version": "2",
			"lbsync.Source_ID": fmt.Sprint(s.src), "lbsync.Tick": fmt.Sprint(s.tick),
			"lbsync.Rate": fmt.Sprint(s.rate), "lbsync.Time": fmt.Sprint(s.ns)}
		for _, f := range fields {
			if rows[i][f] != want[f] {
				t.Errorf("message %d: %s = %q, want %q", i, f, rows[i][f], want[f])
			}
		}
	}
}

// What a sender sends (spec §1, the segmenter's output): an LB header, v2
// or v3, then the RE header; the reassembler model parses both, so its
// dissector shows the LB header's fields and follows it to the RE header.
func TestSenderSegments(t *testing.T) {
	m := testutil.Model(t, "ejfat/reassembler.nsc")
	var segs []testutil.Segment
	for _, lb := range []int{2, 3} {
		ev := testutil.Event{Src: net.IPv4(10, 0, 0, 2).To4(), DataID: 9, Tick: 0xa0b0c0d0e0f00000 + uint64(lb), Data: bytes.Repeat([]byte{7}, 2500)}
		segs = append(segs, testutil.Segments(ev, 1000, lb)...)
	}
	var frames [][]byte
	for _, s := range segs {
		frames = append(frames, s.Frame(t))
	}
	fields := []string{"lb.L", "lb.B", "lb.Version", "lb.Protocol", "lb.Tick", "re.Data_ID", "re.Offset", "re.Length", "re.Tick"}
	rows := dissect(t, m, wireshark.Options{Headers: []string{"lb", "lbv3", "re"}}, frames, fields, "-d", "udp.port==19522,lb")
	for i, s := range segs {
		want := map[string]string{"lb.L": "76", "lb.B": "66", "lb.Version": fmt.Sprint(s.LB), "lb.Protocol": "1",
			"lb.Tick": fmt.Sprint(s.Tick), "re.Data_ID": fmt.Sprint(s.DataID), "re.Offset": fmt.Sprint(s.Offset),
			"re.Length": fmt.Sprint(s.Length), "re.Tick": fmt.Sprint(s.Tick)}
		for _, f := range fields {
			if rows[i][f] != want[f] {
				t.Errorf("segment %d (LB v%d): %s = %q, want %q", i, s.LB, f, rows[i][f], want[f])
			}
		}
		if rows[i]["_ws.malformed"] != "" {
			t.Errorf("segment %d: malformed", i)
		}
	}
}
