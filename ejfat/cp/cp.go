package cp

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc"
)

// Config is what a CP serves and how it keeps time.
type Config struct {
	Instances   int    // LB instances (virtual LBs) served; default 8
	DataIPv4    string // the LB's data addresses, handed out at reservation
	DataIPv6    string
	DataPortMin uint32
	DataPortMax uint32
	SyncIPv4    string // where senders send sync messages; the sync servers listen here (default 127.0.0.1)
	SyncIPv6    string // and here too, when set
	SyncPort    int    // instance i's sync server listens on SyncPort+i; 0: any free port each
	TLS         bool   // the gRPC server uses TLS: ejfatUris are ejfats://
	// GRPCAddr is the gRPC server's address (host:port): this CP's name
	// in chain graphs, and the host of ejfatUris when a call has no
	// :authority.
	GRPCAddr string

	// Receivers refused at Register (udplbd2's allow_loopback and
	// allow_private, the other way round: nsc allows both by default).
	DenyLoopback bool
	DenyPrivate  bool // RFC 1918, shared, link-local, documentation, ULA

	ReadyTimeout  time.Duration // a session without SendState this long is not ready; default 2 s
	DeleteTimeout time.Duration // and is deleted after this long; default 60 s
	EpochInterval time.Duration // how often epochs are considered; default 1 s
	Retention     time.Duration // states and sync samples kept this long; default 10 min
	Limits        Limits        // what clients may make (limits.go)

	Epocher     Epocher
	Programming Programming // the data plane; none when its DataPlane is nil
	// Feed, if set, is programmed beside the data plane (its tables: the
	// Programming's) and served on the HTTP handler as GET /tables.
	Feed   *TableFeed
	Now    func() time.Time // default time.Now
	Commit string           // reported by Version
}

func (cfg *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if cfg.Instances == 0 {
		cfg.Instances = 8
	}
	def(&cfg.ReadyTimeout, 2*time.Second)
	def(&cfg.DeleteTimeout, 60*time.Second)
	def(&cfg.EpochInterval, time.Second)
	def(&cfg.Retention, 10*time.Minute)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Epocher == nil {
		cfg.Epocher = NewCalendars()
	}
	cfg.Limits.defaults()
	if cfg.SyncIPv4 == "" {
		cfg.SyncIPv4 = "127.0.0.1"
	}
	if cfg.DataPortMin == 0 {
		cfg.DataPortMin, cfg.DataPortMax = 19522, 19522
	}
}

// CP is a running control plane: the gRPC service over a Store, the sync
// servers, the housekeeping loop, metrics and dashboard.
type CP struct {
	pb.UnimplementedLoadBalancerServer
	cfg     Config
	addrs   replyAddrs
	store   *Store
	metrics *metrics
	sync    []syncConn // per instance, IPv4 and maybe IPv6
	wg      sync.WaitGroup
	mu      sync.Mutex // serializes housekeeping and Free/Reset with epochs
	pruned  time.Time  // when Tick last pruned
	prog    programmer // guarded by mu
	started time.Time  // when New made the CP: sessions are not timed out for the time before
}

// New makes a CP over store and opens its sync servers.
func New(store *Store, cfg Config) (*CP, error) {
	cfg.defaults()
	if f := cfg.Feed; f != nil {
		f.Tables = cfg.Programming.Tables
		if p := &cfg.Programming; p.DataPlane == nil {
			p.DataPlane = f
		} else {
			p.DataPlane = &DataPlanes{Planes: []DataPlane{p.DataPlane, f}}
		}
	}
	prog, err := newProgrammer(&cfg.Programming)
	if err != nil {
		return nil, err
	}
	for _, r := range store.Reservations() {
		if r.Instance < 0 || r.Instance >= cfg.Instances {
			return nil, fmt.Errorf("LB %d is on instance %d; this CP serves instances 0 to %d", r.ID, r.Instance, cfg.Instances-1)
		}
	}
	c := &CP{cfg: cfg, addrs: addrsOf(&cfg), store: store, prog: prog, started: cfg.Now()}
	store.setLimits(cfg.Limits)
	c.metrics = newMetrics(c)
	if err := c.listenSync(); err != nil {
		return nil, err
	}
	return c, nil
}

// GRPCServer returns a gRPC server with the service registered, opts added.
func (c *CP) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	s := grpc.NewServer(append(opts, grpc.ChainUnaryInterceptor(c.interceptor, c.checkRequest))...)
	pb.RegisterLoadBalancerServer(s, c)
	return s
}

// HTTPHandler serves /metrics, the dashboard and, with a Feed, /tables.
func (c *CP) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", c.metrics.handler())
	mux.HandleFunc("/{$}", c.dashboard)
	if c.cfg.Feed != nil {
		mux.HandleFunc("GET /tables", c.serveTables)
	}
	return mux
}

// Run serves sync messages and runs the housekeeping loop until ctx ends,
// then closes the sync servers.
func (c *CP) Run(ctx context.Context) {
	for _, s := range c.sync {
		c.wg.Go(func() { c.serveSync(s.instance, s.conn) })
	}
	c.wg.Go(func() { c.reportUpstream(ctx) })
	t := time.NewTicker(c.cfg.EpochInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.closeSync()
			c.wg.Wait()
			return
		case <-t.C:
			c.Tick()
		}
	}
}
