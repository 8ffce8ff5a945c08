package embed_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// rdmaSinks are the RDMA NIC's sinks behind which its place ran.
var rdmaSinks = []string{"RxPlaced", "RxEvent", "RxDuplicate", "RxOverlap", "RxLate", "RxLengthMismatch", "RxOutOfBounds", "RxZeroLength", "RxTooLarge"}

// The RDMA NIC places segments of events up to 1 MiB itself: the LPG's
// place is taken over behind every sink its place feeds, and stays in
// software, behind the NIC's own test, for longer events; the checks the
// NIC made before placing are gone behind those sinks, the checksum
// checks everywhere the NIC checked.
func TestRxPlaceRDMA(t *testing.T) {
	em := testutil.Embedding(t, "Reassembler", "RDMA", "ejfat/reassembler.nsc", "ejfat/rdma.nsc")
	p := place(t, em, "Place")
	if p.Kind != embed.Split || p.Hardware != "RxPlace" || p.Guard != "re.Length > 0x100000" {
		t.Errorf("Place: %+v", p)
	}
	if !strings.Contains(p.Counterexample, "re.Length") {
		t.Errorf("Place's counterexample %q says nothing of the event length", p.Counterexample)
	}
	// Behind RxOther (frames the NIC neither checks nor places) the LPG
	// parses again (its entry, kept at the join) and drops them itself:
	// none of them is a whole UDP datagram.
	if !slices.Equal(p.Serves, []string{"RxL4Good", "RxSoftSegment"}) {
		t.Errorf("Place runs in software behind %v", p.Serves)
	}
	for _, n := range []string{"V4Csum", "UDPCsum"} {
		if p := place(t, em, n); len(p.Serves) != 0 {
			t.Errorf("%s runs behind %v, want nowhere: the NIC checks every UDP datagram", n, p.Serves)
		}
	}
	if got := serving(em, "RxOther"); !slices.Equal(got, []string{"RxQueue", "IsUDP", "NotUDP", "Fragment"}) {
		t.Errorf("behind RxOther: %v, want the LPG's parse and its drops of what is not a whole UDP datagram", got)
	}
	for _, n := range []string{"IsUDP", "RECheck", "UDPLength", "V4Src", "Ports"} {
		p := place(t, em, n)
		for _, s := range rdmaSinks {
			if slices.Contains(p.Serves, s) {
				t.Errorf("%s still runs behind %s", n, s)
			}
		}
		if !strings.Contains(p.Reason, "done by RDMA before its RxPlace behind RxPlaced, RxEvent") {
			t.Errorf("%s: %s", n, p.Reason)
		}
	}
	// Behind each sink the place feeds, only the end its port leads to.
	for s, want := range map[string]string{"RxEvent": "Deliver", "RxPlaced": "Stored", "RxDuplicate": "Duplicate", "RxTooLarge": "TooLarge"} {
		if got := serving(em, s); !slices.Equal(got, []string{want}) {
			t.Errorf("behind %s: %v, want %s", s, got, want)
		}
	}
}

// Where the NIC's place is not the LPG's, or it could run out first, the
// place stays in software with the reason and a class of the packets
// concerned.
func TestRxPlaceRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		edits []string // old, new pairs applied to rdma.nsc
		want  string
	}{
		{"wrong offset", []string{"at re.Offset size", "at re.Offset + 8 size"}, "RDMA's RxPlace places at re.Offset + 8, Place at re.Offset"},
		{"wrong size", []string{"size rx.size", "size udp.length - 28"}, "RDMA's RxPlace places udp.length - 28 bytes, Place rx.size"},
		{"other key", []string{"op set { rx.src = ipv4.src }", "op set { rx.src = ipv4.dst }"}, "V4Src writes rx.src, which V4Src reads, and no hardware node of RDMA computes it"},
		{"no key", []string{"op set { rx.src = ipv4.src }", "op nop"}, "V4Src writes rx.src"},
		{"one sink, two ports", []string{"port overlap -> Overlap", "port overlap -> Duplicate", "node Overlap [software] { op emit }", ""},
			"RDMA's RxPlace reaches RxDuplicate by 2 ports (duplicate, overlap)"},
		{"unchecked", []string{"op test re.Version == 1 && re.Rsvd == 0", "op test re.Version == 1"}, "a segment RDMA's RxPlace placed ends at BadRE in the LPG"},
		{"small memory", []string{"place_memory 1073741824", "place_memory 536870912"}, "RDMA holds 536870912 bytes of event buffers and state events may have 1073741824 in progress"},
		{"few events", []string{"place_events 1024", "place_events 512"}, "RDMA tracks 512 events and state events keeps up to 1024 in progress"},
	} {
		t.Run(c.name, func(t *testing.T) {
			em := rdmaVariant(t, c.edits...)
			p := place(t, em, "Place")
			if p.Kind != embed.Software || !strings.Contains(p.Reason, c.want) || p.Counterexample == "" {
				t.Errorf("Place: %s %q (counterexample %q), want software because %q, with a class", p.Kind, p.Reason, p.Counterexample, c.want)
			}
		})
	}
}

// rdmaVariant embeds the reassembler into models/ejfat/rdma.nsc with the
// edits (old, new pairs) made.
func rdmaVariant(t *testing.T, edits ...string) *embed.Embedding {
	t.Helper()
	src, err := fs.ReadFile(models.FS, "ejfat/rdma.nsc")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(edits); i += 2 {
		if !bytes.Contains(src, []byte(edits[i])) {
			t.Fatalf("rdma.nsc has no %q", edits[i])
		}
		src = bytes.Replace(src, []byte(edits[i]), []byte(edits[i+1]), 1)
	}
	read := func(n string) ([]byte, error) {
		if n == "ejfat/rdma.nsc" {
			return src, nil
		}
		return fs.ReadFile(models.FS, n)
	}
	m, err := lang.Loader{ReadFile: read, Library: models.FS}.Load("ejfat/reassembler.nsc", "ejfat/rdma.nsc")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := m.Graph("Reassembler")
	pr, _ := m.Graph("RDMA")
	em, err := embed.Embed(l, pr)
	if err != nil {
		t.Fatal(err)
	}
	return em
}

// The embedded graph delivers the same events and drops and counts the
// same segments as the reassembler alone, in the interpreter: events in
// order, shuffled, duplicated and with segments lost, over IPv4 and IPv6,
// with and without the LB header, segments with bad checksums and bad RE
// headers, and an event longer than the NIC's buffers. A NIC that places
// at the wrong offset (refused, so the LPG's place runs again behind it)
// must differ.
func TestRxPlaceDifferential(t *testing.T) {
	frames := reasmTraffic(t, rand.New(rand.NewPCG(13, 1)))
	for _, c := range []struct {
		name string
		em   func(t *testing.T) *embed.Embedding
		same bool
	}{
		{"RDMA", func(t *testing.T) *embed.Embedding { return rdmaVariant(t) }, true},
		{"I82599", func(t *testing.T) *embed.Embedding {
			return testutil.Embedding(t, "Reassembler", "I82599", "ejfat/reassembler.nsc", "inet/i82599.nsc")
		}, true},
		{"RDMA placing at the wrong offset", func(t *testing.T) *embed.Embedding {
			return rdmaVariant(t, "at re.Offset size", "at re.Offset + 8 size")
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			em := c.em(t)
			lpg := runReasm(t, em.LPG, nil, frames)
			emb := runReasm(t, em.Graph, em, frames)
			if diff := cmp.Diff(lpg, emb); (diff == "") != c.same {
				t.Errorf("LPG alone vs embedded, want same %v (-+):\n%s", c.same, diff)
			}
			if len(lpg.Events) < 10 || lpg.Drops["stored"] == 0 || lpg.Drops["duplicate"] == 0 || lpg.Drops["udp checksum"] == 0 {
				t.Errorf("the traffic does not exercise the graph: %d events, drops %v", len(lpg.Events), lpg.Drops)
			}
		})
	}
}

type reasmResult struct {
	Events [][]byte
	Drops  map[string]uint64
}

// runReasm runs frames through g on a logical clock (1 ms a frame) and
// keeps what reaches the LPG's Deliver and the drops by reason.
func runReasm(t *testing.T, g *dataflow.Graph, em *embed.Embedding, frames [][]byte) reasmResult {
	t.Helper()
	ts, err := table.Load(g.Schema, "entries", strings.NewReader(testutil.ReassemblerEntries))
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(g, ts)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	m.SetClock(func() time.Time { return now })
	var out reasmResult
	for _, f := range frames {
		now = now.Add(time.Millisecond)
		m.Run(f, func(sink *dataflow.Node, data []byte) {
			name := sink.Name
			if em != nil {
				name = em.Origin[name].LPG
			}
			if name != "Deliver" {
				t.Fatalf("frame left by %s", sink.Name)
			}
			out.Events = append(out.Events, bytes.Clone(data))
		})
	}
	out.Drops = map[string]uint64{}
	for k, v := range m.Counters().Drops {
		out.Drops[k.Reason] += v
	}
	slices.SortFunc(out.Events, bytes.Compare)
	return out
}

// reasmTraffic is reassembler traffic built from the spec by testutil.
func reasmTraffic(t *testing.T, rnd *rand.Rand) [][]byte {
	var frames [][]byte
	add := func(segs ...testutil.Segment) {
		for _, s := range segs {
			frames = append(frames, s.Frame(t))
		}
	}
	srcs := []net.IP{net.IPv4(10, 0, 0, 1).To4(), net.ParseIP("fd00::7")}
	for i := range 24 {
		data := make([]byte, 500+rnd.IntN(6000))
		for j := range data {
			data[j] = byte(rnd.Uint32())
		}
		ev := testutil.Event{Src: srcs[i%2], DataID: uint16(1 + i%3), Tick: uint64(100 + i), Data: data}
		lb, port := 0, uint16(19522)
		if i%4 == 1 {
			lb, port = 2+i%2, 20003
		}
		segs := testutil.Segments(ev, 700+rnd.IntN(800), lb)
		for k := range segs {
			segs[k].Port = port
		}
		switch i % 6 {
		case 1:
			rnd.Shuffle(len(segs), func(a, b int) { segs[a], segs[b] = segs[b], segs[a] })
		case 2:
			segs = append(segs, segs[len(segs)/2], segs[0])
		case 3:
			segs = slices.Delete(segs, len(segs)/2, len(segs)/2+1) // lost: never complete
		case 4:
			slices.Reverse(segs)
		case 5:
			segs[0].RE1 = 1 // a bad RE header
		}
		add(segs...)
	}
	// An event longer than the NIC's buffers, in 8 KiB segments.
	long := make([]byte, 1<<20+4096)
	for j := range long {
		long[j] = byte(j * 7)
	}
	add(testutil.Segments(testutil.Event{Src: srcs[0], DataID: 9, Tick: 7, Data: long}, 8192, 0)...)
	// Bad UDP checksums on a segment and on a whole event's first copy.
	ev := testutil.Event{Src: srcs[0], DataID: 5, Tick: 5, Data: bytes.Repeat([]byte("ejfat"), 300)}
	segs := testutil.Segments(ev, 600, 0)
	for _, s := range segs {
		f := s.Frame(t)
		f[len(f)-1] ^= 0xff
		frames = append(frames, f)
	}
	add(segs...)
	if len(frames) < 100 {
		panic(fmt.Sprint("too little traffic: ", len(frames)))
	}
	return frames
}

// The reassembler joins the 82599 at its Rx entry: its checksum checks
// run only behind the sink where the NIC checked nothing; its pops of the
// UDP, IPv4 and Ethernet headers are done by the header split where the
// NIC splits, the LB header's pop stays in software (the NIC does not
// parse it), and its place stays in software (the 82599 places nothing).
func TestReassemblerI82599(t *testing.T) {
	em := testutil.Embedding(t, "Reassembler", "I82599", "ejfat/reassembler.nsc", "inet/i82599.nsc")
	for _, n := range []string{"V4Csum", "UDPCsum", "PopUDP", "PopIPv4", "PopEthernet"} {
		if p := place(t, em, n); !slices.Equal(p.Serves, []string{"RxOut"}) {
			t.Errorf("%s runs behind %v, want only RxOut", n, p.Serves)
		}
	}
	for _, n := range []string{"PopUDP", "PopIPv4", "PopEthernet"} {
		if p := place(t, em, n); !strings.Contains(p.Reason, "done by I82599's header split behind RxL4Good") {
			t.Errorf("%s: %s", n, p.Reason)
		}
	}
	if p := place(t, em, "PopLB"); !slices.Equal(p.Serves, []string{"RxOut", "RxL4Good"}) || !strings.Contains(p.Reason, "never after lb, which it does not parse") {
		t.Errorf("PopLB: %+v", p)
	}
	if p := place(t, em, "Place"); p.Kind != embed.Software || !slices.Equal(p.Serves, []string{"RxOut", "RxL4Good"}) {
		t.Errorf("Place: %+v", p)
	}
}

// A header split does not do a pop whose effect shows: here the stripped
// datagram goes to a socket, so the pop stays.
func TestSplitPopShows(t *testing.T) {
	m := testutil.ModelSource(t, `include "inet/i82599.nsc"
lpg Strip {
    node RxQueue { op input parse ethernet  port out -> IsUDP }
    node IsUDP { op test valid(udp) && valid(ipv4)  port true -> PopUDP  port false -> Other }
    node PopUDP { op pop udp  port out -> App }
    node App { op steer socket "app" }
    node Other { op drop "other" }
}
`)
	l, _ := m.Graph("Strip")
	pr, _ := m.Graph("I82599")
	em, err := embed.Embed(l, pr)
	if err != nil {
		t.Fatal(err)
	}
	if p := place(t, em, "PopUDP"); !slices.Contains(p.Serves, "RxL4Good") || !strings.Contains(p.Reason, "I82599 splits after udp, but packets leave with the bytes PopUDP's pop would remove") {
		t.Errorf("PopUDP: %+v", p)
	}
}
