package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// cpFlags are nsc cp's options; a --config file gives defaults the command
// line overrides.
type cpFlags struct {
	config, grpc, http, db, adminFile, tlsCert, tlsKey string
	cfg                                                cp.Config
	dataPortMin, dataPortMax                           uint
	epochs                                             *cp.Calendars
	lb                                                 cpLBFlags
}

func (f *cpFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "file of `name value` lines setting these flags (the command line wins)")
	fs.StringVar(&f.grpc, "grpc", "", "HOST:PORT to serve the gRPC API on (required)")
	fs.StringVar(&f.http, "http", "", "HOST:PORT to serve /metrics and the dashboard on (default: none)")
	fs.StringVar(&f.db, "db", "", "SQLite database file (required; created at first start)")
	fs.StringVar(&f.adminFile, "admin-token-file", "", "file holding the admin token (required; written at first start)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file for gRPC (with --tls-key)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "TLS key file for gRPC")
	fs.IntVar(&f.cfg.Instances, "instances", 8, "LB instances (virtual LBs) served")
	fs.StringVar(&f.cfg.DataIPv4, "data-ipv4", "", "the LB's IPv4 data address, handed out at reservation (default: --lb-listen's, else --sync-ipv4)")
	fs.StringVar(&f.cfg.DataIPv6, "data-ipv6", "", "the LB's IPv6 data address (default: the IPv4 one, IPv4-mapped)")
	fs.UintVar(&f.dataPortMin, "data-port-min", 19522, "the LB's first data port")
	fs.UintVar(&f.dataPortMax, "data-port-max", 19522, "the LB's last data port")
	fs.StringVar(&f.cfg.SyncIPv4, "sync-ipv4", "127.0.0.1", "address the sync servers listen on and hand out")
	fs.StringVar(&f.cfg.SyncIPv6, "sync-ipv6", "", "IPv6 address the sync servers also listen on and hand out (default: --sync-ipv4's, IPv4-mapped)")
	fs.BoolVar(&f.cfg.DenyLoopback, "deny-loopback", false, "refuse receivers registering loopback addresses (udplbd2's allow_loopback: false)")
	fs.BoolVar(&f.cfg.DenyPrivate, "deny-private", false, "refuse receivers registering private addresses (udplbd2's allow_private: false)")
	fs.IntVar(&f.cfg.SyncPort, "sync-port", 0, "instance i's sync server listens on this port + i (0: any free port)")
	fs.DurationVar(&f.cfg.ReadyTimeout, "ready-timeout", 2*time.Second, "a session without SendState this long is not ready")
	fs.DurationVar(&f.cfg.DeleteTimeout, "delete-timeout", 60*time.Second, "a session without SendState this long is deleted")
	fs.DurationVar(&f.cfg.EpochInterval, "epoch-interval", time.Second, "how often new epochs are considered")
	fs.DurationVar(&f.cfg.Retention, "retention", 10*time.Minute, "how long session states and sync samples are kept")
	lim := cp.DefaultLimits()
	fs.IntVar(&f.cfg.Limits.Sessions, "max-sessions", lim.Sessions, "sessions per LB")
	fs.IntVar(&f.cfg.Limits.TokenChildren, "max-token-children", lim.TokenChildren, "child tokens per token")
	fs.IntVar(&f.cfg.Limits.TokenDescendants, "max-token-descendants", lim.TokenDescendants, "descendant tokens per token but the admin token")
	fs.IntVar(&f.cfg.Limits.TokenDepth, "max-token-depth", lim.TokenDepth, "how far below the admin token a token may be")
	f.epochs = cp.NewCalendars()
	f.cfg.Epocher = f.epochs
	fs.DurationVar(&f.epochs.Lead, "epoch-lead", cp.DefaultLead, "an epoch's boundary is predicted for this long after it is made (the data plane's install time)")
	fs.DurationVar(&f.epochs.Guard, "epoch-guard", cp.DefaultGuard, "and this much time's worth of events more (rate rises, late sync messages)")
	fs.Uint64Var(&f.epochs.Slack, "epoch-slack", 0, "ticks added to a boundary (E2SAR's random low tick bits)")
	f.lb.define(fs)
}

// cpOptions parses the command line, over the --config file if it names one.
func cpOptions(e *env, args []string) (*cpFlags, error) {
	f := &cpFlags{}
	fs := newFlags("cp", e)
	f.define(fs)
	if _, err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	if f.config != "" {
		config := f.config
		f = &cpFlags{}
		fs = newFlags("cp", e)
		f.define(fs)
		if err := readConfig(fs, config); err != nil {
			return nil, err
		}
		if _, err := parseArgs(fs, args); err != nil {
			return nil, err
		}
	}
	switch {
	case fs.NArg() > 0:
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	case f.grpc == "" || f.db == "" || f.adminFile == "":
		return nil, usagef("--grpc, --db and --admin-token-file are required")
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return nil, usagef("--tls-cert and --tls-key go together")
	case f.dataPortMin == 0 || f.dataPortMin > f.dataPortMax || f.dataPortMax > 65535:
		return nil, usagef("data ports %d..%d: want 1 <= min <= max <= 65535", f.dataPortMin, f.dataPortMax)
	case f.cfg.Instances < 1:
		return nil, usagef("--instances %d: want at least 1", f.cfg.Instances)
	case min(f.cfg.Limits.Sessions, f.cfg.Limits.TokenChildren, f.cfg.Limits.TokenDescendants, f.cfg.Limits.TokenDepth) < 1:
		return nil, usagef("--max-sessions, --max-token-children, --max-token-descendants and --max-token-depth: want at least 1")
	case f.lb.feed && f.http == "":
		return nil, usagef("--lb-feed needs --http")
	}
	f.cfg.DataPortMin, f.cfg.DataPortMax = uint32(f.dataPortMin), uint32(f.dataPortMax)
	f.cfg.TLS = f.tlsCert != ""
	f.cfg.GRPCAddr = f.grpc
	if err := f.lb.check(); err != nil {
		return nil, err
	}
	f.dataFromLB(fs)
	return f, nil
}

// dataFromLB makes the in-process LB's address (--lb-listen) the data
// address and port handed out when they are not given.
func (f *cpFlags) dataFromLB(fs *flag.FlagSet) {
	lb, err := netip.ParseAddrPort(f.lb.listen)
	if err != nil || lb.Addr().IsUnspecified() {
		return
	}
	if f.cfg.DataIPv4 == "" && f.cfg.DataIPv6 == "" {
		if ip := lb.Addr().Unmap(); ip.Is4() {
			f.cfg.DataIPv4 = ip.String()
		} else {
			f.cfg.DataIPv6 = ip.String()
		}
	}
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "data-port-min" || fl.Name == "data-port-max" })
	if !set {
		f.cfg.DataPortMin, f.cfg.DataPortMax = uint32(lb.Port()), uint32(lb.Port())
	}
}

// readConfig sets fs's flags from file's `name value` (or `name = value`)
// lines; # starts a comment.
func readConfig(fs *flag.FlagSet, file string) error {
	r, err := os.Open(file)
	if err != nil {
		return err
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		name, value, _ := strings.Cut(strings.TrimSpace(line), " ")
		if name == "" {
			continue
		}
		value = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(value), "="))
		if name == "config" {
			return fmt.Errorf("%s:%d: a config file cannot name another", file, n)
		}
		if err := fs.Set(strings.TrimLeft(name, "-"), value); err != nil {
			return fmt.Errorf("%s:%d: %v", file, n, err)
		}
	}
	return sc.Err()
}

func runCP(e *env, args []string) error {
	f, err := cpOptions(e, args)
	if err != nil {
		return err
	}
	store, err := cp.Open(f.db)
	if err != nil {
		return err
	}
	defer store.Close()
	admin, created, err := cp.AdminToken(store, f.adminFile, time.Now())
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(e.stdout, "admin token (written to %s, shown once): %s\n", f.adminFile, admin)
	}
	prog, golb, closers, err := f.lb.open(e.stdout)
	if err != nil {
		return err
	}
	for _, c := range closers {
		defer c.Close()
	}
	f.cfg.Programming = prog
	if f.lb.feed {
		f.cfg.Feed = &cp.TableFeed{}
	}
	c, err := cp.New(store, f.cfg)
	if err != nil {
		return err
	}
	var opts []grpc.ServerOption
	if f.tlsCert != "" {
		creds, err := credentials.NewServerTLSFromFile(f.tlsCert, f.tlsKey)
		if err != nil {
			return err
		}
		opts = append(opts, grpc.Creds(creds))
	}
	return serveCP(e, c, store, f, opts, golb)
}

// serveCP serves until SIGINT or SIGTERM, then stops accepting calls,
// finishes those in flight, and returns (the caller closes the database).
// It runs golb, the in-process LB (if not nil), alongside. The HTTP
// server (metrics, dashboard, tables) uses TLS when gRPC does.
func serveCP(e *env, c *cp.CP, store *cp.Store, f *cpFlags, opts []grpc.ServerOption, golb *cp.GoLB) error {
	gl, err := net.Listen("tcp", f.grpc)
	if err != nil {
		return err
	}
	gs := c.GRPCServer(opts...)
	hs := &http.Server{Handler: c.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errs := make(chan error, 3)
	where := "gRPC on " + gl.Addr().String()
	if f.http != "" {
		hl, err := net.Listen("tcp", f.http)
		if err != nil {
			gl.Close()
			return err
		}
		where += ", HTTP on " + hl.Addr().String()
		go func() {
			if f.tlsCert != "" {
				errs <- ignoreClosed(hs.ServeTLS(hl, f.tlsCert, f.tlsKey))
			} else {
				errs <- ignoreClosed(hs.Serve(hl))
			}
		}()
	}
	if f.lb.xdpDev != "" {
		where += fmt.Sprintf(", %s XDP on %s", f.lb.model, f.lb.xdpDev)
	}
	if f.lb.xdpPinned != "" {
		where += fmt.Sprintf(", %s XDP pinned in %s", f.lb.model, f.lb.xdpPinned)
	}
	lbDone := make(chan struct{})
	if golb != nil {
		where += fmt.Sprintf(", %s LB on %s", f.lb.model, golb.Conns[0].LocalAddr())
		start := time.Now()
		go func() {
			errs <- golb.Run(ctx)
			reportLB(e, golb.LB, time.Since(start))
			close(lbDone)
		}()
	} else {
		close(lbDone)
	}
	runDone := make(chan struct{})
	go func() { c.Run(ctx); close(runDone) }()
	go func() { errs <- gs.Serve(gl) }()
	if err := store.Announce(where); err != nil {
		fmt.Fprintf(e.stderr, "nsc cp: the database's lock file: %v\n", err)
	}
	fmt.Fprintf(e.stdout, "nsc cp: %s\n", where)
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	stop()
	shutdown(gs, hs)
	<-runDone
	<-lbDone
	return err
}

// shutdown stops the servers gracefully, forcibly after 10 s.
func shutdown(gs *grpc.Server, hs *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { gs.GracefulStop(); close(done) }()
	hs.Shutdown(ctx)
	select {
	case <-done:
	case <-ctx.Done():
		gs.Stop()
	}
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
