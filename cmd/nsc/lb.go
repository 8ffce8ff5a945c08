package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/packet"
)

func runLB(e *env, args []string) error {
	fs := newFlags("lb", e)
	lb := fs.String("lb", "lb-2025", "LB model")
	tables := fs.String("tables", "", "table entries (table_add lines)")
	listen := fs.String("listen", "", "UDP address to receive EJFAT datagrams on (the LB's own IP and port)")
	mac := fs.String("mac", "", "the LB's MAC (default: from the MAC filter entries)")
	batch := fs.Int("batch", 64, "datagrams per recvmmsg/sendmmsg")
	duration := fs.Duration("duration", 0, "stop after this long (default: at interrupt)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(files) > 0 || *listen == "" || *tables == "" {
		return usagef("--tables and --listen are required")
	}
	var ts []*packet.Table
	if err := openTables(*tables, func(f *os.File) (err error) {
		ts, err = lbfast.Tables(*lb, *tables, f)
		return err
	}); err != nil {
		return err
	}
	pl, err := lbfast.NewSocket(*lb, ts)
	if err != nil {
		return err
	}
	own, ok := lbnet.OwnMAC(ts)
	if *mac != "" {
		own, err = net.ParseMAC(*mac)
		if err != nil {
			return usagef("--mac: %v", err)
		}
	} else if !ok {
		return usagef("no unicast MAC in the tables' MAC filter; give --mac")
	}
	addr, err := net.ResolveUDPAddr("udp", *listen)
	if err != nil {
		return usagef("--listen: %v", err)
	}
	conn, err := net.ListenUDP("udp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	f := &lbnet.Forwarder{PL: pl, Conn: conn, MAC: own, Batch: *batch}
	fmt.Fprintf(e.stdout, "%s forwarding on %s (MAC %s)\n", *lb, conn.LocalAddr(), own)
	start := time.Now()
	err = f.Run(ctx)
	secs := time.Since(start).Seconds()
	fmt.Fprintf(e.stdout, "%d received, %d forwarded, %d dropped, %d send errors in %.1fs (%.0f packets/s)\n",
		f.Stats.Received.Load(), f.Stats.Forwarded.Load(), f.Stats.Dropped.Load(), f.Stats.SendErrors.Load(), secs, float64(f.Stats.Forwarded.Load())/secs)
	return err
}
