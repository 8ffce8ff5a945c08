package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/ejfat/recvcp"
	"github.com/dragonet-go/nsc/ejfat/recvnet"
	"github.com/dragonet-go/nsc/ejfat/segment"
	"github.com/dragonet-go/nsc/internal/fileout"
	"github.com/dragonet-go/nsc/internal/pcapio"
)

// recvOpts is nsc recv's command line, and the counters of a run that
// are not a reassembler's.
type recvOpts struct {
	listen, out, in string
	ports, threads  int
	timeout, runFor time.Duration
	maxEvent        uint
	maxBytes        int64
	maxEvents       int
	events          uint64
	verify, noGRO   bool
	base            netip.AddrPort // --listen resolved
	reasm           reasm.Config
	cp              cpSession // --cp: register and report state
	engine          string
	jsonOut         io.Writer       // --json: the final counters go here, the text to stderr
	slow            time.Duration   // an application this much slower per event (demos)
	hurry           context.Context // ends at a second signal: leave at once (nil: never)

	deliveredEnough context.CancelFunc // stops a live run at --events
	got             delivery
}

func runRecv(e *env, args []string) error {
	o, err := parseRecv(e, args)
	if err != nil {
		return err
	}
	if o.jsonOut != nil {
		e = &env{e.stderr, e.stderr}
	}
	ctx, again, stop := signals()
	defer stop()
	o.hurry = again
	return o.run(ctx, e)
}

// signals returns a context that ends at the first SIGINT or SIGTERM and
// one that ends at the second, until stop.
func signals() (first, second context.Context, stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	first, end1 := context.WithCancel(context.Background())
	second, end2 := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		for _, end := range []context.CancelFunc{end1, end2} {
			select {
			case <-ch:
				end()
			case <-done:
				return
			}
		}
	}()
	return first, second, func() {
		signal.Stop(ch)
		close(done)
		end1()
		end2()
	}
}

func parseRecv(e *env, args []string) (*recvOpts, error) {
	o := &recvOpts{}
	fs := newFlags("recv", e)
	fs.StringVar(&o.listen, "listen", "", "the first UDP address and port to receive on (port 0: any free ones)")
	fs.IntVar(&o.ports, "ports", 1, "consecutive ports to receive on, a power of 2 (the member's port range)")
	fs.IntVar(&o.threads, "threads", 0, "receive threads, each with its own reassembler; a port's datagrams go to one (default: one per port, at most one per CPU)")
	fs.DurationVar(&o.timeout, "timeout", reasm.DefaultTimeout, "how long an event may take to complete after its first segment")
	fs.UintVar(&o.maxEvent, "max-event", reasm.DefaultMaxEventSize, "the largest event accepted, bytes")
	fs.Int64Var(&o.maxBytes, "max-bytes", reasm.DefaultMaxBytes, "the bytes of event buffers the receiver holds, all threads together (in progress, complete until written, free)")
	fs.IntVar(&o.maxEvents, "max-events", reasm.DefaultMaxEvents, "incomplete events held, all threads together; past it the oldest with one segment, else the oldest, is dropped")
	fs.StringVar(&o.out, "out", "", "write each complete event to DIR/<event>-<dataid>.bin")
	fs.StringVar(&o.in, "in", "", "reassemble the UDP datagrams of this pcap (to the --listen ports, if given) instead of listening")
	fs.BoolVar(&o.verify, "verify", false, "check each event holds nsc send's synthetic content for its number and data id")
	fs.Uint64Var(&o.events, "events", 0, "stop after this many complete events (0: at SIGINT or SIGTERM)")
	fs.DurationVar(&o.runFor, "duration", 0, "stop after this long (0: at SIGINT or SIGTERM)")
	o.cp.flags(fs)
	fs.IntVar(&o.reasm.Queue, "queue", reasm.DefaultQueue, "complete events that may wait for the application (per thread); past it they are lost, counted as enqueue errors")
	fs.DurationVar(&o.slow, "slow", 0, "take this long over each complete event, as a slow application would (its queue fills)")
	asJSON := fs.Bool("json", false, "print the final counters as JSON on stdout, the text on stderr (docs/json.md)")
	gro := fs.Bool("gro", true, "take the datagrams of one flow coalesced (UDP_GRO: from GSO senders, or a NIC's GRO); false: each in a message of its own")
	fs.StringVar(&o.engine, "engine", "runtime", "what reassembles: runtime (ejfat/reasm, after the kernel's checks) or model (the Go code generated from models/ejfat/reassembler.nsc, by its rules)")
	rest, err := parseArgs(fs, args)
	o.noGRO = !*gro
	if err != nil {
		return nil, err
	}
	if *asJSON {
		o.jsonOut = e.stdout
	}
	return o, o.check(rest)
}

// run receives (or reads the pcap) until ctx ends, --events or
// --duration.
func (o *recvOpts) run(ctx context.Context, e *env) error {
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
	}
	if o.in != "" {
		return o.offline(e)
	}
	return o.live(ctx, e)
}

func (o *recvOpts) check(rest []string) error {
	switch {
	case len(rest) > 0:
		return usagef("unexpected arguments %q", rest)
	case o.listen == "" && o.in == "":
		return usagef("--listen or --in is required")
	case o.ports < 1 || o.ports > 1<<14 || bits.OnesCount(uint(o.ports)) != 1:
		return usagef("--ports %d: must be a power of 2, 1 to 16384", o.ports)
	case o.threads < 0 || o.threads > o.ports:
		return usagef("--threads %d: must be 1 to --ports (%d)", o.threads, o.ports)
	case o.maxEvent < 1 || o.maxEvent > 0xffffffff:
		return usagef("--max-event %d: must be 1 to 4294967295", o.maxEvent)
	case o.timeout <= 0:
		return usagef("--timeout %v: must be positive", o.timeout)
	}
	if o.engine != "runtime" && o.engine != "model" {
		return usagef("--engine %q: runtime or model", o.engine)
	}
	if o.threads == 0 {
		o.threads = min(o.ports, runtime.NumCPU())
	}
	if o.reasm.Queue < 1 {
		return usagef("--queue %d: must be at least 1", o.reasm.Queue)
	}
	o.reasm = reasm.Config{Timeout: o.timeout, MaxEventSize: uint32(o.maxEvent), Queue: o.reasm.Queue,
		MaxBytes: o.maxBytes / int64(o.threads), MaxEvents: max(1, o.maxEvents/o.threads)}
	switch {
	case o.maxEvents < 1:
		return usagef("--max-events %d: must be at least 1", o.maxEvents)
	case o.maxBytes < 1:
		return usagef("--max-bytes %d: must be positive", o.maxBytes)
	}
	if _, err := reasm.New(o.reasm); err != nil {
		return usagef("--max-bytes %d over %s: %v", o.maxBytes, plural(o.threads, "thread"), err)
	}
	if o.listen != "" {
		var err error
		if o.base, err = resolveUDP(o.listen); err != nil {
			return usagef("--listen: %v", err)
		}
		if int(o.base.Port())+o.ports > 65536 {
			return usagef("--listen %s --ports %d: ports past 65535", o.listen, o.ports)
		}
	}
	return nil
}

// delivery counts what the application did with the complete events,
// and when the first datagram came and the last event went (Unix ns): the
// rates are over that window, not the idle time around it.
type delivery struct {
	events, bytes, verified, bad, writeErrors atomic.Uint64
	first, last                               atomic.Int64
}

// began notes the first datagram's time.
func (d *delivery) began() {
	if d.first.Load() == 0 {
		d.first.CompareAndSwap(0, time.Now().UnixNano())
	}
}

// window is the time from the first datagram to the last event delivered.
func (d *delivery) window() time.Duration {
	return time.Duration(max(0, d.last.Load()-d.first.Load()))
}

// memoryBound is the most memory a live run holds whatever it receives
// (docs/reassembly.md, "Memory"): its reassemblers', the readers'
// batches, and the runtime's own.
func (o *recvOpts) memoryBound() int64 {
	const runtime = 64 << 20
	r, _ := o.reasm.Memory() // checked by check
	return int64(o.threads)*r + int64(o.ports)*recvnet.ReadBatch*recvnet.MaxDatagram + runtime
}

// live receives on the ports until a signal, --events or --duration.
func (o *recvOpts) live(ctx context.Context, e *env) error {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(o.memoryBound()) // the collector keeps freed buffers from piling up
	}
	d := &o.got
	rx, err := recvnet.Listen(recvnet.Config{Listen: o.base, Ports: o.ports, Threads: o.threads, NoGRO: o.noGRO,
		New:     func() (recvnet.Reassembler, error) { return o.newReassembler(nil) },
		Deliver: func(ev *reasm.Event) { o.deliver(e, ev, d) }, Began: d.began})
	if err != nil {
		return err
	}
	first := rx.Addr()
	fmt.Fprintf(e.stdout, "receiving on %s, ports %d-%d, with %s, in at most %d MiB\n", first.Addr(), first.Port(),
		int(first.Port())+o.ports-1, plural(o.threads, "thread"), o.memoryBound()>>20)
	// The run ends at --duration, --events or a signal; with --cp, a
	// signal first has the receiver leave the calendars (recvcp.Session.Leave).
	run, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	o.deliveredEnough = stopRun
	if o.runFor > 0 {
		var cancel context.CancelFunc
		run, cancel = context.WithTimeout(run, o.runFor)
		defer cancel()
	}
	var link *recvcp.Session
	if o.cp.Addr != "" {
		if link, err = o.cp.start(e, first, o.ports, func() (reasm.Stats, float64) { return rx.Stats(), rx.Fill() }); err != nil {
			rx.Close()
			return err
		}
		defer link.Stop() // deregisters after the readers stopped
	}
	go func() {
		select {
		case <-ctx.Done():
			if link != nil {
				hurry := o.hurry
				if hurry == nil {
					hurry = context.Background()
				}
				link.Leave(hurry)
			}
			stopRun()
		case <-run.Done():
		}
	}()
	progress := o.progress(e, rx.Stats, d, time.Now())
	rx.Run(run)
	progress()
	if coalesced, truncated := rx.Coalesced(); coalesced > 0 {
		fmt.Fprintf(e.stderr, "nsc recv: %d messages of datagrams the kernel coalesced (UDP_GRO), %d of them cut at %d bytes\n",
			coalesced, truncated, recvnet.MaxDatagram)
	}
	return o.report(e, rx.Stats(), rx.LBHeaders(), 0, d)
}

// deliver checks and writes one complete event.
func (o *recvOpts) deliver(e *env, ev *reasm.Event, d *delivery) {
	time.Sleep(o.slow)
	if o.verify {
		if at := segment.Verify(ev.Data, ev.Number, ev.DataID); at >= 0 {
			d.bad.Add(1)
			fmt.Fprintf(e.stderr, "nsc recv: event %d data id %d from %s: byte %d of %d is not the synthetic content\n",
				ev.Number, ev.DataID, ev.Src, at, len(ev.Data))
		} else {
			d.verified.Add(1)
		}
	}
	if o.out != "" {
		name := filepath.Join(o.out, fmt.Sprintf("%d-%d.bin", ev.Number, ev.DataID))
		if err := fileout.WriteFile(name, ev.Data); err != nil {
			d.writeErrors.Add(1)
			fmt.Fprintf(e.stderr, "nsc recv: %v\n", err)
		}
	}
	d.bytes.Add(uint64(len(ev.Data)))
	d.last.Store(time.Now().UnixNano())
	if n := d.events.Add(1); o.events != 0 && n >= o.events && o.deliveredEnough != nil {
		o.deliveredEnough()
	}
}

// progress prints the counters on stderr once a second until the returned
// function is called.
func (o *recvOpts) progress(e *env, stats func() reasm.Stats, d *delivery, start time.Time) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				s := stats()
				fmt.Fprintf(e.stderr, "nsc recv: %d events, %d lost, %d packets, %.3f Gbps\n",
					d.events.Load(), s.Errors(), s.Packets, gbps(d.bytes.Load(), now.Sub(start)))
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// report prints the final counters (spec §4.6), the segments dropped by
// reason, and the rate; an error if an event failed --verify or could
// not be written.
func (o *recvOpts) report(e *env, s reasm.Stats, lbHeaders, skips uint64, d *delivery) error {
	w := e.stdout
	fmt.Fprintf(w, "%d events received, %d reassembled, %d errors (%d timed out, %d evicted), %d dequeued, %d enqueue errors\n",
		s.Received, s.Reassembled, s.Errors(), s.TimedOut, s.Evicted, s.Dequeued, s.EnqueueErrors)
	fmt.Fprintf(w, "%d packets, %d bytes, %d with an LB header, %d skipped\n", s.Packets, s.Bytes, lbHeaders, skips)
	for i, n := range s.Segments {
		if why := reasm.Reason(i); n > 0 && why != reasm.Placed && why != reasm.Completed {
			fmt.Fprintf(w, "  drop %-16s %d\n", why, n)
		}
	}
	n, b, took := d.events.Load(), d.bytes.Load(), d.window()
	fmt.Fprintf(w, "%d events delivered, %d bytes", n, b)
	if took > 0 {
		fmt.Fprintf(w, " in %.3fs: %.0f events/s, %.3f Gbps", took.Seconds(), float64(n)/took.Seconds(), gbps(b, took))
	}
	if o.verify {
		fmt.Fprintf(w, "; %d verified, %d bad", d.verified.Load(), d.bad.Load())
	}
	fmt.Fprintln(w)
	var errs []error
	if o.jsonOut != nil {
		errs = append(errs, printJSON(o.jsonOut, o.recvJSONOf(s, lbHeaders, skips, d)))
	}
	if n := d.bad.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("nsc recv: %d events failed --verify", n))
	}
	if n := d.writeErrors.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("nsc recv: %d events not written", n))
	}
	return errors.Join(errs...)
}

// offline reassembles the UDP datagrams of a pcap on the capture's clock:
// an event times out --timeout after its first segment's frame.
func (o *recvOpts) offline(e *env) error {
	frames, err := pcapio.ReadFile(o.in)
	if err != nil {
		return err
	}
	d := &o.got
	p := recvnet.Replay{Listen: o.base, Ports: o.ports, Timeout: o.timeout, New: o.newReassembler,
		Deliver: func(ev *reasm.Event) { o.deliver(e, ev, d) }, Began: d.began}
	res, err := p.Run(frames)
	if err != nil {
		return err
	}
	return o.report(e, res.Stats, res.LBHeaders, res.Skipped, d)
}

// newReassembler makes a thread's reassembler: the runtime with --timeout
// and --max-event, or the model's generated code; now is the clock (nil:
// time.Now).
func (o *recvOpts) newReassembler(now func() time.Time) (recvnet.Reassembler, error) {
	if o.engine == "model" {
		return recvnet.NewModel(now, o.reasm.Queue)
	}
	cfg := o.reasm
	cfg.Now = now
	r, err := reasm.New(cfg)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return r, nil
}
