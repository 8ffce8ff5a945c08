package cp_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
	"github.com/dragonet-go/nsc/ejfat/segment"
	"github.com/dragonet-go/nsc/packet"
)

// baseTables are the lb-2025 entries the CP does not write for an LB at
// lb: its MAC, its IPv4 address as LB 0, senders from 127.0.0.1.
func baseTables(lb netip.Addr) string {
	ip := binary.BigEndian.Uint32(lb.AsSlice())
	return fmt.Sprintf(`table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0
table_add ipv4_src_filter_table allow_ip_src 0 0x7f000001 =>
`, ip, ip)
}

// goLB runs an in-process lb-2025 LB on loopback until the test ends and
// returns its address and the Programming that drives it.
func goLB(t *testing.T) (*net.UDPAddr, cp.Programming) {
	t.Helper()
	const model = "lb-2025"
	addr := lbtest.Addr(t)
	empty := func() ([]*packet.Table, error) { return lbfast.Tables(model, "", nil) }
	ts, err := empty()
	if err != nil {
		t.Fatal(err)
	}
	specs := func(name string) (*packet.TableSpec, bool) {
		for _, tb := range ts {
			if tb.Spec().Name == name {
				return tb.Spec(), true
			}
		}
		return nil, false
	}
	w, err := calendar.NewWriter(specs)
	if err != nil {
		t.Fatal(err)
	}
	base, err := packet.ParseEntries("base", strings.NewReader(baseTables(netip.MustParseAddr(addr.IP.String()))), specs)
	if err != nil {
		t.Fatal(err)
	}
	conns, err := lbnet.Listen(addr, 1)
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := lbnet.New(lbnet.Config{Conns: conns,
		New: func(ts []*packet.Table) (fastpath.Pipeline, error) { return lbfast.NewSocket(model, ts) }})
	if err != nil {
		t.Fatal(err)
	}
	mac := net.HardwareAddr{0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
	set := &cp.TableSet{Empty: empty, Base: base, Install: func(ts []*packet.Table) error { return fwd.SetTables(ts, mac) }}
	if err := set.Apply(0, nil, calendar.Diff{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { fwd.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return addr, cp.Programming{DataPlane: set, Writer: w}
}

// eventSender cuts events into segments of at most 100 payload bytes and
// sends them to the LB.
type eventSender struct {
	conn *net.UDPConn
	seg  *segment.Segmenter
	buf  []byte
}

func newEventSender(t *testing.T, lb *net.UDPAddr) *eventSender {
	t.Helper()
	conn := lbtest.Sender(t, lb)
	seg, err := segment.New(segment.Config{MTU: 100 + segment.IPv4Len + segment.UDPLen + segment.HeadersLen,
		Src: conn.LocalAddr().(*net.UDPAddr).AddrPort(), Dst: netip.AddrPortFrom(netip.MustParseAddr(lb.IP.String()), uint16(lb.Port))})
	if err != nil {
		t.Fatal(err)
	}
	return &eventSender{conn: conn, seg: seg, buf: make([]byte, seg.MaxLen())}
}

// send sends event number n of 250 bytes: 3 segments.
func (s *eventSender) send(t *testing.T, n uint64) int {
	t.Helper()
	if err := s.seg.Start(make([]byte, 250), n, 0); err != nil {
		t.Fatal(err)
	}
	k := 0
	for ; ; k++ {
		l, err := s.seg.Next(s.buf)
		if err == io.EOF {
			return k
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.conn.Write(s.buf[:l]); err != nil {
			t.Fatal(err)
		}
	}
}

// arrivals collects which member each event's segments reached, until
// want segments arrived or a bound passed.
func arrivals(members []*lbtest.Member, want int) map[uint64]map[int]int {
	got := map[uint64]map[int]int{}
	deadline := time.After(10 * time.Second)
	for n := 0; n < want; n++ {
		var d []byte
		var who int
		select {
		case d = <-members[0].Got():
		case d = <-members[1].Got():
			who = 1
		case <-deadline:
			return got
		}
		if len(d) < ejfat.RELen {
			continue
		}
		ev := ejfat.RE(d).EventNumber()
		if got[ev] == nil {
			got[ev] = map[int]int{}
		}
		got[ev][who]++
	}
	return got
}

// TestGoDataPlaneEndToEnd runs the CP with an in-process LB as its data
// plane: two sessions on two loopback receivers, sync messages, events
// through the LB. Every event reaches, whole, the receiver the calendar
// of its epoch names, before and after a weight change starts a new
// epoch.
func TestGoDataPlaneEndToEnd(t *testing.T) {
	lbAddr, prog := goLB(t)
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	cfg := cpConfig()
	cfg.Now, cfg.EpochInterval, cfg.Programming = clk.Now, time.Hour, prog
	c := startCP(t, cfg)
	lc := client(t, c)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := as(res.Token)
	members := []*lbtest.Member{lbtest.NewMember(t, 0), lbtest.NewMember(t, 1)}
	receiver := map[int64]int{} // session ID → member index
	var ids []string
	for i, w := range []float32{1, 3} {
		reg, err := lc.Register(ctx, &pb.RegisterRequest{LbId: res.LbId, Name: fmt.Sprint("r", i), Weight: w,
			IpAddress: "127.0.0.1", UdpPort: uint32(members[i].Port()), PortRange: pb.PortRange_PORT_RANGE_1})
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		fmt.Sscan(reg.SessionId, &id)
		receiver[id] = i
		ids = append(ids, reg.SessionId)
	}
	state := func(control0 float32) {
		t.Helper()
		for i, id := range ids {
			sig := float32(0)
			if i == 0 {
				sig = control0
			}
			if _, err := lc.SendState(ctx, &pb.SendStateRequest{LbId: res.LbId, SessionId: id, IsReady: true, ControlSignal: sig}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var lb int64
	fmt.Sscan(res.LbId, &lb)
	for i := range 3 { // a sender at 1000 events/s
		sendUDP(t, fmt.Sprintf("127.0.0.1:%d", res.SyncUdpPort), syncMessage(1, uint64(i*500), 1000, clk.Now()))
		for deadline := time.Now().Add(5 * time.Second); len(c.store.Sync(lb)) <= i && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		clk.Add(500 * time.Millisecond)
	}
	sender := newEventSender(t, lbAddr)
	// check sends events lo..hi-1 and wants each at the receiver the
	// calendar of its epoch names, all of its segments there.
	check := func(what string, lo, hi uint64) {
		t.Helper()
		es := c.store.Epochs(lb)
		segments := 0
		for n := lo; n < hi; n++ {
			segments += sender.send(t, n)
			if n%32 == 0 {
				time.Sleep(time.Millisecond) // stay within the sockets' buffers
			}
		}
		got := arrivals(members, segments)
		wrong := 0
		for n := lo; n < hi; n++ {
			e := es[len(es)-1]
			for _, x := range es {
				if n >= x.Boundary {
					e = x
				}
			}
			want := receiver[e.Calendar[n%cp.Slots]]
			if g := got[n]; len(g) != 1 || g[want] != 3 {
				if wrong++; wrong <= 5 {
					t.Errorf("%s: event %d (epoch %d, slot %d) arrived %v (receiver: segments), want 3 segments at receiver %d",
						what, n, e.Number, n%cp.Slots, g, want)
				}
			}
		}
		if wrong > 0 {
			t.Errorf("%s: %d of %d events wrong", what, wrong, hi-lo)
		}
	}

	state(0)
	c.Tick()
	es := c.store.Epochs(lb)
	if len(es) != 1 {
		t.Fatalf("%d epochs, want 1", len(es))
	}
	check("first epoch", 0, 1024)
	clk.Add(time.Second)
	state(500) // weights 1:3 become 2:3
	c.Tick()
	es = c.store.Epochs(lb)
	if len(es) != 2 {
		t.Fatalf("%d epochs after a weight change, want 2", len(es))
	}
	b := es[1].Boundary
	if b < es[0].Boundary+600 {
		t.Fatalf("second boundary %d not 600 ahead of the first, %d", b, es[0].Boundary)
	}
	check("across the second boundary", b-600, b+600)
}
