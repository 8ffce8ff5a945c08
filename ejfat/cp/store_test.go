package cp

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/google/go-cmp/cmp"
)

func openStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// snapshot is everything a store holds in memory, for comparing a store
// with the one reopened from its database.
type snapshot struct {
	Res      []Reservation
	Sessions [][]Session
	Epochs   [][]Epoch
	Sync     [][]SyncSample
	Tokens   []Token
}

func snap(s *Store) snapshot {
	var x snapshot
	x.Res = s.Reservations()
	for _, r := range x.Res {
		x.Sessions = append(x.Sessions, s.Sessions(r.ID))
		x.Epochs = append(x.Epochs, s.Epochs(r.ID))
		x.Sync = append(x.Sync, s.Sync(r.ID))
	}
	for id := int64(1); id < 100; id++ {
		if t, ok := s.Token(id); ok {
			x.Tokens = append(x.Tokens, t)
		}
	}
	return x
}

func TestStoreReopensSameState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	s := openStore(t, path)
	now := time.UnixMilli(1_700_000_000_000)
	admin, _, err := s.CreateToken("admin", 0, []Permission{{Resource: pb.ResourceType_ALL, Level: pb.PermissionType_UPDATE}}, now)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := s.Reserve(Reservation{Name: "a", Strategy: "dynamic", Created: now, Until: now.Add(time.Hour),
		Senders: []string{"10.0.0.2", "10.0.0.1", "10.0.0.1"}}, 2, admin.ID,
		Permission{Resource: pb.ResourceType_LOAD_BALANCER, Level: pb.PermissionType_UPDATE})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Senders; !cmp.Equal(got, []string{"10.0.0.1", "10.0.0.2"}) {
		t.Errorf("senders %v", got)
	}
	x, _, err := s.Register(Session{Reservation: r.ID, Name: "w", Weight: 1, IP: "10.0.1.1", Port: 19522,
		PortRange: pb.PortRange_PORT_RANGE_4, MaxFactor: 2, Demands: []SlotRange{{Index: -1, Length: 8}}, Created: now},
		admin.ID, Permission{Resource: pb.ResourceType_SESSION, Level: pb.PermissionType_UPDATE})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddState(x.ID, State{Time: now, Fill: 0.5, Control: -0.25, Ready: true, Bytes: 1 << 40}); err != nil {
		t.Fatal(err)
	}
	cal := make([]int64, Slots)
	cal[7] = x.ID
	for n := uint64(1); n <= 6; n++ {
		if err := s.AddEpoch(r.ID, Epoch{Number: n, Boundary: 1<<63 + n, Created: now, Calendar: cal}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		if err := s.AddSync(r.ID, SyncSample{Time: now, Source: 3, Event: uint64(i) << 60, Rate: 1e6}); err != nil {
			t.Fatal(err)
		}
	}
	before := snap(s)
	if len(before.Epochs[0]) != liveEpochs || len(before.Sync[0]) != syncWindow || before.Sessions[0][0].State == nil {
		t.Fatalf("store kept %d epochs, %d sync samples, state %v", len(before.Epochs[0]), len(before.Sync[0]), before.Sessions[0][0].State)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path)
	defer s.Close()
	if d := cmp.Diff(before, snap(s)); d != "" {
		t.Errorf("reopened store differs (-before +after):\n%s", d)
	}
	if v, err := s.SchemaVersion(); err != nil || v != len(migrations) {
		t.Errorf("schema version %d, %v; want %d", v, err, len(migrations))
	}
}

func TestStoreInstancesAndFree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	s := openStore(t, path)
	defer func() { s.Close() }()
	now := time.Now()
	perm := Permission{Resource: pb.ResourceType_LOAD_BALANCER, Level: pb.PermissionType_UPDATE}
	a, aSecret, err := s.Reserve(Reservation{Created: now}, 2, 0, perm)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := s.Reserve(Reservation{Created: now}, 2, 0, perm)
	if err != nil {
		t.Fatal(err)
	}
	if a.Instance != 0 || b.Instance != 1 {
		t.Errorf("instances %d, %d; want 0, 1", a.Instance, b.Instance)
	}
	if _, _, err := s.Reserve(Reservation{Created: now}, 2, 0, perm); !errors.Is(err, ErrNoInstance) {
		t.Errorf("third reservation on 2 instances: %v, want ErrNoInstance", err)
	}
	admin, _, _ := s.CreateToken("admin", 0, nil, now)
	_, sessSecret, err := s.Register(Session{Reservation: a.ID, Created: now}, admin.ID, perm)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Free(a.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Authenticate(sessSecret); ok {
		t.Error("the token of a freed reservation's session still authenticates")
	}
	if _, ok := s.Token(admin.ID); !ok {
		t.Error("freeing a reservation revoked the token that registered its session")
	}
	s.Close()
	s = openStore(t, path) // the tokens are gone from the database too
	for _, secret := range []string{aSecret, sessSecret} {
		if _, ok := s.Authenticate(secret); ok {
			t.Error("a token of a freed reservation authenticates after reopening")
		}
	}
	if len(s.Sessions(a.ID)) != 0 {
		t.Error("sessions of a freed reservation remain")
	}
	if _, ok := s.Authenticate(aSecret); ok {
		t.Error("the token of a freed reservation still authenticates")
	}
	if err := s.AddSync(a.ID, SyncSample{Time: now}); !errors.Is(err, ErrNotFound) {
		t.Errorf("sync sample for a freed reservation: %v, want ErrNotFound", err)
	}
	if err := s.AddEpoch(a.ID, Epoch{Number: 1, Calendar: make([]int64, Slots)}); !errors.Is(err, ErrNotFound) {
		t.Errorf("epoch for a freed reservation: %v, want ErrNotFound", err)
	}
	var rows int
	s.db.QueryRow(`SELECT (SELECT COUNT(*) FROM sync_samples) + (SELECT COUNT(*) FROM epochs)`).Scan(&rows)
	if rows != 0 {
		t.Errorf("%d sync sample and epoch rows stored for a freed reservation", rows)
	}
	c, _, err := s.Reserve(Reservation{Created: now}, 2, 0, perm)
	if err != nil || c.Instance != 0 || c.ID == a.ID {
		t.Errorf("reservation after free: %+v, %v; want instance 0 and a new ID", c, err)
	}
}

func TestStoreRevokeCascades(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "cp.db"))
	defer s.Close()
	now := time.Now()
	root, _, _ := s.CreateToken("root", 0, nil, now)
	child, _, _ := s.CreateToken("child", root.ID, nil, now)
	_, grandSecret, _ := s.CreateToken("grandchild", child.ID, nil, now)
	other, _, _ := s.CreateToken("other", root.ID, nil, now)
	if !s.IsAncestorOrSelf(root.ID, child.ID) || s.IsAncestorOrSelf(child.ID, other.ID) {
		t.Error("ancestry wrong")
	}
	if err := s.Revoke(child.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Authenticate(grandSecret); ok {
		t.Error("grandchild of a revoked token still authenticates")
	}
	if _, ok := s.Token(other.ID); !ok {
		t.Error("revoking a token revoked its sibling")
	}
	if got := len(s.Children(root.ID)); got != 1 {
		t.Errorf("root has %d children after revoke, want 1", got)
	}
}

func TestStorePrune(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "cp.db"))
	defer s.Close()
	now := time.UnixMilli(1_700_000_000_000)
	perm := Permission{Resource: pb.ResourceType_LOAD_BALANCER, Level: pb.PermissionType_UPDATE}
	r, _, _ := s.Reserve(Reservation{Created: now}, 1, 0, perm)
	x, _, _ := s.Register(Session{Reservation: r.ID, Created: now}, 0, perm)
	for i := range 10 {
		at := now.Add(time.Duration(i) * time.Second)
		if err := s.AddState(x.ID, State{Time: at, Fill: float32(i) / 10}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddSync(r.ID, SyncSample{Time: at, Event: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flushSync(); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(now.Add(7 * time.Second)); err != nil {
		t.Fatal(err)
	}
	states, err := s.States(x.ID, time.Time{}, 100)
	if err != nil || len(states) != 3 || states[0].Fill != 0.7 {
		t.Errorf("states after pruning before 7 s: %+v, %v; want those at 7, 8, 9 s", states, err)
	}
	var n int
	s.db.QueryRow(`SELECT COUNT(*) FROM sync_samples`).Scan(&n)
	if n != 3 {
		t.Errorf("%d sync samples after pruning, want 3", n)
	}
}

// TestStoreRebaseEpoch: a rebase keeps the newest epoch, from event 0
// now, and the one added; the database says the same after a reopen.
func TestStoreRebaseEpoch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	s := openStore(t, path)
	defer func() { s.Close() }()
	now := time.UnixMilli(1_700_000_000_000) // as the database keeps it
	r, _, err := s.Reserve(Reservation{Created: now}, 1, 0, Permission{Resource: pb.ResourceType_LOAD_BALANCER, Level: pb.PermissionType_UPDATE})
	if err != nil {
		t.Fatal(err)
	}
	cal := make([]int64, Slots)
	for n := uint64(1); n <= 3; n++ {
		if err := s.AddEpoch(r.ID, Epoch{Number: n, Boundary: 1e15 + n, Created: now, Calendar: cal}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RebaseEpoch(r.ID, Epoch{Number: 4, Boundary: 500, Created: now, Calendar: cal}); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, e := range s.Epochs(r.ID) {
		got = append(got, e.Number, e.Boundary)
	}
	if want := []uint64{3, 0, 4, 500}; !cmp.Equal(got, want) {
		t.Errorf("epochs (number, boundary) %v, want %v", got, want)
	}
	before := snap(s)
	s.Close()
	s = openStore(t, path)
	if d := cmp.Diff(before, snap(s)); d != "" {
		t.Errorf("reopened store differs (-before +after):\n%s", d)
	}
}
