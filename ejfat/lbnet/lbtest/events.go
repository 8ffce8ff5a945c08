package lbtest

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/segment"
)

// Segments is how many segments an EventSender cuts each event into.
const Segments = 3

// EventSender cuts events into Segments segments (ejfat/segment, LB v2)
// and sends them to an LB from 127.0.0.1.
type EventSender struct {
	conn *net.UDPConn
	seg  *segment.Segmenter
	buf  []byte
}

// NewEventSender sends to the LB at lb.
func NewEventSender(t testing.TB, lb *net.UDPAddr) *EventSender {
	t.Helper()
	conn := Sender(t, lb)
	seg, err := segment.New(segment.Config{MTU: 100 + segment.IPv4Len + segment.UDPLen + segment.HeadersLen,
		Src: conn.LocalAddr().(*net.UDPAddr).AddrPort(), Dst: netip.AddrPortFrom(netip.MustParseAddr(lb.IP.String()), uint16(lb.Port))})
	if err != nil {
		t.Fatal(err)
	}
	return &EventSender{conn: conn, seg: seg, buf: make([]byte, seg.MaxLen())}
}

// Send sends event numbers lo to hi−1 (their ticks), pausing every 32
// events so that the sockets' buffers keep up.
func (s *EventSender) Send(t testing.TB, lo, hi uint64) {
	t.Helper()
	for n := lo; n < hi; n++ {
		if err := s.seg.Start(make([]byte, 250), n, 0); err != nil { // 3 segments of 100 bytes
			t.Fatal(err)
		}
		for {
			l, err := s.seg.Next(s.buf)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.conn.Write(s.buf[:l]); err != nil {
				t.Fatal(err)
			}
		}
		if n%32 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// Arrivals collects, for each event number, how many of its segments
// each member (by index in members, LB header removed) received, until
// want segments arrived or 10 s passed.
func Arrivals(members []*Member, want int) map[uint64]map[int]int {
	got := map[uint64]map[int]int{}
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n < want && time.Now().Before(deadline); {
		idle := true
		for who, m := range members {
			select {
			case d := <-m.Got():
				idle = false
				n++
				if len(d) < ejfat.RELen {
					continue
				}
				ev := ejfat.RE(d).EventNumber()
				if got[ev] == nil {
					got[ev] = map[int]int{}
				}
				got[ev][who]++
			default:
			}
		}
		if idle {
			time.Sleep(time.Millisecond)
		}
	}
	return got
}
