package cp_test

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/cptest"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
)

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
	db, err := sql.Open("sqlite", filepath.Join(dir, "cp.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
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
	db, err := sql.Open("sqlite", filepath.Join(dir, "cp.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	left := func() (n int) {
		db.QueryRow(`SELECT COUNT(*) FROM tokens WHERE id BETWEEN ? AND ?`, root, root+10_000).Scan(&n)
		return n
	}
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
	var perms int
	db.QueryRow(`SELECT COUNT(*) FROM token_permissions WHERE token BETWEEN ? AND ?`, root, root+10_000).Scan(&perms)
	if perms != 0 {
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
	db, err := sql.Open("sqlite", filepath.Join(dir, "cp.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	left := func() (n int) {
		db.QueryRow(`SELECT COUNT(*) FROM tokens WHERE id BETWEEN ? AND ?`, root, root+10_000).Scan(&n)
		return n
	}
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
