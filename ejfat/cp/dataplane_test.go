package cp_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/ejfat/cp/cptest"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
	"github.com/dragonet-go/nsc/packet"
)

// baseTables are the lb-2025 entries the CP does not write for an LB at
// lb: its MAC and its IPv4 address as LB 0.
func baseTables(lb netip.Addr) string {
	ip := binary.BigEndian.Uint32(lb.AsSlice())
	return fmt.Sprintf(`table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0
`, ip, ip)
}

// goLB runs an in-process lb-2025 LB on loopback until the test ends and
// returns its address and the Programming that drives it.
func goLB(t *testing.T) (*net.UDPAddr, cp.Programming) {
	t.Helper()
	addr := lbtest.Addr(t)
	g, err := cp.NewGoLB(cp.GoLBConfig{Model: "lb-2025", Listen: addr, Workers: 1,
		Base: strings.NewReader(baseTables(netip.MustParseAddr(addr.IP.String()))), BaseName: "base"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		g.Close()
	})
	return addr, g.Programming
}

// TestGoDataPlaneEndToEnd runs the CP with an in-process LB as its data
// plane: two sessions on two loopback receivers, sync messages, events
// through the LB. Every event reaches, whole, the receiver the calendar
// of its epoch names, before and after a weight change starts a new
// epoch; once the sender is removed, nothing passes.
func TestGoDataPlaneEndToEnd(t *testing.T) {
	lbAddr, prog := goLB(t)
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	cfg := cpConfig()
	cfg.Now, cfg.EpochInterval, cfg.Programming = clk.Now, time.Hour, prog
	c := startCP(t, cfg)
	lc := client(t, c)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "e2e",
		SenderAddresses: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := as(res.Token)
	members := []*lbtest.Member{lbtest.NewMember(t, 0), lbtest.NewMember(t, 1)}
	ids := cptest.Register(t, lc, ctx, res.LbId, []int{members[0].Port(), members[1].Port()}, 1, 3)
	receiver := map[int64]int{} // session ID → member index
	for i, id := range ids {
		var n int64
		fmt.Sscan(id, &n)
		receiver[n] = i
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
		sendUDP(t, fmt.Sprintf("127.0.0.1:%d", res.SyncUdpPort), cptest.SyncMessage(1, uint64(i*500), 1000, clk.Now()))
		for deadline := time.Now().Add(5 * time.Second); len(c.store.Sync(lb)) <= i && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		clk.Add(500 * time.Millisecond)
	}
	sender := lbtest.NewEventSender(t, lbAddr)
	// check sends events lo..hi-1 and wants each at the receiver the
	// calendar of its epoch names, all of its segments there.
	check := func(what string, lo, hi uint64) {
		t.Helper()
		es := c.store.Epochs(lb)
		sender.Send(t, lo, hi)
		got := lbtest.Arrivals(members, int(hi-lo)*lbtest.Segments)
		wrong := 0
		for n := lo; n < hi; n++ {
			e := es[len(es)-1]
			for _, x := range es {
				if n >= x.Boundary {
					e = x
				}
			}
			want := receiver[e.Calendar[n%cp.Slots]]
			if g := got[n]; len(g) != 1 || g[want] != lbtest.Segments {
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

	if _, err := lc.RemoveSenders(ctx, &pb.RemoveSendersRequest{LbId: res.LbId, SenderAddresses: []string{"127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	sender.Send(t, b, b+100)
	time.Sleep(200 * time.Millisecond) // what would arrive has arrived
	if n := len(members[0].Got()) + len(members[1].Got()); n != 0 {
		t.Errorf("%d segments arrived from a sender removed", n)
	}
}

// recorder is a data plane that keeps the diffs it is given and fails
// while fail is set.
type recorder struct {
	fail  bool
	diffs []calendar.Diff
}

func (r *recorder) Apply(_ int, _ []packet.TableEntry, d calendar.Diff) error {
	if r.fail {
		return fmt.Errorf("down")
	}
	r.diffs = append(r.diffs, d)
	return nil
}

// TestDataPlanesEach: DataPlanes gives each plane the diff from the state
// it last took, so a plane that failed once gets the whole change later
// while the other got it in two steps.
func TestDataPlanesEach(t *testing.T) {
	e := func(n uint64) packet.TableEntry {
		return packet.TableEntry{Table: "t", Entry: packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(n)}}}}
	}
	a, b := &recorder{}, &recorder{fail: true}
	d := &cp.DataPlanes{Planes: []cp.DataPlane{a, b}}
	if err := d.Apply(0, []packet.TableEntry{e(1)}, calendar.Diff{}); err == nil {
		t.Error("a plane's failure not reported")
	}
	b.fail = false
	if err := d.Apply(0, []packet.TableEntry{e(2)}, calendar.Diff{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(0, []packet.TableEntry{e(2)}, calendar.Diff{}); err != nil { // no change: no Apply
		t.Fatal(err)
	}
	count := func(ds []calendar.Diff) (n [][2]int) {
		for _, d := range ds {
			n = append(n, [2]int{len(d.Added), len(d.Deleted)})
		}
		return n
	}
	if got, want := fmt.Sprint(count(a.diffs)), "[[1 0] [1 1]]"; got != want {
		t.Errorf("plane a got diffs (added, deleted) %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(count(b.diffs)), "[[1 0]]"; got != want {
		t.Errorf("plane b got diffs (added, deleted) %s, want %s", got, want)
	}
}

// failing is a data plane whose Apply fails while fail is set.
type failing struct{ fail atomic.Bool }

func (f *failing) Apply(int, []packet.TableEntry, calendar.Diff) error {
	if f.fail.Load() {
		return errors.New("the switch is down")
	}
	return nil
}

// TestDataPlaneEpochMetric: nsc_cp_lb_dataplane_epoch says the newest
// epoch the data plane took, lagging nsc_cp_lb_epoch while applying it
// fails, catching up at the next Tick that succeeds; 0 for an LB its
// data plane holds no epoch of.
func TestDataPlaneEpochMetric(t *testing.T) {
	m, _, err := ejfat.Embedding("lb-2025", "BMv2")
	if err != nil {
		t.Fatal(err)
	}
	plane := &failing{}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	cfg := cpConfig()
	cfg.Now, cfg.EpochInterval, cfg.Programming = clk.Now, time.Hour, cp.Programming{DataPlane: plane, Tables: m.Schema.TableSpec}
	c := startCP(t, cfg)
	lc := client(t, c)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "m", SenderAddresses: []string{"10.0.0.9"}})
	if err != nil {
		t.Fatal(err)
	}
	lb := fmt.Sprintf(`{instance="0",lb="%s"}`, res.LbId)
	gauges := func(epoch, plane int) {
		t.Helper()
		for _, l := range []string{fmt.Sprintf("nsc_cp_lb_epoch%s %d", lb, epoch), fmt.Sprintf("nsc_cp_lb_dataplane_epoch%s %d", lb, plane)} {
			if !metricLine(t, c, l) {
				t.Errorf("/metrics lacks %q", l)
			}
		}
	}
	gauges(0, 0)
	register := func(i int) {
		t.Helper()
		if _, err := lc.Register(as(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: fmt.Sprint("r", i), Weight: 1,
			IpAddress: fmt.Sprintf("10.0.0.%d", i+1), UdpPort: 20000, PortRange: pb.PortRange_PORT_RANGE_1}); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Second)
		c.Tick()
	}
	register(0)
	gauges(1, 1)
	plane.fail.Store(true)
	register(1)
	gauges(2, 1)
	plane.fail.Store(false)
	c.Tick()
	gauges(2, 2)
}
