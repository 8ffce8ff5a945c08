package cp

import (
	"context"
	"database/sql"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
)

// goodDB writes a database with an admin token, a child token, a
// reservation with a sender, a session with a state, an epoch and a sync
// sample, and returns its path.
func goodDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cp.db")
	s := openStore(t, path)
	defer s.Close()
	now := time.UnixMilli(1_800_000_000_000)
	admin, _, err := s.CreateToken("admin", 0, []Permission{{Resource: pb.ResourceType_ALL, Level: pb.PermissionType_UPDATE}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateToken("child", admin.ID, []Permission{{Resource: pb.ResourceType_ALL, Level: pb.PermissionType_READ_ONLY}}, now); err != nil {
		t.Fatal(err)
	}
	perm := Permission{Resource: pb.ResourceType_LOAD_BALANCER, Level: pb.PermissionType_UPDATE}
	r, _, err := s.Reserve(Reservation{Name: "r", Strategy: "dynamic", Created: now, Senders: []string{"127.0.0.1"}}, 2, admin.ID, perm)
	if err != nil {
		t.Fatal(err)
	}
	x, _, err := s.Register(Session{Reservation: r.ID, Name: "w", Weight: 1, IP: "127.0.0.1", Port: 20000, Created: now}, r.Token, perm)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddState(x.ID, State{Time: now, Ready: true}); err != nil {
		t.Fatal(err)
	}
	cal := make([]int64, Slots)
	for i := range cal {
		cal[i] = x.ID
	}
	for n := range uint64(2) {
		if err := s.AddEpoch(r.ID, Epoch{Number: n + 1, Boundary: 100 * (n + 1), Created: now, Calendar: cal}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddSync(r.ID, SyncSample{Time: now, Source: 1, Event: 5, Rate: 1000}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCorruptRows opens databases with one row made wrong each (as a
// crafted or damaged file may have them): each is an error at Open that
// names what is wrong, or a CP that runs over it — ticks, programs a
// table feed, answers Overview and Status, serves /metrics and the
// dashboard — but never a panic.
func TestCorruptRows(t *testing.T) {
	for _, c := range []struct {
		name, sql string
		refused   bool // Open must fail
	}{
		{"token hash of 2 bytes", `UPDATE tokens SET hash = x'0102' WHERE id = 2`, true},
		{"token hash empty", `UPDATE tokens SET hash = x'' WHERE id = 2`, true},
		{"token parent missing", `UPDATE tokens SET parent = 99 WHERE id = 2`, true},
		{"token its own parent", `UPDATE tokens SET parent = 2 WHERE id = 2`, true},
		{"token parent cycle", `UPDATE tokens SET parent = 2 WHERE id = 1`, true},
		{"token name not text", `UPDATE tokens SET name = x'ff00' WHERE id = 2`, false},
		{"token id text", `UPDATE token_permissions SET token = 'x' WHERE token = 2`, true},
		{"permission unknown", `UPDATE token_permissions SET resource_type = 99, permission = -7 WHERE token = 2`, false},
		{"calendar of 10 bytes", `UPDATE epochs SET calendar = x'00010203040506070809' WHERE number = 2`, true},
		{"calendar empty", `UPDATE epochs SET calendar = x'' WHERE number = 1`, true},
		{"calendar of unknown sessions", `UPDATE epochs SET calendar = zeroblob(4096)`, false},
		{"boundaries not increasing", `UPDATE epochs SET boundary = 50 WHERE number = 2`, true},
		{"epoch numbers not increasing", `UPDATE epochs SET number = 0 WHERE number = 2`, true},
		{"boundary 2^64-1", `UPDATE epochs SET boundary = -1 WHERE number = 2`, false},
		{"slot demands not JSON", `UPDATE sessions SET demands = '{'`, true},
		{"slot demands out of range", `UPDATE sessions SET demands = '[{"Index":9999,"Length":4000000000}]'`, false},
		{"session IP not an address", `UPDATE sessions SET ip = 'nowhere'`, false},
		{"port range 99", `UPDATE sessions SET port_range = 99`, false},
		{"port 1e6", `UPDATE sessions SET port = 1000000`, false},
		{"port text", `UPDATE sessions SET port = 'x'`, true},
		{"weight NaN", `UPDATE sessions SET weight = 'NaN'`, false},
		{"weight negative", `UPDATE sessions SET weight = -5, min_factor = -1, max_factor = -2`, false},
		{"state fill 1e300", `UPDATE session_states SET fill = 1e300, control = -1e300`, true},
		{"instance 99", `UPDATE reservations SET instance = 99`, true},
		{"instance -1", `UPDATE reservations SET instance = -1`, true},
		{"strategy unknown", `UPDATE reservations SET strategy = 'bogus'`, false},
		{"ip family 77", `UPDATE reservations SET ip_family = 77`, false},
		{"sender not an address", `UPDATE senders SET address = 'x'`, false},
		{"sync event text", `UPDATE sync_samples SET event = 'x'`, true},
		{"schema version from the future", `INSERT INTO schema_version VALUES (99)`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := goodDB(t)
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(c.sql); err != nil {
				t.Fatal(err)
			}
			db.Close()
			err = runCorrupt(t, path)
			switch {
			case c.refused && err == nil:
				t.Errorf("the CP took the database")
			case !c.refused && err != nil:
				t.Errorf("the CP refused the database: %v", err)
			case err != nil:
				t.Logf("refused: %v", err)
			}
		})
	}
}

// runCorrupt opens path and runs a CP over it; a panic is a test error.
func runCorrupt(t *testing.T, path string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("panic: %v", p)
		}
	}()
	s, err := Open(path)
	if err != nil {
		return err
	}
	defer s.Close()
	tables, err := ModelTables("lb-2025")
	if err != nil {
		t.Fatal(err)
	}
	clk := time.UnixMilli(1_800_000_000_500)
	c, err := New(s, Config{Instances: 2, SyncIPv4: "127.0.0.1", Now: func() time.Time { return clk },
		Programming: Programming{Tables: tables}, Feed: &TableFeed{}})
	if err != nil {
		return err
	}
	defer c.closeSync()
	c.Tick()
	admin, _ := s.Token(1)
	ctx := context.WithValue(context.Background(), callerKey{}, admin)
	if _, err := c.Overview(ctx, &pb.OverviewRequest{}); err != nil {
		t.Errorf("Overview: %v", err)
	}
	for _, r := range s.Reservations() {
		c.LoadBalancerStatus(ctx, &pb.LoadBalancerStatusRequest{LbId: fmt.Sprint(r.ID)})
	}
	for _, page := range []string{"/metrics", "/", "/tables"} {
		c.HTTPHandler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", page, nil))
	}
	return nil
}
