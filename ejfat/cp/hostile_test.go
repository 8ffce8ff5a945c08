package cp_test

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/cptest"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// sendUDPFrom sends each datagram to addr from local address from.
func sendUDPFrom(t *testing.T, from, addr string, datagrams ...[]byte) {
	t.Helper()
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(from)}, raddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, b := range datagrams {
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

// metricLine waits for /metrics to hold line and returns whether it did.
func metricLine(t *testing.T, c *testCP, line string) bool {
	t.Helper()
	for range 300 {
		if strings.Contains(get200(t, "http://"+c.http+"/metrics"), line+"\n") {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// twoSessions reserves an LB whose one sender is 127.0.0.2 and registers
// two sessions (weights 1 and 3); it returns the LB's id, the reply and
// the sessions' ids.
func twoSessions(t *testing.T, c *testCP, lc pb.LoadBalancerClient) (int64, *pb.ReserveLoadBalancerReply, []string) {
	t.Helper()
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "t", SenderAddresses: []string{"127.0.0.2"}})
	if err != nil {
		t.Fatal(err)
	}
	var lb int64
	fmt.Sscan(res.LbId, &lb)
	return lb, res, cptest.Register(t, lc, as(res.Token), res.LbId, []int{20000, 20001}, 1, 3)
}

// syncedLB reserves an LB whose one sender is 127.0.0.2, registers two
// ready sessions (weights 1 and 3) and feeds it five sync messages from
// the sender, 1000 events/s over 2 s of the clock. It returns the LB id,
// its sync address, the sessions' ids and the newest event number.
func syncedLB(t *testing.T, clk *clock, c *testCP, lc pb.LoadBalancerClient) (int64, string, []string, uint64) {
	t.Helper()
	lb, res, ids := twoSessions(t, c, lc)
	sync := fmt.Sprintf("127.0.0.1:%d", res.SyncUdpPort)
	for i := range 5 {
		sendUDPFrom(t, "127.0.0.2", sync, cptest.SyncMessage(1, uint64(i*500), 1000, clk.Now()))
		for deadline := time.Now().Add(5 * time.Second); len(c.store.Sync(lb)) <= i && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if i < 4 {
			clk.Add(500 * time.Millisecond)
		}
	}
	if n := len(c.store.Sync(lb)); n != 5 {
		t.Fatalf("%d sync samples from the sender stored, want 5", n)
	}
	return lb, sync, ids, 2000
}

// ready sends the sessions' states: ready those with ids in readyIDs.
func ready(t *testing.T, lc pb.LoadBalancerClient, c *testCP, lb int64, ids []string, readyIDs ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := lc.SendState(as(c.admin), &pb.SendStateRequest{LbId: fmt.Sprint(lb), SessionId: id,
			IsReady: slices.Contains(readyIDs, id)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpoofedSyncIgnored: sync messages from an address that is not one
// of the reservation's senders — one claiming event 2^64−1 at 2^32−1 Hz,
// the probe's calendar freezer, among them — are counted (reason
// "sender") and dropped: the samples stored are the sender's alone, and
// the epoch's boundary is the one its samples predict (newest event 2000
// + 2 s of events at 1000/s), not 2^64−1.
func TestSpoofedSyncIgnored(t *testing.T) {
	clk, c, lc := clockedCP(t)
	lb, sync, ids, newest := syncedLB(t, clk, c, lc)
	before := c.store.Sync(lb)
	spoofs := [][]byte{cptest.SyncMessage(1, math.MaxUint64, math.MaxUint32, clk.Now()),
		cptest.SyncMessage(2, 1<<63, 1, clk.Now()), cptest.SyncMessage(1, 0, 0, clk.Now())}
	sendUDPFrom(t, "127.0.0.1", sync, spoofs...)
	if !metricLine(t, c, `nsc_cp_sync_dropped_total{instance="0",reason="sender"} 3`) {
		t.Fatal(`/metrics does not count 3 sync datagrams dropped for reason "sender"`)
	}
	if after := c.store.Sync(lb); !slices.Equal(after, before) {
		t.Errorf("sync samples changed by spoofed datagrams:\n%v\n%v", before, after)
	}
	ready(t, lc, c, lb, ids, ids...)
	c.Tick()
	es := c.store.Epochs(lb)
	if len(es) != 1 {
		t.Fatalf("%d epochs, want 1", len(es))
	}
	if lo := newest + 2000; es[0].Boundary < lo || es[0].Boundary > lo+100 {
		t.Errorf("boundary %d, want about %d, as the sender's samples alone predict", es[0].Boundary, lo)
	}
}

// TestExtremeSyncKeepsEpochsGoing: the allowed sender itself sends event
// 2^64−1 at 2^32−1 Hz, then numbers from 0 again, and again 2^64−1: each
// of 20 calendar changes still starts an epoch, each boundary above the
// last, none past cp.MaxBoundary + 20 — none wrapped to 0 or saturated at
// 2^64−1, which would leave no boundary above it.
func TestExtremeSyncKeepsEpochsGoing(t *testing.T) {
	clk, c, lc := clockedCP(t)
	lb, sync, ids, _ := syncedLB(t, clk, c, lc)
	ready(t, lc, c, lb, ids, ids...)
	c.Tick()
	prev := c.store.Epochs(lb)[0]
	for i := range 20 {
		var event uint64 = math.MaxUint64
		if i%3 == 1 {
			event = uint64(i)
		}
		clk.Add(time.Second)
		sendUDPFrom(t, "127.0.0.2", sync, cptest.SyncMessage(1, event, math.MaxUint32, clk.Now()))
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if xs := c.store.Sync(lb); xs[len(xs)-1].Time.Equal(clk.Now()) {
				break
			}
		}
		ready(t, lc, c, lb, ids, ids[:1+i%2]...) // a calendar change each time
		c.Tick()
		es := c.store.Epochs(lb)
		e := es[len(es)-1]
		switch {
		case e.Number != prev.Number+1:
			t.Fatalf("change %d (event %d): epoch %d after %d, want a new one", i, event, e.Number, prev.Number)
		case e.Boundary <= prev.Boundary:
			t.Fatalf("change %d (event %d): boundary %d not above the last, %d", i, event, e.Boundary, prev.Boundary)
		case e.Boundary > cp.MaxBoundary+20:
			t.Fatalf("change %d (event %d): boundary %d past 2^63 + 20", i, event, e.Boundary)
		}
		prev = e
	}
	t.Logf("epoch %d, boundary %d = 2^63 + %d", prev.Number, prev.Boundary, prev.Boundary-cp.MaxBoundary)
}

// TestHugeNamesRefused: five worker names of 1 MB each (the probe's) are
// refused with INVALID_ARGUMENT, as are a 1 MB LB name and token name and
// a name of 257 bytes; names of 256 bytes are taken. Overview, Status
// and /metrics then stay small.
func TestHugeNamesRefused(t *testing.T) {
	c := startCP(t, cpConfig())
	lc := client(t, c)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: longName("l", 0)})
	if err != nil {
		t.Fatal(err)
	}
	mb := strings.Repeat("x", 1<<20)
	reg := func(name string) error {
		_, err := lc.Register(as(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: name, Weight: 1, IpAddress: "127.0.0.1", UdpPort: 20000})
		return err
	}
	for i := range 5 {
		wantCode(t, fmt.Sprintf("worker name %d of 1 MB", i), reg(mb), codes.InvalidArgument)
	}
	wantCode(t, "a worker name of 257 bytes", reg(strings.Repeat("w", cp.MaxString+1)), codes.InvalidArgument)
	for i := range 4 {
		if err := reg(longName("w", i)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: mb})
	wantCode(t, "an LB name of 1 MB", err, codes.InvalidArgument)
	_, err = lc.CreateToken(as(c.admin), &pb.CreateTokenRequest{Name: mb})
	wantCode(t, "a token name of 1 MB", err, codes.InvalidArgument)
	_, err = lc.AddSenders(as(c.admin), &pb.AddSendersRequest{LbId: res.LbId, SenderAddresses: make([]string, cp.MaxList+1)})
	wantCode(t, "1025 sender addresses", err, codes.InvalidArgument)
	ov, err := lc.Overview(as(c.admin), &pb.OverviewRequest{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := lc.LoadBalancerStatus(as(c.admin), &pb.LoadBalancerStatusRequest{LbId: res.LbId})
	if err != nil {
		t.Fatal(err)
	}
	metrics := get200(t, "http://"+c.http+"/metrics")
	t.Logf("Overview %d bytes, Status %d bytes, /metrics %d bytes (an LB, 4 workers, names of 256 bytes)", proto.Size(ov), proto.Size(st), len(metrics))
	if len(st.Workers) != 4 || proto.Size(ov) > 8<<10 || proto.Size(st) > 8<<10 || len(metrics) > 64<<10 {
		t.Errorf("%d workers; Overview %d bytes, Status %d, /metrics %d: want 4 and at most 8 KB, 8 KB, 64 KB",
			len(st.Workers), proto.Size(ov), proto.Size(st), len(metrics))
	}
}

// TestMemberAddressesValidated: Register refuses member addresses that
// cannot receive unicast with INVALID_ARGUMENT, and takes unicast ones.
func TestMemberAddressesValidated(t *testing.T) {
	c := startCP(t, cpConfig())
	lc := client(t, c)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	reg := func(ip string) error {
		_, err := lc.Register(as(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: "w", Weight: 1, IpAddress: ip, UdpPort: 20000})
		return err
	}
	for _, ip := range []string{"0.0.0.0", "0.1.2.3", "255.255.255.255", "224.0.0.1", "239.255.255.250", "240.0.0.1",
		"::", "ff02::1", "ff0e::1", "::ffff:0.0.0.0", "::ffff:224.0.0.1", "10.0.0.256", ""} {
		wantCode(t, "member address "+ip, reg(ip), codes.InvalidArgument)
	}
	for _, ip := range []string{"127.0.0.1", "10.1.2.3", "192.0.2.255", "fd00::1", "2001:db8::1", "::1"} {
		if err := reg(ip); err != nil {
			t.Errorf("member address %s: %v", ip, err)
		}
	}
}

// TestRestartAfterOutageKeepsSessions: a CP down for 10 minutes (its
// --delete-timeout is 1 minute) restarts with its sessions; they are
// deleted only after a minute more of silence with the CP up.
func TestRestartAfterOutageKeepsSessions(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	cfg := cpConfig()
	cfg.Now, cfg.DeleteTimeout = clk.Now, time.Minute
	dir := t.TempDir()
	c := startCPAt(t, cfg, dir)
	lc := client(t, c)
	res, reg := lbSession(t, lc, c.admin)
	if _, err := lc.SendState(as(reg.Token), &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId, IsReady: true}); err != nil {
		t.Fatal(err)
	}
	c.stop()
	clk.Add(10 * time.Minute)
	c = startCPAt(t, cfg, dir)
	lc = client(t, c)
	c.Tick()
	st, err := lc.LoadBalancerStatus(as(c.admin), &pb.LoadBalancerStatusRequest{LbId: res.LbId})
	if err != nil || len(st.Workers) != 1 {
		t.Fatalf("after a 10 min outage: %v, %v; want the session kept", st.GetWorkers(), err)
	}
	clk.Add(59 * time.Second)
	c.Tick()
	if st, _ := lc.LoadBalancerStatus(as(c.admin), &pb.LoadBalancerStatusRequest{LbId: res.LbId}); len(st.GetWorkers()) != 1 {
		t.Fatalf("59 s after the restart: %d sessions, want 1", len(st.GetWorkers()))
	}
	clk.Add(2 * time.Second)
	c.Tick()
	if st, _ := lc.LoadBalancerStatus(as(c.admin), &pb.LoadBalancerStatusRequest{LbId: res.LbId}); len(st.GetWorkers()) != 0 {
		t.Errorf("61 s after the restart, silent: %d sessions, want 0", len(st.GetWorkers()))
	}
}

// TestSecondOpenRefused: a database open in one Store cannot be opened
// by another, which names the holder; once closed it can.
func TestSecondOpenRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	a, err := cp.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Announce("gRPC on 127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	b, err := cp.Open(path)
	host, _ := os.Hostname()
	want := fmt.Sprintf("in use by another nsc cp (pid %d on host %s, gRPC on 127.0.0.1:1)", os.Getpid(), host)
	if err == nil || !strings.Contains(err.Error(), want) {
		if b != nil {
			b.Close()
		}
		t.Fatalf("second Open: %v; want an error saying %q", err, want)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = cp.Open(path)
	if err != nil {
		t.Fatalf("Open after the first closed: %v", err)
	}
	b.Close()
}

// tokenForest writes into the database in dir a child of the admin token
// with 10 children of 999 children each (10,000 descendants, each with a
// permission) and returns its id.
func tokenForest(t *testing.T, dir string) int64 {
	t.Helper()
	s, err := cp.Open(filepath.Join(dir, "cp.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cp.AdminToken(s, filepath.Join(dir, "admin"), time.Now()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	tx, err := openDB(t, dir).Begin()
	if err != nil {
		t.Fatal(err)
	}
	id := int64(1000)
	add := func(parent int64) int64 {
		id++
		h := sha256.Sum256(fmt.Append(nil, "forest", id))
		if _, err := tx.Exec(`INSERT INTO tokens (id, hash, name, parent, created) VALUES (?, ?, ?, ?, 0)`, id, h[:], fmt.Sprint("t", id), parent); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO token_permissions VALUES (?, ?, '1', ?)`, id, pb.ResourceType_LOAD_BALANCER, pb.PermissionType_READ_ONLY); err != nil {
			t.Fatal(err)
		}
		return id
	}
	root := add(1)
	for range 10 {
		child := add(root)
		for range 999 {
			add(child)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return root
}

// openDB opens the database in dir beside the CP's connections.
func openDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "cp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// subtreeRows counts the rows of table whose column names one of
// tokenForest's tokens.
func subtreeRows(db *sql.DB, table, column string, root int64) (n int) {
	db.QueryRow(`SELECT COUNT(*) FROM `+table+` WHERE `+column+` BETWEEN ? AND ?`, root, root+10_000).Scan(&n)
	return n
}

// TestRevokeTenThousand revokes a token with 10,000 descendants while 8
// sessions send their state every 10 ms. The revocation is one small
// transaction (the token marked revoked); the subtree's rows are deleted
// after, 500 a transaction. Every token of the subtree stops working at
// once, the CP restarted halfway through the deletion keeps them
// revoked, and in the end no row of them is left. It reports how long
// the revocation and the deletion took and the SendState latencies
// meanwhile (issue 24: revocation under 0.5 s, p99 under 100 ms; 1.6 s
// for 4,000 before). Times are asserted only against bounds ten times the
// issue's: the machine running the tests is shared.
func TestRevokeTenThousand(t *testing.T) {
	dir := t.TempDir()
	root := tokenForest(t, dir)
	c := startCPAt(t, cpConfig(), dir)
	lc := client(t, c)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := as(res.Token)
	ids := cptest.Register(t, lc, ctx, res.LbId, []int{20000, 20001, 20002, 20003, 20004, 20005, 20006, 20007}, 1, 1, 1, 1, 1, 1, 1, 1)
	db := openDB(t, dir)
	left := func() int { return subtreeRows(db, "tokens", "id", root) }
	gone := func(when string) {
		t.Helper()
		for _, id := range []int64{root, root + 1, root + 2, root + 10_000} {
			if _, err := lc.ListTokenPermissions(as(c.admin), &pb.ListTokenPermissionsRequest{Target: &pb.TokenSelector{
				TokenSelector: &pb.TokenSelector_Id{Id: uint32(id)}}}); err == nil {
				t.Errorf("%s: token %d is still there", when, id)
			}
		}
	}
	type call struct {
		start time.Time
		took  time.Duration
	}
	var mu sync.Mutex
	var calls []call
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				start := time.Now()
				if _, err := lc.SendState(ctx, &pb.SendStateRequest{LbId: res.LbId, SessionId: id, IsReady: true}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				calls = append(calls, call{start, time.Since(start)})
				mu.Unlock()
			}
		})
	}
	time.Sleep(time.Second) // the latencies before, to compare
	start := time.Now()
	_, err = lc.RevokeToken(as(c.admin), &pb.RevokeTokenRequest{Target: &pb.TokenSelector{TokenSelector: &pb.TokenSelector_Id{Id: uint32(root)}}})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	gone("after the revocation")
	for deadline := time.Now().Add(30 * time.Second); left() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	deleted := time.Since(start)
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	var during, before []time.Duration
	for _, x := range calls {
		switch {
		case x.start.Before(start.Add(deleted)) && x.start.Add(x.took).After(start):
			during = append(during, x.took)
		case x.start.Add(x.took).Before(start):
			before = append(before, x.took)
		}
	}
	p := func(xs []time.Duration, q float64) time.Duration {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		return xs[min(len(xs)-1, int(q*float64(len(xs))))]
	}
	t.Logf("revoked 10,001 tokens in %v, their rows deleted after %v; SendState meanwhile: %d calls, p50 %v, p99 %v, max %v; in the second before: %d calls, p50 %v, p99 %v, max %v",
		took, deleted, len(during), p(during, 0.5), p(during, 0.99), p(during, 1), len(before), p(before, 0.5), p(before, 0.99), p(before, 1))
	if n := left(); n != 0 {
		t.Errorf("%d tokens of the subtree left in the database", n)
	}
	if took > 5*time.Second || p(during, 0.99) > time.Second {
		t.Errorf("revoking took %v, SendState p99 %v meanwhile: want well under 5 s and 1 s", took, p(during, 0.99))
	}
	if perms := subtreeRows(db, "token_permissions", "token", root); perms != 0 {
		t.Errorf("%d permissions of the subtree left in the database", perms)
	}
}

// TestRevokedStayRevokedAcrossRestart: a CP stopped just after revoking
// a token with 10,000 descendants (their rows mostly still there)
// restarts without them and deletes the rest.
func TestRevokedStayRevokedAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	root := tokenForest(t, dir)
	c := startCPAt(t, cpConfig(), dir)
	lc := client(t, c)
	if _, err := lc.RevokeToken(as(c.admin), &pb.RevokeTokenRequest{Target: &pb.TokenSelector{TokenSelector: &pb.TokenSelector_Id{Id: uint32(root)}}}); err != nil {
		t.Fatal(err)
	}
	c.stop()
	db := openDB(t, dir)
	left := func() int { return subtreeRows(db, "tokens", "id", root) }
	t.Logf("%d rows of the subtree left at the stop", left())
	c = startCPAt(t, cpConfig(), dir)
	lc = client(t, c)
	for _, id := range []int64{root, root + 1, root + 10_000} {
		if _, err := lc.ListTokenPermissions(as(c.admin), &pb.ListTokenPermissionsRequest{Target: &pb.TokenSelector{
			TokenSelector: &pb.TokenSelector_Id{Id: uint32(id)}}}); err == nil {
			t.Errorf("token %d is back after the restart", id)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); left() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := left(); n != 0 {
		t.Errorf("%d tokens of the subtree left in the database", n)
	}
}

// TestTokenAndSessionLimits: a token may have TokenChildren children,
// TokenDescendants descendants (but the admin token) and be TokenDepth
// below the admin; an LB may have Sessions sessions. Past each,
// RESOURCE_EXHAUSTED; revoking or deregistering makes room again.
func TestTokenAndSessionLimits(t *testing.T) {
	cfg := cpConfig()
	cfg.Limits = cp.Limits{Sessions: 2, TokenChildren: 3, TokenDescendants: 6, TokenDepth: 4}
	c := startCP(t, cfg)
	lc := client(t, c)
	all := []*pb.TokenPermission{perm(pb.ResourceType_ALL, "", pb.PermissionType_UPDATE)}
	mint := func(parent string) (string, error) {
		r, err := lc.CreateToken(as(parent), &pb.CreateTokenRequest{Name: "t", Permissions: all})
		return r.GetToken(), err
	}
	must := func(parent string) string {
		t.Helper()
		tok, err := mint(parent)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// Depth: admin → a → b → c → d (4 below); a token under d would be 5.
	a := must(c.admin)
	d := must(must(must(a)))
	_, err := mint(d)
	wantCode(t, "a token 5 below the admin", err, codes.ResourceExhausted)
	// Children: a has b and two more, then no fourth.
	must(a)
	x := must(a)
	_, err = mint(a)
	wantCode(t, "a fourth child", err, codes.ResourceExhausted)
	// Descendants: a has b, c, d, two more and x's child (6); no seventh.
	must(x)
	_, err = mint(x)
	wantCode(t, "a seventh descendant", err, codes.ResourceExhausted)
	if _, err := lc.RevokeToken(as(x), &pb.RevokeTokenRequest{}); err != nil {
		t.Fatal(err)
	}
	must(a) // room again
	// Reserve and Register make tokens: they count as children too.
	must(c.admin)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = mint(c.admin)
	wantCode(t, "a fourth child of the admin (a, one more, the reservation's)", err, codes.ResourceExhausted)
	// Sessions per LB.
	reg := func() (*pb.RegisterReply, error) {
		return lc.Register(as(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: "w", Weight: 1, IpAddress: "127.0.0.1", UdpPort: 20000})
	}
	first, err := reg()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg(); err != nil {
		t.Fatal(err)
	}
	_, err = reg()
	wantCode(t, "a third session", err, codes.ResourceExhausted)
	if _, err := lc.Deregister(as(first.Token), &pb.DeregisterRequest{LbId: res.LbId, SessionId: first.SessionId}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg(); err != nil {
		t.Errorf("a session after one left: %v", err)
	}
	// Senders per LB: 1024.
	addrs := func(from, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("10.0.%d.%d", (from+i)/256, (from+i)%256))
		}
		return out
	}
	if _, err := lc.AddSenders(as(res.Token), &pb.AddSendersRequest{LbId: res.LbId, SenderAddresses: addrs(0, 1000)}); err != nil {
		t.Fatal(err)
	}
	_, err = lc.AddSenders(as(res.Token), &pb.AddSendersRequest{LbId: res.LbId, SenderAddresses: addrs(990, 35)})
	wantCode(t, "senders 1,025", err, codes.ResourceExhausted)
	if _, err := lc.AddSenders(as(res.Token), &pb.AddSendersRequest{LbId: res.LbId, SenderAddresses: addrs(990, 34)}); err != nil {
		t.Errorf("senders 1,024: %v", err)
	}
}

// TestFreeRevokesLater: freeing an LB revokes the token Reserve made and
// its children at once, as revoking does, and their rows go after.
func TestFreeRevokesLater(t *testing.T) {
	dir := t.TempDir()
	c := startCPAt(t, cpConfig(), dir)
	lc := client(t, c)
	res, reg := lbSession(t, lc, c.admin)
	child, err := lc.CreateToken(as(reg.Token), &pb.CreateTokenRequest{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.FreeLoadBalancer(as(c.admin), &pb.FreeLoadBalancerRequest{LbId: res.LbId}); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{res.Token, reg.Token, child.Token} {
		_, err := lc.ListTokenPermissions(as(tok), &pb.ListTokenPermissionsRequest{})
		wantCode(t, "a token of the freed LB", err, codes.NotFound) // udplbd2's code for a token it does not know
	}
	db := openDB(t, dir)
	n := -1
	for deadline := time.Now().Add(10 * time.Second); n != 1 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		db.QueryRow(`SELECT COUNT(*) FROM tokens`).Scan(&n)
	}
	if n != 1 {
		t.Errorf("%d tokens in the database, want the admin's alone", n)
	}
}

// TestRepliesBoundedAtLimits fills an LB to every default limit — 512
// sessions named with 256 bytes, each demanding 64 slot ranges, 1024
// senders — and measures its Status, the Overview and /metrics: the
// Overview of 8 such LBs (the default instances) must fit gRPC's default
// 4 MB, which five 1 MB names broke before.
func TestRepliesBoundedAtLimits(t *testing.T) {
	c := startCP(t, cpConfig())
	lc := client(t, c)
	var senders []string
	for i := range cp.MaxList {
		senders = append(senders, fmt.Sprintf("2001:db8::%x:%x", i, i))
	}
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: longName("l", 0), SenderAddresses: senders})
	if err != nil {
		t.Fatal(err)
	}
	var demands []*pb.SlotRange
	for i := range cp.MaxSlotRanges {
		demands = append(demands, &pb.SlotRange{Index: int32(i * 8), Length: 8})
	}
	n := cp.DefaultLimits().Sessions
	for i := range n {
		name := longName("w", i)
		if _, err := lc.Register(as(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: name, Weight: 1,
			IpAddress: "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", UdpPort: 20000, SlotDemands: demands}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = lc.Register(as(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: "w", Weight: 1, IpAddress: "127.0.0.1", UdpPort: 20000,
		SlotDemands: append(demands, demands[0])})
	wantCode(t, "65 slot ranges", err, codes.InvalidArgument)
	c.Tick()
	st, err := lc.LoadBalancerStatus(as(c.admin), &pb.LoadBalancerStatusRequest{LbId: res.LbId})
	if err != nil {
		t.Fatal(err)
	}
	ov, err := lc.Overview(as(c.admin), &pb.OverviewRequest{})
	if err != nil {
		t.Fatal(err)
	}
	metrics := get200(t, "http://"+c.http+"/metrics")
	t.Logf("an LB at every limit: Status %d bytes, Overview %d bytes (8 such LBs: %d), /metrics %d bytes",
		proto.Size(st), proto.Size(ov), 8*proto.Size(ov), len(metrics))
	if len(st.Workers) != n || 8*proto.Size(ov) >= 4<<20 {
		t.Errorf("%d workers, want %d; the Overview of 8 such LBs %d bytes, want under 4 MB", len(st.Workers), n, 8*proto.Size(ov))
	}
}

// longName is the longest name udplbd2 takes (253 bytes: dot-separated
// labels of at most 63), made of c and ending in i: names are at most 256
// bytes here, and udplbd2's rule is the stricter.
func longName(c string, i int) string {
	label := strings.Repeat(c, 63)
	tail := fmt.Sprint(i)
	return label + "." + label + "." + label + "." + strings.Repeat(c, 61-len(tail)) + tail
}
