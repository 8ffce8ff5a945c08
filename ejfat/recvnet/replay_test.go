package recvnet

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/ejfat/segment"
	"github.com/dragonet-go/nsc/internal/pcapio"
)

// TestReplay: frames the segmenter cut three events into, a millisecond
// apart, replayed as nsc recv --in does: the two whole events are
// delivered as segment.Fill wrote them; the one whose last segment is
// missing times out Timeout after the last frame, on the capture's
// clock; frames to another port or too short for a datagram are skipped.
func TestReplay(t *testing.T) {
	mac := []byte{2, 0, 0, 0, 0, 1}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var frames []pcapio.Frame
	add := func(b []byte) {
		frames = append(frames, pcapio.Frame{CI: gopacket.CaptureInfo{Timestamp: at}, Data: b})
		at = at.Add(time.Millisecond)
	}
	segments := 0
	for i, dst := range []string{"10.0.0.1:19522", "10.0.0.1:19523", "10.0.0.1:19524", "10.0.0.1:19522"} {
		seg, err := segment.New(segment.Config{MTU: 1500, Src: netip.MustParseAddrPort("10.0.0.2:5000"), Dst: netip.MustParseAddrPort(dst),
			Frames: true, SrcMAC: mac, DstMAC: mac})
		if err != nil {
			t.Fatal(err)
		}
		event := make([]byte, 5000)
		segment.Fill(event, uint64(i), 3)
		seg.Start(event, uint64(i), 3)
		var cut [][]byte
		for {
			b := make([]byte, seg.MaxLen())
			n, err := seg.Next(b)
			if err != nil {
				break
			}
			cut = append(cut, b[:n])
		}
		if i == 3 {
			cut = cut[:len(cut)-1] // its last segment lost
		}
		for _, b := range cut {
			add(b)
		}
		if i != 2 {
			segments += len(cut)
		}
	}
	add(frames[0].Data[:20])
	got := map[uint64]bool{}
	var clock func() time.Time
	p := Replay{Listen: netip.MustParseAddrPort("0.0.0.0:19522"), Ports: 2, Timeout: time.Second,
		New: func(now func() time.Time) (Reassembler, error) {
			clock = now
			return reasm.New(reasm.Config{Timeout: time.Second, Now: now})
		},
		Deliver: func(ev *reasm.Event) {
			if got[ev.Number] || segment.Verify(ev.Data, ev.Number, ev.DataID) != -1 || len(ev.Data) != 5000 {
				t.Errorf("event %d: %d bytes, delivered before: %v", ev.Number, len(ev.Data), got[ev.Number])
			}
			got[ev.Number] = true
		}}
	res, err := p.Run(frames)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0] || !got[1] || res.Stats.Reassembled != 2 || res.Stats.TimedOut != 1 || res.Stats.Packets != uint64(segments) {
		t.Errorf("delivered %v; stats %+v", got, res.Stats)
	}
	if want := uint64(len(frames) - segments); res.Skipped != want || res.LBHeaders != uint64(segments) {
		t.Errorf("%d skipped, %d with an LB header; want %d and %d", res.Skipped, res.LBHeaders, want, segments)
	}
	if want := at.Add(-time.Millisecond + time.Second); !clock().Equal(want) {
		t.Errorf("the clock ends at %v, want %v", clock(), want)
	}
}
