package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/internal/xsk"
	"github.com/dragonet-go/nsc/packet/table"
)

func runLB(e *env, args []string) error {
	fs := newFlags("lb", e)
	lb := fs.String("lb", "lb-2025", "LB model")
	tables := fs.String("tables", "", "table entries (table_add lines); SIGHUP reloads them")
	listen := fs.String("listen", "", "UDP address to receive EJFAT datagrams on (the LB's own IP and port)")
	afxdp := fs.String("afxdp", "", "instead of --listen: take every frame of a queue of this interface on an AF_XDP socket (copy mode; root) and send what the LB sends back out of it")
	queue := fs.Int("queue", 0, "with --afxdp: the interface's queue")
	mac := fs.String("mac", "", "the LB's MAC (default: from the MAC filter entries)")
	batch := fs.Int("batch", lbnet.DefaultBatch, fmt.Sprintf("datagrams per recvmmsg/sendmmsg (1 to %d)", lbnet.MaxBatch))
	workers := fs.Int("workers", runtime.NumCPU(), "receivers on the port (SO_REUSEPORT), each with its own fast path")
	maxDatagram := fs.Int("max-datagram", lbnet.MaxUDPPayload, "largest datagram forwarded; larger ones are counted oversize")
	duration := fs.Duration("duration", 0, "stop after this long (default: at SIGINT or SIGTERM)")
	pin := fs.Bool("pin", false, "pin worker i to the i-th CPU the process may run on (mod their number)")
	fromCP := &cpTables{}
	fs.StringVar(&fromCP.addr, "cp", "", "HOST:PORT of an nsc cp's --http (run with --lb-feed): forward by the tables it writes as well as --tables, following their changes")
	fs.StringVar(&fromCP.token, "token", "", "with --cp: a token of the CP holding READ_ONLY on ALL (a feed token, or the admin token)")
	fs.StringVar(&fromCP.ca, "tls-ca", "", "with --cp: the CA certificate of a CP serving TLS (--tls-cert): fetch the tables over HTTPS")
	asJSON := fs.Bool("json", false, "print the final counters as JSON on stdout, the text on stderr (docs/json.md)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	var jsonOut io.Writer
	if *asJSON {
		jsonOut, e = e.stdout, &env{e.stderr, e.stderr}
	}
	if len(files) > 0 || (*listen == "") == (*afxdp == "") || *tables == "" {
		return usagef("--tables and one of --listen and --afxdp are required")
	}
	if err := checkAFXDP(fs, *afxdp); err != nil {
		return err
	}
	if (fromCP.addr == "") != (fromCP.token == "") || (fromCP.ca != "" && fromCP.addr == "") {
		return usagef("--cp and --token go together, and --tls-ca with them")
	}
	if err := fromCP.dial(); err != nil {
		return err
	}
	newPipeline := lbfast.NewSocket // behind the kernel's UDP sockets
	if *afxdp != "" {
		newPipeline = lbfast.New // whole frames
	}
	cfg := lbnet.Config{
		New:         func(ts []*table.Table) (fastpath.Pipeline, error) { return newPipeline(*lb, ts) },
		Batch:       *batch,
		MaxDatagram: *maxDatagram,
		Pin:         *pin,
	}
	if err := cfg.Check(); err != nil {
		return usagef("%v", err)
	}
	if *workers < 1 {
		return usagef("--workers %d: must be at least 1", *workers)
	}
	var fixed net.HardwareAddr
	if *mac != "" {
		if fixed, err = net.ParseMAC(*mac); err != nil {
			return usagef("--mac: %v", err)
		}
	}
	load := func() ([]*table.Table, net.HardwareAddr, error) {
		return loadLBTables(*lb, *tables, fromCP.entries(), fixed)
	}
	if fromCP.addr != "" { // start with the CP's tables if it answers
		if script, etag, _, err := fromCP.poll(context.Background(), 0); err != nil {
			fmt.Fprintf(e.stderr, "nsc lb: nsc cp at %s: %v; starting with %s alone\n", fromCP.addr, err, *tables)
		} else {
			fromCP.script, fromCP.etag = script, etag
		}
	}
	ts, own, err := load()
	if err != nil {
		return err
	}
	var on string
	if *afxdp != "" {
		s, err := xsk.Open(*afxdp, *queue, lbnet.XSKConfig)
		if err != nil {
			return err
		}
		defer s.Close()
		cfg.XSK = []*xsk.Socket{s}
		on, *workers = fmt.Sprintf("%s queue %d (AF_XDP, copy mode)", *afxdp, *queue), 1
	} else {
		addr, err := net.ResolveUDPAddr("udp", *listen)
		if err != nil {
			return usagef("--listen: %v", err)
		}
		if cfg.Conns, err = lbnet.Listen(addr, *workers); err != nil {
			return err
		}
		for _, c := range cfg.Conns {
			defer c.Close()
		}
		on = cfg.Conns[0].LocalAddr().String()
	}
	fwd, err := lbnet.New(cfg)
	if err != nil {
		return err
	}
	if err := fwd.SetTables(ts, own); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s forwarding on %s with %s (MAC %s)\n", *lb, on, plural(*workers, "worker"), own)
	if fromCP.etag != "" {
		fmt.Fprintf(e.stdout, "tables from nsc cp at %s: version %s\n", fromCP.addr, fromCP.etag)
	}
	reload := func() error {
		ts, own, err := load()
		if err == nil {
			err = fwd.SetTables(ts, own)
		}
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if fromCP.addr != "" {
		go fromCP.follow(ctx, e, reload)
	}
	start := time.Now()
	err = serveLB(e, fwd, *tables, *duration, reload)
	took := time.Since(start)
	reportLB(e, fwd, took)
	if jsonOut != nil {
		err = errors.Join(err, printJSON(jsonOut, lbJSONOf(fwd, took)))
	}
	return err
}

// checkAFXDP refuses the flags that do not go with --afxdp (an AF_XDP
// socket takes one queue: one worker; a frame's length is bounded by its
// chunk), and --queue without it; and an interface that does not exist.
func checkAFXDP(fs *flag.FlagSet, iface string) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		switch {
		case err != nil:
		case iface == "" && f.Name == "queue":
			err = usagef("--queue goes with --afxdp")
		case iface != "" && (f.Name == "workers" || f.Name == "max-datagram"):
			err = usagef("--%s does not go with --afxdp (one worker a queue; frames up to %d bytes, longer ones stay with the kernel)", f.Name, lbnet.XSKMaxLen)
		}
	})
	if err != nil || iface == "" {
		return err
	}
	if _, err := net.InterfaceByName(iface); err != nil {
		return usagef("--afxdp %s: no such interface (%v)", iface, err)
	}
	return nil
}

// loadLBTables loads a table script whole, and more entries after it (a
// control plane's), with the LB's MAC: fixed, or the one the MAC filter
// admits.
func loadLBTables(lb, file string, more []byte, fixed net.HardwareAddr) ([]*table.Table, net.HardwareAddr, error) {
	var ts []*table.Table
	if err := openTables(file, func(f *os.File) (err error) {
		ts, err = lbfast.Tables(lb, file, io.MultiReader(f, strings.NewReader("\n"), bytes.NewReader(more)))
		return err
	}); err != nil {
		return nil, nil, err
	}
	if fixed != nil {
		return ts, fixed, nil
	}
	own, ok := lbnet.OwnMAC(ts)
	if !ok {
		return nil, nil, fmt.Errorf("%s: no unicast MAC in the MAC filter's entries; give --mac", file)
	}
	return ts, own, nil
}

// serveLB runs the LB until SIGINT or SIGTERM (or for d, if not 0),
// calling reload at every SIGHUP to load the tables file anew; the LB
// keeps its tables when reload fails.
func serveLB(e *env, fwd *lbnet.LB, tables string, d time.Duration, reload func() error) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	done := make(chan error, 1)
	go func() { done <- fwd.Run(ctx) }()
	for {
		select {
		case <-hup:
			if err := reload(); err != nil {
				fmt.Fprintf(e.stderr, "nsc lb: reload: %v; keeping the old tables\n", err)
			} else {
				fmt.Fprintf(e.stdout, "reloaded %s\n", tables)
			}
		case err := <-done:
			return err
		}
	}
}

// reportLB prints the LB's counters, its fast paths' drops by reason
// among them.
func reportLB(e *env, fwd *lbnet.LB, d time.Duration) {
	s := fwd.Stats()
	fmt.Fprintf(e.stdout, "%d received, %d forwarded, %d dropped, %d oversize, %d send errors in %.1fs (%.0f packets/s)\n",
		s.Received, s.Forwarded, s.Dropped, s.Oversize, s.SendErrors, d.Seconds(), float64(s.Forwarded)/d.Seconds())
	drops := fwd.Drops()
	sites := slices.SortedFunc(maps.Keys(drops), func(a, b fastpath.DropSite) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Reason, b.Reason))
	})
	for _, k := range sites {
		fmt.Fprintf(e.stdout, "  drop %-24s %6d  (%s)\n", k.Node, drops[k], k.Reason)
	}
}
