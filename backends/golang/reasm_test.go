package golang_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat/reasmfast"
	"github.com/dragonet-go/nsc/ejfat/reasmsock"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/frame"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// step is a frame and how far the clock moves before it.
type step struct {
	frame []byte
	wait  time.Duration
}

// reasmCorpus builds segment streams from the spec (testutil.Segment):
// events in order, reversed, shuffled, every segment twice, lost segments
// (the clock runs past the timeout, then late segments), overlapping and
// out-of-bounds segments, two first segments with different lengths,
// zero and huge lengths, bad RE bytes, kept LB headers (v2, v3), a port
// that is no data port, empty payloads, interleaved events of several
// sources, data ids and ticks, and more events at once than the state
// holds.
func reasmCorpus(t testing.TB) []step {
	rnd := rand.New(rand.NewPCG(13, 17))
	var steps []step
	add := func(wait time.Duration, segs ...testutil.Segment) {
		for _, s := range segs {
			steps = append(steps, step{s.Frame(t), wait})
			wait = 0
		}
	}
	srcs := []net.IP{net.IPv4(10, 0, 0, 1).To4(), net.IPv4(10, 0, 0, 2).To4(), net.ParseIP("fe80::9")}
	ev := func(i int, n int) testutil.Event {
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(rnd.Uint32())
		}
		return testutil.Event{Src: srcs[i%len(srcs)], DataID: uint16(i % 5), Tick: uint64(1000 + i), Data: data}
	}
	tick := 0
	next := func(n int) testutil.Event { tick++; return ev(tick, n) }
	for _, order := range []string{"in order", "reversed", "shuffled", "twice"} {
		for range 6 {
			segs := testutil.Segments(next(1+rnd.IntN(5000)), 1+rnd.IntN(1500), 0)
			switch order {
			case "reversed":
				slices.Reverse(segs)
			case "shuffled":
				rnd.Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
			case "twice":
				segs = append(segs, segs...)
				rnd.Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
			}
			add(time.Millisecond, segs...)
		}
	}
	// Kept LB headers, on the ports that keep them; a port that is no data
	// port.
	for _, lb := range []int{2, 3} {
		segs := testutil.Segments(next(3000), 1000, lb)
		for i := range segs {
			segs[i].Port = 20005
		}
		add(0, segs...)
	}
	notData := testutil.Segments(next(100), 100, 0)
	notData[0].Port = 21000
	add(0, notData...)
	// Loss: a segment never comes, the clock passes the timeout, a late
	// segment of the expired event comes, then the key is forgotten.
	lost := testutil.Segments(next(3000), 1000, 0)
	add(0, lost[0], lost[2])
	add(600*time.Millisecond, lost[1])
	add(600*time.Millisecond, lost[1], lost[0], lost[2])
	// The timeout's edges: 1 ns short of it the event lives, at it the
	// event is gone.
	edge := testutil.Segments(next(3000), 1000, 0)
	add(0, edge[0])
	add(500*time.Millisecond-time.Nanosecond, edge[1])
	add(time.Nanosecond, edge[2])
	// A timeout after it ended, its key is forgotten: a segment begins
	// the event again.
	add(500*time.Millisecond, edge[0])
	// A segment overlapping one arrived byte.
	one := next(3000)
	first, second := testutil.Segments(one, 1000, 0)[0], testutil.Segments(one, 1000, 0)[1]
	second.Offset, second.Payload = 999, one.Data[999:1999]
	add(0, first, second)
	// Overlap and duplicates cut differently; out of bounds; a length
	// mismatch; two first segments with different lengths; zero and huge
	// lengths; bad RE bytes; empty payloads.
	e := next(4000)
	a, b := testutil.Segments(e, 1000, 0), testutil.Segments(e, 1500, 0)
	add(0, a[0], b[0], b[1], a[2], a[3], a[1], b[2])
	bad := testutil.Segments(next(3000), 1000, 0)
	oob := bad[1]
	oob.Offset = 2500
	mism := bad[2]
	mism.Length = 3001
	zero := bad[0]
	zero.Length = 0
	huge := bad[0]
	huge.Length = 2 << 30
	re0, re1 := bad[0], bad[1]
	re0.RE0, re1.RE1 = 0x20, 1
	empty := bad[0]
	empty.Payload = nil
	emptyNext := bad[1] // right after the bytes that arrived
	emptyNext.Payload = nil
	add(0, bad[0], oob, mism, zero, huge, re0, re1, empty, emptyNext, bad[1], bad[2])
	f1, f2 := testutil.Segments(next(2000), 1000, 0), testutil.Segments(next(2000), 1000, 0)
	f2[0].Tick, f2[0].DataID, f2[0].Src, f2[0].Length = f1[0].Tick, f1[0].DataID, f1[0].Src, 2500
	add(0, f1[0], f2[0], f1[1])
	// No UDP checksum (0, as a socket's datagrams are framed: the kernel
	// checked it), over IPv4: a whole event; then IPv4 lengths that end
	// short of the UDP header or past the frame (the IPv4 checksum
	// redone), which no check passes.
	noSum := func(s testutil.Segment, total int) []byte {
		f := s.Frame(t)
		ip := f[14:34]
		clear(f[34+6 : 34+8])
		if total > 0 {
			binary.BigEndian.PutUint16(ip[2:], uint16(total))
			clear(ip[10:12])
			binary.BigEndian.PutUint16(ip[10:], packet.Fold(packet.Sum(ip, 0)))
		}
		return f
	}
	for _, s := range testutil.Segments(next(3000), 700, 0) {
		steps = append(steps, step{frame: noSum(s, 0)})
	}
	shortLen := testutil.Segments(next(2000), 700, 0)
	steps = append(steps, step{frame: noSum(shortLen[0], 24)}, step{frame: noSum(shortLen[1], 2000)}, step{frame: noSum(shortLen[2], 0)})
	// Interleaved events.
	var inter []testutil.Segment
	for range 10 {
		inter = append(inter, testutil.Segments(next(1+rnd.IntN(4000)), 700, 0)...)
	}
	rnd.Shuffle(len(inter), func(i, j int) { inter[i], inter[j] = inter[j], inter[i] })
	add(0, inter...)
	// More events in progress than the state holds (1024): the oldest are
	// evicted, their later segments late.
	var halves []testutil.Segment
	var seconds []testutil.Segment
	for range 1100 {
		segs := testutil.Segments(next(200), 100, 0)
		halves, seconds = append(halves, segs[0]), append(seconds, segs[1])
	}
	add(0, halves...)
	add(0, seconds...)
	// The evicted events' keys were remembered for at most 1024 finished
	// events: the oldest are forgotten, their segments begin events again.
	add(0, seconds[:80]...)
	add(time.Second, testutil.Segments(next(300), 100, 0)...)
	return steps
}

// reasmPair is the generated reassembler and the interpreter on the same
// graph, tables and logical clock (*now).
func reasmPair(t testing.TB, now *time.Time) (*reasmfast.Pipeline, *sim.Machine) {
	md := testutil.Model(t, "ejfat/reassembler.nsc")
	g, _ := md.Graph("Reassembler")
	load := func(s *packet.Schema) []*table.Table {
		ts, err := table.Load(s, "entries", strings.NewReader(testutil.ReassemblerEntries))
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	mach, err := sim.New(g, load(md.Schema))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := reasmfast.New(load(reasmfast.Schema))
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return *now }
	mach.SetClock(clock)
	pl.SetClock(clock)
	return pl, mach
}

// FuzzReassemblerFastPath runs frames (segments of the corpus, and what
// the fuzzer makes of them) through both, one state carried across
// inputs: the same outcome and bytes for every frame, so no event is
// delivered twice or differently, and nothing panics.
func FuzzReassemblerFastPath(f *testing.F) {
	for _, st := range reasmCorpus(f)[:300] {
		f.Add(st.frame, uint16(st.wait/time.Millisecond))
	}
	now := time.Unix(1000, 0)
	pl, mach := reasmPair(f, &now)
	var buf []byte
	f.Fuzz(func(t *testing.T, frame []byte, waitMS uint16) {
		now = now.Add(time.Duration(waitMS%1000) * time.Millisecond)
		if want, got := difftest.Interp(mach, frame), difftest.Fast(pl, frame, &buf); want != got {
			t.Fatalf("interpreter %s, fast path %s (bytes equal: %v)", want.Where, got.Where, want.Data == got.Data)
		}
	})
}

// The generated reassembler against the interpreter, on one logical clock:
// the same port for every segment, the same events delivered (bytes), and
// every counter the same — timeouts and evictions included.
func TestReassemblerAgainstInterpreter(t *testing.T) {
	now := time.Unix(1000, 0)
	pl, mach := reasmPair(t, &now)
	var buf []byte
	where := map[string]int{}
	bad := 0
	for i, st := range reasmCorpus(t) {
		now = now.Add(st.wait)
		want, got := difftest.Interp(mach, st.frame), difftest.Fast(pl, st.frame, &buf)
		where[want.Where]++
		if want != got && bad < 5 {
			bad++
			t.Errorf("frame %d: interpreter %s, fast path %s (bytes equal: %v)", i, want.Where, got.Where, want.Data == got.Data)
		}
	}
	if diff := cmp.Diff(mach.Counters(), golang.Counters(pl)); diff != "" {
		t.Errorf("counters differ (-interp +fast path):\n%s", diff)
	}
	for _, w := range []string{"sink Deliver", "drop Duplicate: duplicate", "drop Overlap: overlap", "drop Late: late",
		"drop LengthMismatch: length mismatch", "drop OutOfBounds: out of bounds", "drop ZeroLength: zero length", "drop TooLarge: too large"} {
		if where[w] == 0 {
			t.Errorf("no frame went to %s (%v)", w, where)
		}
	}
	if c := mach.Counters().Drops; c[sim.DropKey{Node: "events", Reason: sim.ReasonTimeout}] == 0 || c[sim.DropKey{Node: "events", Reason: sim.ReasonEvicted}] == 0 {
		t.Errorf("no timeout or no eviction: %v", c)
	}
	t.Logf("outcomes: %v", where)
}

// TestReassemblerFromSocket: the reassembler embedded in a receiver's
// sockets (LinuxUDPRecv) and generated from the socket on
// (ejfat/reasmsock), against the interpreter on the whole embedded graph,
// one logical clock: every frame of the corpus, with datagrams the kernel
// drops (bad IPv4 or UDP checksums, a fragment, a UDP length past the
// frame, ICMP), goes through the interpreter from the wire; what reaches
// the socket goes through the generated code too, its headers where the
// kernel's parse left them, with the same outcome and bytes, and the
// counters of the graph behind the socket are the same.
func TestReassemblerFromSocket(t *testing.T) {
	em := testutil.Embedding(t, "Reassembler", "LinuxUDPRecv", "ejfat/reassembler.nsc", "ejfat/hosts.nsc")
	load := func(s *packet.Schema) []*table.Table {
		ts, err := table.Load(s, "entries", strings.NewReader(testutil.ReassemblerEntries))
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	mach, err := sim.New(em.Graph, load(em.Graph.Schema))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := reasmsock.New(load(reasmsock.Schema))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	mach.SetClock(clock)
	pl.SetClock(clock)

	steps := reasmCorpus(t)
	good := testutil.Segments(testutil.Event{Src: net.IPv4(10, 9, 0, 1).To4(), DataID: 1, Tick: 7, Data: make([]byte, 3000)}, 1000, 0)
	spoil := func(s testutil.Segment, f func(b []byte)) step {
		b := s.Frame(t)
		f(b)
		return step{frame: b}
	}
	steps = append(steps,
		spoil(good[0], func(b []byte) { b[14+10] ^= 1 }),                     // IPv4 checksum
		spoil(good[0], func(b []byte) { b[len(b)-1] ^= 1 }),                  // UDP checksum
		spoil(good[0], func(b []byte) { b[34+4]++ }),                         // UDP length past the frame
		spoil(good[1], func(b []byte) { b[14+6] |= 0x20; b[14+10] ^= 0x20 }), // more fragments, IPv4 checksum kept
		spoil(good[1], func(b []byte) { b[14+9] = 1; b[14+10]-- }),           // ICMP, checksum kept
		step{frame: good[2].Frame(t)})
	behind := dataflow.Reachable(em.Graph.Node("RxSocket"))
	var buf []byte
	where := map[string]int{}
	bad := 0
	for i, st := range steps {
		now = now.Add(st.wait)
		want := difftest.Interp(mach, st.frame)
		where[want.Where]++
		if want.Where == "drop RxNotForUs: not a datagram for the socket" {
			continue // the kernel's
		}
		at := socketAt(st.frame)
		pl.At = &at
		if got := difftest.Fast(pl, st.frame, &buf); want != got && bad < 5 {
			bad++
			t.Errorf("frame %d: interpreter %s, generated %s (bytes equal: %v)", i, want.Where, got.Where, want.Data == got.Data)
		}
	}
	if where["drop RxNotForUs: not a datagram for the socket"] < 6 || where["sink Deliver"] == 0 {
		t.Errorf("outcomes: %v", where)
	}
	// The counters behind the socket: the kernel's nodes never ran in the
	// generated code.
	want := mach.Counters()
	for n := range want.Nodes {
		if nd := em.Graph.Node(n); nd != nil && !behind[nd] {
			delete(want.Nodes, n)
		}
	}
	for k := range want.Drops {
		if nd := em.Graph.Node(k.Node); nd != nil && !behind[nd] {
			delete(want.Drops, k)
		}
	}
	if diff := cmp.Diff(want, golang.Counters(pl)); diff != "" {
		t.Errorf("counters differ (-interp +generated):\n%s", diff)
	}
}

// socketAt is where a receiver's kernel leaves the headers of a frame it
// hands a socket: Ethernet, IPv4 (with its options) or IPv6, UDP.
func socketAt(f []byte) fastpath.At {
	at := fastpath.NewAt()
	id := func(name string) int {
		h, _ := reasmsock.Schema.Header(name)
		return h.ID
	}
	at.Off[id("ethernet")], at.Len[id("ethernet")] = 0, frame.EthernetLen
	ip, n := id("ipv6"), frame.IPv6Len
	if frame.Ethernet(f).Type() == frame.TypeIPv4 {
		ip, n = id("ipv4"), frame.IPv4(f[frame.EthernetLen:]).HeaderLength()
	}
	at.Off[ip], at.Len[ip] = frame.EthernetLen, n
	at.Off[id("udp")], at.Len[id("udp")] = frame.EthernetLen+n, frame.UDPLen
	at.Cur = frame.EthernetLen + n + frame.UDPLen
	return at
}

// BenchmarkReassembler: the generated reassembler's Process per segment
// (Ethernet, IPv4 and UDP checked — the UDP checksum sums the segment —,
// then placed) next to copy() of the same payload bytes, events of 128
// segments in order. The clock moves past the timeout between rounds, so
// the same events reassemble again.
func BenchmarkReassembler(b *testing.B) {
	for _, size := range []int{1 << 10, 8 << 10} {
		var frames [][]byte
		var payloads int
		for i := range 8 {
			data := make([]byte, 128*size)
			ev := testutil.Event{Src: net.IPv4(10, 0, 0, 1).To4(), DataID: 1, Tick: uint64(i), Data: data}
			for _, s := range testutil.Segments(ev, size, 0) {
				frames = append(frames, s.Frame(b))
				payloads += len(s.Payload)
			}
		}
		name := map[int]string{1 << 10: "1KiB", 8 << 10: "8KiB"}[size]
		b.Run(name+"/generated", func(b *testing.B) {
			now := time.Unix(1000, 0)
			pl, _ := reasmPair(b, &now)
			buf := make([]byte, 2*packet.Headroom+len(frames[0]))
			b.SetBytes(int64(size))
			b.ReportAllocs()
			delivered := 0
			for i := 0; b.Loop(); i++ {
				if i%len(frames) == 0 {
					now = now.Add(time.Second)
				}
				f := frames[i%len(frames)]
				n := copy(buf[packet.Headroom:], f)
				if r := pl.Process(buf, packet.Headroom, n); r.Sink >= 0 {
					delivered++
				}
			}
			if b.N >= len(frames) && delivered == 0 {
				b.Fatal("no event delivered")
			}
		})
		b.Run(name+"/copy", func(b *testing.B) {
			dst := make([]byte, 128*size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				f := frames[i%len(frames)]
				off := (i % 128) * size
				copy(dst[off:off+size], f[len(f)-size:])
			}
		})
	}
}
