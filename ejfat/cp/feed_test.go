package cp_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/packet"
)

// TestTableFeed serves a CP's tables on GET /tables: refused without a
// token (401) or with one not holding READ_ONLY on ALL (403), served to a
// feed token holding it, 503 until the CP has
// programmed, then the script of its entries with an ETag; a long poll
// with that ETag returns when a session's first epoch changes the tables,
// with a script that parses into the model's tables and sends every slot
// to the session; with the new ETag it waits and answers 304.
func TestTableFeed(t *testing.T) {
	tables, err := cp.ModelTables("lb-2025")
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	cfg := cpConfig()
	cfg.Now, cfg.EpochInterval = clk.Now, time.Hour
	cfg.Programming, cfg.Feed = cp.Programming{Tables: tables}, &cp.TableFeed{}
	c := startCP(t, cfg)
	get := func(token, etag, wait string) (int, string, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+c.http+"/tables?wait="+wait, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("ETag"), body
	}
	if code, _, _ := get("", "", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code, _, _ := get(c.admin, "", ""); code != http.StatusServiceUnavailable {
		t.Errorf("before the first tick: %d, want 503", code)
	}
	c.Tick()
	code, empty, body := get(c.admin, "", "")
	if code != http.StatusOK || empty == "" || len(body) != 0 {
		t.Fatalf("no reservation: %d, ETag %q, %q", code, empty, body)
	}
	lc := client(t, c)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "feed", SenderAddresses: []string{"10.0.0.2"}})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get(res.Token, "", ""); code != http.StatusForbidden {
		t.Errorf("a reservation's token: %d, want 403", code)
	}
	feed, err := lc.CreateToken(as(c.admin), &pb.CreateTokenRequest{Name: "feed",
		Permissions: []*pb.TokenPermission{perm(pb.ResourceType_ALL, "", pb.PermissionType_READ_ONLY)}})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get(feed.Token, "", ""); code != http.StatusOK {
		t.Errorf("a feed token (READ_ONLY on ALL): %d, want 200", code)
	}
	reg, err := lc.Register(as(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: "r", Weight: 1, IpAddress: "10.1.2.3", UdpPort: 17000})
	if err != nil {
		t.Fatal(err)
	}
	type reply struct {
		code       int
		etag, body string
	}
	polled := make(chan reply)
	go func() {
		code, etag, body := get(c.admin, empty, "10s")
		polled <- reply{code, etag, string(body)}
	}()
	time.Sleep(100 * time.Millisecond) // the poll waits
	if _, err := lc.SendState(as(res.Token), &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId, IsReady: true}); err != nil {
		t.Fatal(err)
	}
	c.Tick()
	var r reply
	select {
	case r = <-polled:
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll did not return at the change")
	}
	if r.code != http.StatusOK || r.etag == empty {
		t.Fatalf("after the first epoch: %d, ETag %q (before %q)", r.code, r.etag, empty)
	}
	es, err := packet.ParseEntries("feed", bytes.NewReader([]byte(r.body)), tables)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range es {
		count[e.Table]++
		if e.Table == calendar.CalendarTable && e.Entry.Params[0].Lo != 0 {
			t.Errorf("calendar entry %v names member %d, want 0", e.Entry.Keys, e.Entry.Params[0].Lo)
		}
	}
	if count[calendar.CalendarTable] != calendar.Slots || count[calendar.MemberTable] != 1 || count[calendar.EpochTable] != 1 || count["ipv4_src_filter_table"] != 1 {
		t.Errorf("the script has entries %v, want 512 calendar, 1 member, 1 epoch, 1 source", count)
	}
	start := time.Now()
	if code, etag, _ := get(c.admin, r.etag, "200ms"); code != http.StatusNotModified || etag != r.etag || time.Since(start) < 200*time.Millisecond {
		t.Errorf("a poll with the current ETag: %d, %q after %v; want 304 after 200ms", code, etag, time.Since(start))
	}
}
