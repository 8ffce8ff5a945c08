package cp_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// testCP is a CP serving gRPC and HTTP on loopback.
type testCP struct {
	*cp.CP
	store      *cp.Store
	grpc, http string // addresses
	admin      string // the admin token
	stop       func() // stops it (at the test's end if not before)
}

// startCP runs a CP over a new database until the test ends.
func startCP(t testing.TB, cfg cp.Config) *testCP {
	t.Helper()
	return startCPAt(t, cfg, t.TempDir())
}

// startCPAt runs a CP over the database in dir (cp.db, admin), new or not.
func startCPAt(t testing.TB, cfg cp.Config, dir string) *testCP {
	t.Helper()
	store, err := cp.Open(filepath.Join(dir, "cp.db"))
	if err != nil {
		t.Fatal(err)
	}
	admin, _, err := cp.AdminToken(store, filepath.Join(dir, "admin"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SyncIPv4 == "" {
		cfg.SyncIPv4 = "127.0.0.1"
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.GRPCAddr = gl.Addr().String()
	c, err := cp.New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := c.GRPCServer()
	hs := &http.Server{Handler: c.HTTPHandler()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	go gs.Serve(gl)
	go hs.Serve(hl)
	stop := sync.OnceFunc(func() {
		gs.GracefulStop()
		hs.Close()
		cancel()
		<-done
		store.Close()
	})
	t.Cleanup(stop)
	return &testCP{CP: c, store: store, grpc: gl.Addr().String(), http: hl.Addr().String(), admin: admin, stop: stop}
}

// dial connects to a CP's gRPC address.
func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// as returns a context carrying token as the bearer.
func as(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

// client is the generated client, for tests other than interop.
func client(t testing.TB, c *testCP) pb.LoadBalancerClient {
	return pb.NewLoadBalancerClient(dial(t, c.grpc))
}

// cpConfig is a small CP: two instances, loopback addresses.
func cpConfig() cp.Config {
	return cp.Config{Instances: 2, DataIPv4: "127.0.0.1", DataIPv6: "::1", DataPortMin: 19522, DataPortMax: 19523}
}
