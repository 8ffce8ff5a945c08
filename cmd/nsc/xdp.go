package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/internal/fileout"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/packet/frame"
	"github.com/dragonet-go/nsc/packet/table"
)

// runXDP runs a compiled XDP program: `nsc xdp run` (BPF_PROG_TEST_RUN
// over a pcap) and `nsc xdp attach` (on an interface).
func runXDP(e *env, args []string) error {
	if len(args) == 0 {
		return usagef("want run or attach")
	}
	switch args[0] {
	case "-h", "--help", "help":
		return &helpRequest{"xdp", nil}
	case "run":
		return xdpRun(e, args[1:])
	case "attach":
		return xdpAttach(e, args[1:])
	}
	return usagef("unknown xdp command %q (have run, attach)", args[0])
}

// loadXDP loads an object and fills its maps from a table script.
func loadXDP(obj, tables string) (*xdprun.Runner, error) {
	r, err := xdprun.Load(obj)
	if err != nil {
		return nil, err
	}
	var ts []*table.Table
	err = openTables(tables, func(f *os.File) (err error) {
		if f == nil {
			ts, err = r.Tables("", nil)
		} else {
			ts, err = r.Tables(tables, f)
		}
		return err
	})
	if err == nil {
		err = r.SetTables(ts)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func xdpRun(e *env, args []string) error {
	fs := newFlags("xdp run", e)
	obj := fs.String("obj", "", "the compiled program (nsc compile --target xdp)")
	tables := fs.String("tables", "", "table entries (table_add lines)")
	in := fs.String("in", "", "input pcap (or pcapng)")
	out := fs.String("out", "", "output pcap: every frame the program transmits (XDP_TX)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return usagef("unexpected arguments %v", files)
	}
	if *obj == "" || *in == "" || *out == "" {
		return usagef("--obj, --in and --out are required")
	}
	if err := refuseOverwrite([]string{*obj, *tables, *in}, *out); err != nil {
		return err
	}
	defer fileout.AbortOnInterrupt()()
	frames, err := pcapio.ReadFile(*in)
	if err != nil {
		return err
	}
	r, err := loadXDP(*obj, *tables)
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := pcapio.Create(*out)
	if err != nil {
		return err
	}
	defer w.Abort()
	paths := map[string]string{}
	for _, s := range r.Meta.Sinks {
		if s.Verdict == "XDP_TX" {
			paths[s.Node] = *out
		} else {
			paths[s.Node] = s.Verdict + " (to the kernel)"
		}
	}
	short := 0
	for i, fr := range frames {
		if len(fr.Data) < frame.EthernetLen {
			short++
			continue
		}
		res, err := r.Run(fr.Data)
		if err != nil {
			return fmt.Errorf("frame %d: %w", i+1, err)
		}
		if res.Verdict == xdprun.VerdictTX {
			w.WritePacket(fr.CI, res.Data)
		}
	}
	if err := w.Commit(); err != nil {
		return err
	}
	c, oversize, err := r.Counters()
	if err != nil {
		return err
	}
	printCounters(e, len(frames), c, paths)
	if short > 0 {
		fmt.Fprintf(e.stdout, "  %d frames shorter than 14 bytes not run (XDP never sees them)\n", short)
	}
	if oversize > 0 {
		fmt.Fprintf(e.stdout, "  %d frames longer than %d bytes passed to the kernel untouched\n", oversize, r.Meta.MaxFrame)
	}
	return nil
}

func xdpAttach(e *env, args []string) error {
	fs := newFlags("xdp attach", e)
	dev := fs.String("dev", "", "network interface")
	obj := fs.String("obj", "", "the compiled program (nsc compile --target xdp)")
	tables := fs.String("tables", "", "table entries (table_add lines)")
	duration := fs.Duration("duration", 0, "detach after this long (default: when interrupted)")
	mode := fs.String("mode", "", "XDP mode: driver, generic or offload (default: driver if the driver has it, else generic)")
	pin := fs.String("pin", "", "pin the link, program, maps and a manifest in this new directory on a BPF filesystem and exit, leaving the program attached (rm -r the directory detaches it); nsc cp --xdp-pinned drives its maps")
	host := fs.String("host", "", "model whose host part runs every frame the program passes, sending what it sends out of --dev: an LB (lb-2026), or an RDMA responder split on RDMAXDP (naa, irn)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return usagef("unexpected arguments %v", files)
	}
	if *dev == "" || *obj == "" {
		return usagef("--dev and --obj are required")
	}
	if *pin != "" && *duration > 0 {
		return usagef("--pin leaves the program attached: no --duration")
	}
	if *pin != "" && *host != "" {
		return usagef("--pin exits once attached and --host runs in the foreground: not both")
	}
	if *pin != "" {
		if err := xdprun.OnBPFFS(filepath.Dir(*pin)); err != nil {
			return fmt.Errorf("--pin: %w", err)
		}
	}
	fl, ok := xdpModes[*mode]
	if !ok {
		return usagef("unknown mode %q (have driver, generic, offload)", *mode)
	}
	r, err := loadXDP(*obj, *tables)
	if err != nil {
		return err
	}
	defer r.Close()
	var h *xdpHost
	if *host != "" {
		// Listening before the program is attached: no passed frame is missed.
		if h, err = openXDPHost(e, *host, *dev, *tables, r.Meta); err != nil {
			return err
		}
	}
	l, err := r.Attach(*dev, fl)
	if err != nil {
		return fmt.Errorf("attach to %s: %w", *dev, err)
	}
	defer l.Close()
	fmt.Fprintf(e.stdout, "attached %s (graph %s) to %s", *obj, r.Meta.Graph, *dev)
	if *pin != "" {
		err := r.Pin(*pin)
		if err == nil {
			if err = l.Pin(filepath.Join(*pin, xdprun.LinkPin)); err != nil {
				os.RemoveAll(*pin)
			}
		}
		if err != nil {
			fmt.Fprintln(e.stdout)
			return fmt.Errorf("--pin: %w", err)
		}
		fmt.Fprintf(e.stdout, ", pinned in %s until it is removed\n", *pin)
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
		fmt.Fprintf(e.stdout, " for %v\n", *duration)
	} else {
		fmt.Fprintf(e.stdout, " until interrupted\n")
	}
	start := time.Now()
	if h != nil {
		fmt.Fprintf(e.stdout, "host part of %s on %s: runs every frame the program passes\n", *host, *dev)
		if err := h.serve(ctx); err != nil {
			return err
		}
	}
	<-ctx.Done()
	if err := l.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	c, oversize, err := r.Counters()
	if err != nil {
		return err
	}
	in := uint64(0)
	for _, v := range c.Sinks {
		in += v
	}
	for _, v := range c.Drops {
		in += v
	}
	paths := map[string]string{}
	for _, s := range r.Meta.Sinks {
		paths[s.Node] = s.Verdict
	}
	fmt.Fprintf(e.stdout, "detached after %v\n", time.Since(start).Round(time.Millisecond))
	printCounters(e, int(in+oversize), c, paths)
	if oversize > 0 {
		fmt.Fprintf(e.stdout, "  %d frames longer than %d bytes passed to the kernel untouched\n", oversize, r.Meta.MaxFrame)
	}
	if h != nil {
		return h.report(e)
	}
	return nil
}
