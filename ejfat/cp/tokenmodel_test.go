package cp_test

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
)

// TestLoadBalancerIsAnInstance: as in udplbd2, LOAD_BALANCER n is LB
// instance n (fpgaLbId): RESERVE on it reserves that instance alone, and
// READ_ONLY on it reads the reservation there, not the others.
func TestLoadBalancerIsAnInstance(t *testing.T) {
	c := startCP(t, cpConfig())
	lc := client(t, c)
	other, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "other"}) // instance 0
	if err != nil {
		t.Fatal(err)
	}
	tok, err := lc.CreateToken(as(c.admin), &pb.CreateTokenRequest{Name: "lb1", Permissions: []*pb.TokenPermission{
		perm(pb.ResourceType_LOAD_BALANCER, "1", pb.PermissionType_RESERVE)}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := lc.ReserveLoadBalancer(as(tok.Token), &pb.ReserveLoadBalancerRequest{Name: "mine"})
	if err != nil || res.FpgaLbId != 1 {
		t.Fatalf("reserve with RESERVE on instance 1: %v, %v", res, err)
	}
	_, err = lc.FreeLoadBalancer(as(c.admin), &pb.FreeLoadBalancerRequest{LbId: other.LbId})
	wantCode(t, "free instance 0", err, codes.OK)
	_, err = lc.ReserveLoadBalancer(as(tok.Token), &pb.ReserveLoadBalancerRequest{Name: "again"})
	wantCode(t, "reserve again: instance 0 is free but not the token's", err, codes.ResourceExhausted)
	_, err = lc.GetLoadBalancer(as(tok.Token), &pb.GetLoadBalancerRequest{LbId: res.LbId})
	wantCode(t, "read the reservation on instance 1", err, codes.OK)
	again, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "admin"})
	if err != nil || again.FpgaLbId != 0 {
		t.Fatalf("admin reserve: %v, %v", again, err)
	}
	_, err = lc.GetLoadBalancer(as(tok.Token), &pb.GetLoadBalancerRequest{LbId: again.LbId})
	wantCode(t, "read the reservation on instance 0", err, codes.PermissionDenied)
	ov, err := lc.Overview(as(tok.Token), &pb.OverviewRequest{})
	if err != nil || len(ov.LoadBalancers) != 1 || ov.LoadBalancers[0].Reservation.LbId != res.LbId {
		t.Errorf("overview with instance 1's token: %v, %v", ov, err)
	}
}

// TestMigrationLoadBalancerToReservation: a database of schema 1, where
// LOAD_BALANCER named a reservation, opens with those permissions as
// RESERVATION ones.
func TestMigrationLoadBalancerToReservation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	hash := sha256.Sum256([]byte("secret"))
	for _, q := range []string{`CREATE TABLE schema_version (version INTEGER NOT NULL)`, cp.Migrations[0],
		`INSERT INTO schema_version VALUES (1)`,
		`INSERT INTO tokens (id, hash, name, created) VALUES (1, x'` + hex.EncodeToString(hash[:]) + `', 'reservation 7', 0)`,
		`INSERT INTO token_permissions VALUES (1, 1, '7', 3), (1, 3, '9', 3)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s, err := cp.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tok, ok := s.Authenticate("secret")
	want := []cp.Permission{{Resource: pb.ResourceType_RESERVATION, ID: "7", Level: pb.PermissionType_UPDATE},
		{Resource: pb.ResourceType_SESSION, ID: "9", Level: pb.PermissionType_UPDATE}}
	if !ok || len(tok.Perms) != 2 || tok.Perms[0] != want[0] || tok.Perms[1] != want[1] {
		t.Errorf("permissions after migration %v (%v), want %v", tok.Perms, ok, want)
	}
	if v, err := s.SchemaVersion(); err != nil || v != len(cp.Migrations) {
		t.Errorf("schema version %d, %v", v, err)
	}
}
