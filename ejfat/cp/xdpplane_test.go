package cp_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/ejfat/cp/cptest"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
)

// xdpStates is a CP's run on one LB instance as table states: an epoch
// per state, each boundary 1000 events on, about 40 slots moved each time
// among members 0-3; at state 8 member 3 leaves (its slots unassigned in
// every live epoch), at 12 a new session takes its id at another address,
// at 16 every session goes (every calendar empty), at 17 two come back;
// sender 10.0.0.3 is allowed in states 5 to 9 beside 10.0.0.2.
func xdpStates(t *testing.T, w *calendar.Writer, specs func(string) (*packet.TableSpec, bool), n int) ([][]packet.TableEntry, []uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(14, 1))
	member := func(id uint16, host byte) calendar.Member {
		return calendar.Member{ID: id, MAC: [6]byte{2, 0, 0, 0, 0, host}, IPv4: netip.AddrFrom4([4]byte{10, 0, 1, host}),
			UDPBase: 17000 + 16*uint16(host), PortBits: 2}
	}
	members := []calendar.Member{member(0, 10), member(1, 11), member(2, 12), member(3, 13)}
	cal := calendar.Empty()
	for i := range cal {
		cal[i] = uint16(r.IntN(4))
	}
	var live []calendar.Epoch
	var states [][]packet.TableEntry
	var boundaries []uint64
	allow := func(ip uint32) packet.TableEntry {
		s, _ := specs("ipv4_src_filter_table")
		a, _ := s.ActionIndex("allow_ip_src")
		return packet.TableEntry{Table: s.Name, Entry: packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(0)}, {Value: packet.V(uint64(ip))}}, Action: a}}
	}
	for k := range n {
		switch k {
		case 8:
			members = members[:3]
			for i := range live {
				for s, m := range live[i].Calendar {
					if m == 3 {
						live[i].Calendar[s] = calendar.Unassigned
					}
				}
			}
		case 12:
			members = append(members, member(3, 23))
		case 16: // every session gone: every calendar empty
			members = nil
			for i := range live {
				live[i].Calendar = *calendar.Empty()
			}
		case 17:
			members = []calendar.Member{member(0, 10), member(1, 11)}
		}
		for range 40 * min(len(members), 1) {
			cal[r.IntN(calendar.Slots)] = uint16(r.IntN(len(members)))
		}
		for s, m := range cal {
			if int(m) >= len(members) {
				cal[s] = calendar.Unassigned
			}
		}
		b := uint64(1000 * (k + 1))
		var err error
		if live, err = calendar.Advance(live, b, cal); err != nil {
			t.Fatal(err)
		}
		es, err := w.Entries(0, live, members)
		if err != nil {
			t.Fatal(err)
		}
		state := []packet.TableEntry{allow(0x0a000002)}
		if k >= 5 && k <= 9 {
			state = append(state, allow(0x0a000003))
		}
		states = append(states, append(state, es...))
		boundaries = append(boundaries, b)
	}
	return states, boundaries
}

// lbFrame is an LB v2 frame from 10.0.0.2 to the LB at 10.0.0.1 (base).
func lbFrame(t *testing.T, tick uint64, entropy uint16, payload string) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{0, 0x11, 0x22, 0x33, 0x44, 0x55}, DstMAC: net.HardwareAddr{0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IPv4(10, 0, 0, 2), DstIP: net.IPv4(10, 0, 0, 1)}
	udp := &layers.UDP{SrcPort: 50000, DstPort: ejfat.LBPort}
	udp.SetNetworkLayerForChecksum(ip)
	h := &ejfat.LB{Magic: ejfat.LBMagic, Version: 2, Protocol: 1, Entropy: entropy, Tick: tick}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, h, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestXDPDataPlaneAtomicEpochs loads lb-2025's XDP program and has
// cp.XDPMaps apply a CP's table states (xdpStates) one after the other
// while frames run through the program (BPF_PROG_TEST_RUN) on the other
// core: every frame's verdict and bytes are the interpreter's with the
// tables of a state in force while it ran (applied before it started, up
// to the one being applied when it ended) — never a mix of two — and the
// segments of each event sent around the boundary being applied, whose
// route the states in force agree on, all leave to that one member.
func TestXDPDataPlaneAtomicEpochs(t *testing.T) {
	r, base, specs, w := loadedXDP(t)
	states, boundaries := xdpStates(t, w, specs, 20)
	interp := make([]*sim.Machine, len(states))
	for k, s := range states {
		var script bytes.Buffer
		script.WriteString(base)
		if err := packet.FormatEntries(&script, s, specs); err != nil {
			t.Fatal(err)
		}
		var err error
		if interp[k], err = ejfat.Interpreter("lb-2025", "XDP", fmt.Sprint("state ", k), &script); err != nil {
			t.Fatal(err)
		}
	}
	// Events: around every boundary, and anywhere.
	rnd := rand.New(rand.NewPCG(14, 2))
	type event struct {
		tick    uint64
		entropy uint16
		frame   []byte
	}
	var near [][]event // by state: the events around its boundary
	var anywhere []event
	for _, b := range boundaries {
		var es []event
		for tick := b - 24; tick < b+8; tick++ {
			e := uint16(rnd.Uint32())
			es = append(es, event{tick, e, lbFrame(t, tick, e, fmt.Sprint("event ", tick))})
		}
		near = append(near, es)
	}
	for range 200 {
		tick, e := rnd.Uint64N(boundaries[len(boundaries)-1]+2000), uint16(rnd.Uint32())
		anywhere = append(anywhere, event{tick, e, lbFrame(t, tick, e, "any")})
	}
	// want is the interpreter's outcome of a frame under state k.
	type outcome struct{ verdict, data string }
	cache := map[string]outcome{}
	want := func(k int, f []byte) outcome {
		key := fmt.Sprint(k, string(f))
		if o, ok := cache[key]; ok {
			return o
		}
		o := xdptest.Interp(interp[k], r.Meta, f)
		cache[key] = outcome{o.Verdict, o.Data}
		return cache[key]
	}
	plane := &cp.XDPMaps{Live: r.Live()}
	if err := plane.Apply(0, states[0], calendar.Diff{}); err != nil {
		t.Fatal(err)
	}
	var applying, applied atomic.Int64
	done := make(chan error, 1)
	took := make([]time.Duration, len(states)) // written before done
	go func() {
		for k := 1; k < len(states); k++ {
			applying.Store(int64(k))
			start := time.Now()
			if err := plane.Apply(0, states[k], calendar.Diff{}); err != nil {
				done <- fmt.Errorf("state %d: %v", k, err)
				return
			}
			took[k] = time.Since(start)
			applied.Store(int64(k))
			time.Sleep(5 * time.Millisecond)
		}
		done <- nil
	}()
	type seen struct {
		outs   map[outcome]int
		states map[int]bool
	}
	events := map[uint64]*seen{} // the near events, by tick
	runs, bad := 0, 0
	run := func(ev event, isNear bool) {
		lo := int(applied.Load())
		res, err := r.Run(ev.frame)
		if err != nil {
			t.Fatal(err)
		}
		hi := int(applying.Load())
		got := outcome{verdict: xdprun.VerdictName(res.Verdict)}
		if res.Verdict != xdprun.VerdictDrop {
			got.data = hex.EncodeToString(res.Data)
		}
		runs++
		ok := false
		for k := lo; k <= hi && !ok; k++ {
			ok = want(k, ev.frame) == got
		}
		if !ok {
			if bad++; bad <= 5 {
				t.Errorf("event %d: %s %s is no state's of %d..%d (state %d: %v)", ev.tick, got.verdict, got.data, lo, hi, lo, want(lo, ev.frame))
			}
		}
		if isNear {
			s := events[ev.tick]
			if s == nil {
				s = &seen{outs: map[outcome]int{}, states: map[int]bool{}}
				events[ev.tick] = s
			}
			s.outs[got]++
			for k := lo; k <= hi; k++ {
				s.states[k] = true
			}
		}
	}
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		// Events around the boundary being applied, a segment each, then
		// one from anywhere.
		k := int(applying.Load())
		for _, ev := range near[k] {
			run(ev, true)
		}
		run(anywhere[runs%len(anywhere)], false)
	}
	for _, ev := range anywhere { // all applied
		run(ev, false)
	}
	// Events whose route the states they met agree on: whole at one
	// member.
	whole, changed := 0, 0
	for tick, s := range events {
		var ev event
		for _, es := range near {
			for _, e := range es {
				if e.tick == tick {
					ev = e
				}
			}
		}
		routes := map[outcome]bool{}
		for k := range s.states {
			routes[want(k, ev.frame)] = true
		}
		if len(routes) > 1 {
			changed++
			continue
		}
		for o := range routes {
			if len(s.outs) != 1 || s.outs[o] == 0 {
				t.Errorf("event %d: %v, want all at %v", tick, s.outs, o)
			}
			if o.verdict == "XDP_TX" {
				whole++
			}
		}
	}
	slices.Sort(took[1:])
	t.Logf("%d frames run while %d states were applied (each in %v median, %v at most): %d not of a state in force; %d events around boundaries whole at one member, %d met states that route them differently",
		runs, len(states), took[len(took)/2].Round(time.Microsecond), took[len(took)-1].Round(time.Microsecond), bad, whole, changed)
	if whole < 100 {
		t.Errorf("only %d events forwarded whole around boundaries: too few to tell", whole)
	}
}

// loadedXDP loads lb-2025's XDP program with the base tables: the
// runner (closed with the test), the base script, the table specs and a
// calendar writer over them.
func loadedXDP(t *testing.T) (*xdprun.Runner, string, func(string) (*packet.TableSpec, bool), *calendar.Writer) {
	t.Helper()
	xdptest.Require(t)
	_, em, err := ejfat.Embedding("lb-2025", "XDP")
	if err != nil {
		t.Fatal(err)
	}
	obj, _ := xdptest.Build(t, em.Graph, em.PRG.Limits, t.TempDir(), "lb2025")
	r, err := xdprun.Load(obj)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	base := baseTables(netip.MustParseAddr("10.0.0.1"))
	ts, err := r.Tables("base", strings.NewReader(base))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTables(ts); err != nil {
		t.Fatal(err)
	}
	specs := cp.XDPTables(r)
	w, err := calendar.NewWriter(specs)
	if err != nil {
		t.Fatal(err)
	}
	return r, base, specs, w
}

// TestXDPMapsTakeOver: a second cp.XDPMaps (a restarted CP) takes over
// the maps a first one wrote, with leftovers of a write cut short (a
// calendar and a member under data-plane ids nothing names): applying the
// same state again writes no calendar or member anew (the same entries
// under the same ids), the leftovers go, and every later state is in the
// maps and routes frames as the interpreter does over it.
func TestXDPMapsTakeOver(t *testing.T) {
	r, base, specs, w := loadedXDP(t)
	states, boundaries := xdpStates(t, w, specs, 12)
	first := &cp.XDPMaps{Live: r.Live()}
	for _, s := range states[:8] {
		if err := first.Apply(0, s, calendar.Diff{}); err != nil {
			t.Fatal(err)
		}
	}
	read := func() []packet.TableEntry {
		t.Helper()
		es, err := cp.XDPEntries(r.Live(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	raw := func(es []packet.TableEntry) []string { // calendars and members as written, ids and all
		var out []string
		for _, te := range es {
			if te.Table == calendar.CalendarTable || te.Table == calendar.MemberTable {
				out = append(out, fmt.Sprint(te))
			}
		}
		slices.Sort(out)
		return out
	}
	before := raw(read())
	// Leftovers: a calendar entry and a member under ids nothing names.
	id := map[string]int{calendar.CalendarTable: 1, calendar.MemberTable: 2}
	for _, te := range states[7] {
		if j, ok := id[te.Table]; ok {
			te.Entry.Keys = slices.Clone(te.Entry.Keys)
			te.Entry.Keys[j].Value = packet.V(4000)
			if err := first.Live.Put(te.Table, te.Entry); err != nil {
				t.Fatal(err)
			}
			delete(id, te.Table)
		}
	}
	if n := len(raw(read())) - len(before); n != 2 {
		t.Fatalf("%d leftovers written, want 2", n)
	}
	second := &cp.XDPMaps{Live: r.Live()}
	if err := second.Live.Own(calendar.EpochTable); err != nil {
		t.Fatalf("the second Live did not take over: %v", err)
	}
	rnd := rand.New(rand.NewPCG(14, 3))
	for k := 7; k < len(states); k++ {
		if err := second.Apply(0, states[k], calendar.Diff{}); err != nil {
			t.Fatalf("state %d: %v", k, err)
		}
		got := read()
		if k == 7 {
			if after := raw(got); !slices.Equal(after, before) {
				t.Errorf("state 7 again: %d calendar and member entries, %d before; changed or left over:\n%v", len(after), len(before), cptest.DiffLines(before, after))
			}
		}
		if g, s := cp.Resolved(got), cp.Resolved(states[k]); !slices.Equal(g, s) {
			t.Errorf("state %d: the maps do not do what the state does:\n%v", k, cptest.DiffLines(s, g))
		}
		var script bytes.Buffer
		script.WriteString(base)
		if err := packet.FormatEntries(&script, states[k], specs); err != nil {
			t.Fatal(err)
		}
		mach, err := ejfat.Interpreter("lb-2025", "XDP", fmt.Sprint("state ", k), &script)
		if err != nil {
			t.Fatal(err)
		}
		for range 100 {
			tick, e := rnd.Uint64N(boundaries[k]+2000), uint16(rnd.Uint32())
			f := lbFrame(t, tick, e, "after the takeover")
			want := xdptest.Interp(mach, r.Meta, f)
			res, err := r.Run(f)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if res.Verdict != xdprun.VerdictDrop {
				got = hex.EncodeToString(res.Data)
			}
			if v := xdprun.VerdictName(res.Verdict); v != want.Verdict || got != want.Data {
				t.Fatalf("state %d, tick %d: %s %s, interpreter %s %s", k, tick, v, got, want.Verdict, want.Data)
			}
		}
	}
	// A hash table's entry (an IPv6 source: 136 key bits) reads back too.
	s6, _ := specs("ipv6_src_filter_table")
	a, _ := s6.ActionIndex("allow_ip_src")
	six := packet.TableEntry{Table: s6.Name, Entry: packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(0)}, {Value: packet.Value{Hi: 0x20010db8 << 32, Lo: 7}}}, Action: a}}
	if err := second.Live.Put(six.Table, six.Entry); err != nil {
		t.Fatal(err)
	}
	if es := read(); !slices.ContainsFunc(es, func(te packet.TableEntry) bool { return fmt.Sprint(te) == fmt.Sprint(six) }) {
		t.Errorf("%v not read back: %v", six, es)
	}
}
