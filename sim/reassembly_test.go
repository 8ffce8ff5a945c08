package sim_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// rig runs models/ejfat/reassembler.nsc on a logical clock and keeps the
// events it delivers.
type rig struct {
	t   testing.TB
	m   *sim.Machine
	now time.Time
	got [][]byte
}

func newRig(t testing.TB) *rig {
	t.Helper()
	md := testutil.Model(t, "ejfat/reassembler.nsc")
	g, _ := md.Graph("Reassembler")
	ts, err := table.Load(md.Schema, "entries", strings.NewReader(testutil.ReassemblerEntries))
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(g, ts)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, m: m, now: time.Unix(1000, 0)}
	m.SetClock(func() time.Time { return r.now })
	return r
}

func (r *rig) send(segs ...testutil.Segment) {
	for _, s := range segs {
		r.frame(s.Frame(r.t))
	}
}

func (r *rig) frame(f []byte) {
	r.m.Run(f, func(sink *dataflow.Node, data []byte) {
		if sink.Name != "Deliver" {
			r.t.Fatalf("left by %s", sink.Name)
		}
		r.got = append(r.got, bytes.Clone(data))
	})
}

// drops are the drop counts by reason (each reason has one node).
func (r *rig) drops() map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range r.m.Counters().Drops {
		out[k.Reason] += v
	}
	return out
}

// check wants exactly the events in want delivered, in any order, and
// exactly the drop counts in drops.
func (r *rig) check(want [][]byte, drops map[string]uint64) {
	r.t.Helper()
	sortBytes := func(bs [][]byte) [][]byte {
		bs = slices.Clone(bs)
		slices.SortFunc(bs, bytes.Compare)
		return bs
	}
	if diff := cmp.Diff(sortBytes(want), sortBytes(r.got)); diff != "" {
		r.t.Errorf("delivered events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(drops, r.drops()); diff != "" {
		r.t.Errorf("drops (-want +got):\n%s", diff)
	}
}

var (
	srcA = net.IP{192, 0, 2, 7}
	srcB = net.ParseIP("2001:db8::7")
)

// event makes an event of n bytes from rnd.
func event(rnd *rand.Rand, src net.IP, dataID uint16, tick uint64, n int) testutil.Event {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rnd.UintN(256))
	}
	return testutil.Event{Src: src, DataID: dataID, Tick: tick, Data: b}
}

func TestReassemblyOrders(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 13))
	ev := event(rnd, srcA, 3, 77, 10000)
	segs := testutil.Segments(ev, 1400, 0) // 8 segments, the last short
	n := uint64(len(segs))
	shuffled := slices.Clone(segs)
	rnd.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	reversed := slices.Clone(segs)
	slices.Reverse(reversed)
	var twice []testutil.Segment
	for _, s := range segs {
		twice = append(twice, s, s)
	}
	for _, tc := range []struct {
		name  string
		segs  []testutil.Segment
		drops map[string]uint64
	}{
		{"in order", segs, map[string]uint64{"stored": n - 1}},
		{"reversed", reversed, map[string]uint64{"stored": n - 1}},
		{"shuffled", shuffled, map[string]uint64{"stored": n - 1}},
		// The duplicate of the last segment comes after the event is whole.
		{"every segment twice", twice, map[string]uint64{"stored": n - 1, "duplicate": n}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.send(tc.segs...)
			r.check([][]byte{ev.Data}, tc.drops)
		})
	}
}

// A lost segment: the event expires after the timeout, counted once; the
// segment coming late is counted as late and makes no second event; a
// timeout later the key is forgotten.
func TestReassemblyLoss(t *testing.T) {
	rnd := rand.New(rand.NewPCG(2, 13))
	ev := event(rnd, srcA, 1, 5, 3000)
	segs := testutil.Segments(ev, 1000, 0)
	r := newRig(t)
	r.send(segs[0], segs[2])
	r.now = r.now.Add(499 * time.Millisecond)
	r.m.Expire()
	r.check(nil, map[string]uint64{"stored": 2})
	r.now = r.now.Add(time.Millisecond)
	r.m.Expire()
	r.check(nil, map[string]uint64{"stored": 2, "timeout": 1})
	r.send(segs[1], segs[0])
	r.check(nil, map[string]uint64{"stored": 2, "timeout": 1, "late": 2})
	r.now = r.now.Add(500 * time.Millisecond)
	r.send(segs...) // forgotten: a new event, whole
	r.check([][]byte{ev.Data}, map[string]uint64{"stored": 4, "timeout": 1, "late": 2})
}

// Every bad case of spec §4.2 ends under its own reason, and none of them
// touches the event in progress.
func TestReassemblyBadSegments(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 13))
	ev := event(rnd, srcA, 9, 1<<40, 4000)
	segs := testutil.Segments(ev, 1000, 0)
	bad := func(f func(*testutil.Segment)) testutil.Segment {
		s := segs[1]
		s.Payload = slices.Clone(s.Payload)
		f(&s)
		return s
	}
	r := newRig(t)
	r.send(segs[0])
	r.send(
		// overlaps segment 0 by one byte
		bad(func(s *testutil.Segment) { s.Offset = 999 }),
		// past the end by one byte
		bad(func(s *testutil.Segment) { s.Offset = 3001 }),
		bad(func(s *testutil.Segment) { s.Offset = 0xffffffff }),
		// the first segment said 4000
		bad(func(s *testutil.Segment) { s.Length = 4001 }),
		bad(func(s *testutil.Segment) { s.Length = 0; s.Offset = 0; s.Payload = nil }),
		bad(func(s *testutil.Segment) { s.Length = 1<<30 + 1; s.Tick++ }),
		bad(func(s *testutil.Segment) { s.RE0 = 0x20 }),
		bad(func(s *testutil.Segment) { s.RE0 = 0x11 }),
		bad(func(s *testutil.Segment) { s.RE1 = 0x01 }),
		bad(func(s *testutil.Segment) { s.Port = 21000 }),
		bad(func(s *testutil.Segment) { s.Payload = nil }),           // no new byte
		bad(func(s *testutil.Segment) { s.Payload = nil; s.Tick++ }), // nor here, and no event made
	)
	r.check(nil, map[string]uint64{"stored": 1, "overlap": 1, "out of bounds": 2, "length mismatch": 1,
		"zero length": 1, "too large": 1, "bad re header": 3, "not a data port": 1, "duplicate": 2})
	r.send(segs[1:]...)
	r.check([][]byte{ev.Data}, map[string]uint64{"stored": 3, "overlap": 1, "out of bounds": 2, "length mismatch": 1,
		"zero length": 1, "too large": 1, "bad re header": 3, "not a data port": 1, "duplicate": 2})
}

// Two first segments of one event with different lengths: the second is a
// length mismatch, whichever comes first.
func TestReassemblyTwoFirstLengths(t *testing.T) {
	rnd := rand.New(rand.NewPCG(4, 13))
	ev := event(rnd, srcA, 2, 8, 2000)
	segs := testutil.Segments(ev, 1000, 0)
	other := segs[0]
	other.Length = 1500
	r := newRig(t)
	r.send(other, segs[0], segs[1])
	r.check(nil, map[string]uint64{"stored": 1, "length mismatch": 2})
}

// Events of several sources (IPv4 and IPv6), data ids and event numbers,
// their segments interleaved and some with a kept LB header (v2, v3): each
// is delivered whole, once. The same tick and data id from two sources
// are two events.
func TestReassemblyInterleaved(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 13))
	var evs []testutil.Event
	var queues [][]testutil.Segment
	for i, src := range []net.IP{srcA, srcB} {
		for _, id := range []uint16{0, 1, 0xffff} {
			for _, tick := range []uint64{0, 1, 1 << 63} {
				ev := event(rnd, src, id, tick, 1+rnd.IntN(6000))
				evs = append(evs, ev)
				lb := []int{0, 2, 3}[(i+int(id)+int(tick&1))%3]
				segs := testutil.Segments(ev, 500+rnd.IntN(1000), lb)
				for j := range segs {
					if lb != 0 {
						segs[j].Port = 20000 + uint16(tick%16)
					}
				}
				queues = append(queues, segs)
			}
		}
	}
	r := newRig(t)
	stored := uint64(0)
	for len(queues) > 0 {
		k := rnd.IntN(len(queues))
		r.send(queues[k][0])
		if len(queues[k]) > 1 {
			stored++
		}
		if queues[k] = queues[k][1:]; len(queues[k]) == 0 {
			queues = slices.Delete(queues, k, k+1)
		}
	}
	var want [][]byte
	for _, ev := range evs {
		want = append(want, ev.Data)
	}
	r.check(want, map[string]uint64{"stored": stored})
}

// A kept LB header with a bad magic, version or next protocol is dropped.
func TestReassemblyBadLB(t *testing.T) {
	s := testutil.Segments(testutil.Event{Src: srcA, Data: []byte{1, 2, 3}}, 100, 2)[0]
	s.Port = 20001
	r := newRig(t)
	good := s.Headers()[:16]
	for _, i := range []int{0, 1, 2, 3} { // L, B, version, next protocol
		s.LBBytes = slices.Clone(good)
		s.LBBytes[i] ^= 0x40
		r.send(s)
	}
	s.LBBytes = nil
	s.LB = 4
	r.send(s)
	s.LB = 3
	r.send(s)
	r.check([][]byte{{1, 2, 3}}, map[string]uint64{"bad lb header": 5})
}

// The caps: a flood of first segments of 1 GiB events holds 4 of them and
// evicts the oldest for each new one; their late segments are counted.
func TestReassemblyCaps(t *testing.T) {
	r := newRig(t)
	first := func(tick uint64) testutil.Segment {
		return testutil.Segment{Src: srcA, Tick: tick, Length: 1 << 30, Payload: []byte{1}, RE0: 0x10, Port: 19522}
	}
	for tick := range uint64(10) {
		r.send(first(tick))
	}
	r.check(nil, map[string]uint64{"stored": 10, "evicted": 6})
	late := first(0)
	late.Offset = 1
	r.send(late)
	r.check(nil, map[string]uint64{"stored": 10, "evicted": 6, "late": 1})
	// 1025 small events: the events cap evicts one more than the byte cap
	for tick := range uint64(1025) {
		s := first(100 + tick)
		s.Length = 2
		r.send(s)
	}
	r.check(nil, map[string]uint64{"stored": 1035, "evicted": 6 + 4 + 1, "late": 1})
}

// segmenterMeta is the tx metadata of one segment, in the schema's slots.
func segmenterMeta(t *testing.T, s *packet.Schema, seg testutil.Segment, lb int) []packet.Value {
	h, ok := s.Header("tx")
	if !ok {
		t.Fatal("no tx metadata")
	}
	addr := func(ip net.IP) packet.Value {
		if len(ip) == 4 {
			return packet.V(uint64(binary.BigEndian.Uint32(ip)))
		}
		return packet.Value{Hi: binary.BigEndian.Uint64(ip[:8]), Lo: binary.BigEndian.Uint64(ip[8:])}
	}
	v6, dst := uint64(0), testutil.IPv4(0).DstIP // testutil's addresses
	if len(seg.Src) == 16 {
		v6, dst = 1, testutil.IPv6(0).DstIP
	}
	vals := map[string]packet.Value{
		"v6": packet.V(v6), "lb_version": packet.V(uint64(lb)), "data_id": packet.V(uint64(seg.DataID)),
		"offset": packet.V(uint64(seg.Offset)), "length": packet.V(uint64(seg.Length)), "tick": packet.V(seg.Tick),
		"entropy": packet.V(0x1234), "src": addr(seg.Src), "dst": addr(dst), "sport": packet.V(46000), "dport": packet.V(uint64(seg.Port)),
		"smac": packet.V(0x020000000001), "dmac": packet.V(0x020000000002),
	}
	meta := make([]packet.Value, s.MetaFields)
	for i, f := range h.Fields {
		meta[h.MetaBase+i] = vals[f.Name]
	}
	return meta
}

// The segmenter model's frames: gopacket finds their lengths and
// checksums right, and the reassembler makes the events of them again.
func TestSegmenterToReassembler(t *testing.T) {
	md := testutil.Model(t, "ejfat/segmenter.nsc")
	g, _ := md.Graph("Segmenter")
	seg, err := sim.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(6, 13))
	r := newRig(t)
	var want [][]byte
	for i, src := range []net.IP{srcA, srcB, srcA, srcB} {
		ev := event(rnd, src, uint16(i), uint64(1000+i), 100+rnd.IntN(5000))
		want = append(want, ev.Data)
		lb := 2 + i/2
		for _, s := range testutil.Segments(ev, 1000, lb) {
			s.Port = 20003 // the LB kept its header
			var out []byte
			seg.RunMeta(g.Node("Payload"), s.Payload, segmenterMeta(t, md.Schema, s, lb), func(_ *dataflow.Node, data []byte) { out = bytes.Clone(data) })
			if want := s.Frame(t); !bytes.Equal(out, want) {
				t.Fatalf("segment %d of event %d: differs from gopacket's\n got % x\nwant % x", s.Offset, i, out[:min(len(out), 80)], want[:min(len(want), 80)])
			}
			r.frame(out)
		}
	}
	r.check(want, map[string]uint64{"stored": r.drops()["stored"]})
}

// FuzzReassembler runs a script of segments of three events through the
// reassembler: each step sends a segment as it is, with its offset or
// length mangled, or cut short, or moves the clock. No panic, every frame
// ends somewhere, what is delivered is (a prefix, when a mangled first
// segment set a shorter length, of) the event of its key, and no event is
// delivered twice within a timeout.
func FuzzReassembler(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 2, 0, 1, 0, 1, 1, 1, 5, 1, 0, 0})
	f.Add([]byte{0, 2, 0, 0, 1, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0x7e, 0, 1, 0, 0, 2, 0})
	f.Add([]byte{2, 0, 4, 2, 0, 0, 2, 1, 7, 2, 1, 0, 2, 0, 0})
	f.Add([]byte{2, 0, 0, 2, 0, 0}) // a one-segment event, twice
	rnd := rand.New(rand.NewPCG(7, 13))
	evs := []testutil.Event{event(rnd, srcA, 1, 1, 2500), event(rnd, srcB, 1, 1, 900), event(rnd, srcA, 2, 1, 1)}
	var segs [][]testutil.Segment
	for _, ev := range evs {
		segs = append(segs, testutil.Segments(ev, 1000, 0))
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		r := newRig(t)
		last := map[int]time.Time{}
		for ; len(script) >= 3; script = script[3:] {
			e, arg := int(script[0])%len(evs), int(script[2])
			s := segs[e][int(script[1])%len(segs[e])]
			frame := s.Frame(t)
			switch arg % 8 {
			case 4:
				s.Offset = s.Length + uint32(arg)
				frame = s.Frame(t)
			case 5:
				s.Length ^= uint32(arg)
				frame = s.Frame(t)
			case 6:
				r.now = r.now.Add(time.Duration(arg) * 4 * time.Millisecond)
				continue
			case 7:
				frame = frame[:arg%len(frame)]
			}
			before, delivered := total(r.m.Counters()), len(r.got)
			r.frame(frame)
			if total(r.m.Counters()) == before {
				t.Fatalf("a frame ended nowhere")
			}
			if len(r.got) == delivered {
				continue
			}
			if got := r.got[len(r.got)-1]; !bytes.HasPrefix(evs[e].Data, got) {
				t.Fatalf("event %d delivered as % x", e, got)
			}
			if at, ok := last[e]; ok && r.now.Sub(at) < 500*time.Millisecond {
				t.Fatalf("event %d delivered twice within %v", e, r.now.Sub(at))
			}
			last[e] = r.now
		}
	})
}

// Bytes after the UDP datagram (Ethernet padding, a trailer) are not
// payload; a UDP length longer than the frame or shorter than the headers
// is dropped.
func TestReassemblyUDPLength(t *testing.T) {
	ev := testutil.Event{Src: srcA, Data: []byte("tiny")}
	s := testutil.Segments(ev, 100, 0)[0]
	r := newRig(t)
	padded := append(s.Frame(t), make([]byte, 12)...)
	r.frame(padded)
	r.check([][]byte{ev.Data}, map[string]uint64{})
	s.Tick++
	for _, udpLen := range []uint16{8 + 20 - 1, 8 + 20 + 4 + 1} {
		f := s.Frame(t)
		binary.BigEndian.PutUint16(f[14+20+4:], udpLen)
		binary.BigEndian.PutUint16(f[14+20+6:], 0) // no checksum
		r.frame(f)
	}
	r.check([][]byte{ev.Data}, map[string]uint64{"udp length": 2})
}

// A frame whose place expires or evicts another event is judged by its own
// fate: LastDrop names the frame's drop (stored), or none when it completes
// an event, never the other event's timeout or eviction.
func TestReassemblyLastDropIsTheFrames(t *testing.T) {
	rnd := rand.New(rand.NewPCG(4, 13))
	old := testutil.Segments(event(rnd, srcA, 1, 5, 3000), 1000, 0)
	ev := event(rnd, srcA, 2, 6, 1000)
	r := newRig(t)
	r.send(old[0])
	r.now = r.now.Add(time.Second) // old's timeout passes before ev arrives
	r.send(testutil.Segments(ev, 1000, 0)...)
	if k, dropped := r.m.LastDrop(); dropped {
		t.Errorf("the frame completing an event reports drop %v", k)
	}
	r.check([][]byte{ev.Data}, map[string]uint64{"stored": 1, "timeout": 1})
}
