package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
)

// BenchmarkSendRecv: b.N events of 64 KiB or 1 MiB from nsc send --gso (MTU 9000,
// unpaced or at a rate) to nsc recv (2 ports, 1 or 2 threads) on
// loopback, directly (every datagram to the first port: the baseline) and
// through nsc lb (a process, one worker, lb-2025, spreading the events
// over both ports). Send and recv run in-process. events/s and Gbps are
// the receiver's, from its first datagram to its last event; %lost the
// events that never completed (a socket overflowed); Gbps/lb-cpu the
// events' bits per second of the LB process's CPU time (user and
// kernel), what it would forward on a core of its own. Bound it with
// -benchtime=Nx.
func BenchmarkSendRecv(b *testing.B) {
	for _, c := range []struct {
		lb            bool
		threads, rate int
		size          int
	}{{false, 1, 0, 64 << 10}, {false, 1, 4000, 64 << 10}, {true, 1, 0, 64 << 10}, {true, 2, 0, 64 << 10}, {true, 2, 4000, 64 << 10},
		{false, 2, 0, 1 << 20}, {true, 2, 0, 1 << 20}} {
		name := fmt.Sprintf("direct/threads=%d/rate=%d/size=%d", c.threads, c.rate, c.size)
		if c.lb {
			name = "lb" + name[len("direct"):]
		}
		b.Run(name, func(b *testing.B) { benchSendRecv(b, c.lb, c.threads, c.rate, c.size) })
	}
}

func benchSendRecv(b *testing.B, viaLB bool, threads, rate, size int) {
	quiet := &env{io.Discard, io.Discard}
	o, err := parseRecv(quiet, []string{"--listen", "127.0.0.1:0", "--ports", "2", "--threads", strconv.Itoa(threads)})
	if err != nil {
		b.Fatal(err)
	}
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.run(ctx, &env{&out, io.Discard}) }()
	defer func() {
		cancel()
		<-done
	}()
	var base int
	ports := regexp.MustCompile(`ports (\d+)-`)
	until(b, "nsc recv listening", func() bool {
		m := ports.FindStringSubmatch(out.String())
		if m != nil {
			base = atoi(m[1])
		}
		return m != nil
	})
	to := fmt.Sprintf("127.0.0.1:%d", base)
	var lb *nscProcess
	if viaLB {
		addr := lbtest.Addr(b)
		tables := filepath.Join(b.TempDir(), "lb.tables")
		writeFile(b, tables, e2eTables(addr.AddrPort().Addr(), [2]int{base, base}))
		lb = startLB(b, "--tables", tables, "--listen", addr.String(), "--workers", "1")
		to = addr.String()
	}
	b.ResetTimer()
	if code := run([]string{"send", "--to", to, "--from", "127.0.0.1:0", "--events", strconv.Itoa(b.N), "--size", strconv.Itoa(size), "--rate", strconv.Itoa(rate), "--gso"}, quiet); code != 0 {
		b.Fatalf("nsc send exited %d", code)
	}
	// The last events: until every one is delivered, or none for 200 ms.
	for last, idle := uint64(0), time.Now(); o.got.events.Load() < uint64(b.N) && time.Since(idle) < 200*time.Millisecond; time.Sleep(time.Millisecond) {
		if n := o.got.events.Load(); n != last {
			last, idle = n, time.Now()
		}
	}
	b.StopTimer()
	n, w := o.got.events.Load(), o.got.window()
	b.ReportMetric(float64(n)/w.Seconds(), "events/s")
	b.ReportMetric(gbps(n*uint64(size), w), "Gbps")
	b.ReportMetric(float64(uint64(b.N)-n)/float64(b.N)*100, "%lost")
	if lb != nil {
		// What the LB's socket never got: lost on the way in, not out.
		_, last := lb.stop(b, syscall.SIGTERM)
		segments := b.N * ((size + 8935) / 8936) // MTU 9000 over IPv4: 8936 event bytes a datagram
		b.ReportMetric(float64(segments-counter(b, []string{last}, "received"))/float64(segments)*100, "%lost-before-lb")
		// The rate the LB's own CPU time allows (its start and stop
		// included), whatever else shares the cores.
		if ru, ok := lb.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			cpu := time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
			b.ReportMetric(gbps(n*uint64(size), cpu), "Gbps/lb-cpu")
		}
	}
}

// syncBuffer is a buffer one goroutine writes while another reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
