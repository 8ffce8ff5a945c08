package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
)

// TestMain lets tests run this binary as nsc (nscProcess).
func TestMain(m *testing.M) {
	if os.Getenv("NSC_TEST_AS_NSC") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// wait bounds every wait on an nsc process: a failure, not a measurement.
// Generous, because a CP that compiles and loads an XDP LB (clang, then
// the verifier over ~275k instructions since xdp.frags) took more than 10 s
// on this 2-core machine under load.
const wait = 60 * time.Second

// nscProcess is nsc running as a process; its output arrives line by
// line.
type nscProcess struct {
	name        string // the command
	cmd         *exec.Cmd
	stdout      chan string
	stderr      chan string
	exited      chan struct{}
	mu          sync.Mutex
	out, errOut []string // every line so far
}

func startLB(t testing.TB, args ...string) *nscProcess {
	t.Helper()
	p := startNSC(t, append([]string{"lb"}, args...)...)
	p.expect(t, p.stdout, "forwarding on")
	return p
}

// startNSC starts nsc with args; it is killed when the test ends, if it
// is still running.
func startNSC(t testing.TB, args ...string) *nscProcess {
	t.Helper()
	return startNSCIn(t, "", args...)
}

// startNSCIn is startNSC in network namespace netns (ip netns exec,
// which becomes nsc: signals reach it); "" for the test's own.
func startNSCIn(t testing.TB, netns string, args ...string) *nscProcess {
	t.Helper()
	p := &nscProcess{name: args[0], stdout: make(chan string, 100), stderr: make(chan string, 100), exited: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], args...)
	if netns != "" {
		p.cmd = exec.Command("ip", append([]string{"netns", "exec", netns, os.Args[0]}, args...)...)
	}
	p.cmd.Env = append(os.Environ(), "NSC_TEST_AS_NSC=1")
	stdout, _ := p.cmd.StdoutPipe()
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	readers.Go(func() { p.lines(stdout, p.stdout, &p.out) })
	readers.Go(func() { p.lines(stderr, p.stderr, &p.errOut) })
	go func() {
		readers.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

func (p *nscProcess) lines(r interface{ Read([]byte) (int, error) }, ch chan string, all *[]string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		p.mu.Lock()
		*all = append(*all, sc.Text())
		p.mu.Unlock()
		select {
		case ch <- sc.Text():
		default: // no one waits for it
		}
	}
}

// expect waits for a line of ch holding want.
func (p *nscProcess) expect(t testing.TB, ch chan string, want string) string {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case l := <-ch:
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("nsc %s did not print %q; stdout %q, stderr %q", p.name, want, p.out, p.errOut)
		}
	}
}

// stop signals the process and returns its exit code and its last line.
func (p *nscProcess) stop(t testing.TB, sig os.Signal) (int, string) {
	t.Helper()
	p.cmd.Process.Signal(sig)
	code, out := p.waitExit(t)
	if len(out) == 0 {
		return code, ""
	}
	return code, out[len(out)-1]
}

// waitExit waits for the process to end and returns its exit code and
// every line it printed on stdout.
func (p *nscProcess) waitExit(t testing.TB) (int, []string) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(wait):
		t.Fatalf("nsc %s did not exit", p.name)
	}
	p.cmd.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.ProcessState.ExitCode(), slices.Clone(p.out)
}

// writeFile replaces a file whole (as a control plane should: a reload
// never reads it half written).
func writeFile(t testing.TB, name, data string) {
	t.Helper()
	if err := os.WriteFile(name+".new", []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(name+".new", name); err != nil {
		t.Fatal(err)
	}
}

// arrivals collects which member each event's tick arrived at.
type arrivals struct {
	mu sync.Mutex
	at map[uint64][]int // tick → members, in order of arrival
}

func collect(t *testing.T, members ...*lbtest.Member) *arrivals {
	a := &arrivals{at: map[uint64][]int{}}
	for _, m := range members {
		go func() {
			for d := range m.Got() {
				tick, ok := lbtest.Tick(d)
				if !ok {
					t.Errorf("member %d got %q", m.ID, d)
					continue
				}
				a.mu.Lock()
				a.at[tick] = append(a.at[tick], m.ID)
				a.mu.Unlock()
			}
		}()
	}
	return a
}

// count is how many events from tick from on arrived at member id.
func (a *arrivals) count(id int, from uint64) (n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for tick, ms := range a.at {
		for _, m := range ms {
			if m == id && tick >= from {
				n++
			}
		}
	}
	return n
}

// until waits for cond, polling.
func until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(wait); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestLBReloadAndStop runs nsc lb as a process with two workers while two
// senders send events: SIGHUP with a good table file moves the events
// from member A to member B, SIGHUP with a bad one (whose good lines send
// to A) leaves them at B, and SIGTERM stops it with its counters and exit
// code 0. Every event arrives once, at A or B; none before the first
// SIGHUP at B, none after nsc lb said it reloaded at A.
func TestLBReloadAndStop(t *testing.T) {
	a, b := lbtest.NewMember(t, 0), lbtest.NewMember(t, 1)
	at := collect(t, a, b)
	addr := lbtest.Addr(t)
	tables := filepath.Join(t.TempDir(), "lb.tables")
	toA, toB := lbtest.Tables(addr.AddrPort().Addr(), a.Dest(), a.Dest()), lbtest.Tables(addr.AddrPort().Addr(), b.Dest(), b.Dest())
	writeFile(t, tables, toA)
	p := startLB(t, "--lb", "lb-2025", "--tables", tables, "--listen", addr.String(), "--workers", "2", "--batch", "8")

	var sent atomic.Uint64
	quit, stopped := make(chan struct{}), make(chan struct{})
	senders := [2]*net.UDPConn{lbtest.Sender(t, addr), lbtest.Sender(t, addr)}
	stopSending := sync.OnceFunc(func() {
		close(quit)
		<-stopped
	})
	t.Cleanup(stopSending) // before the senders close, should the test fail
	go func() {
		defer close(stopped)
		for tick := uint64(0); tick < 100000; tick++ { // a bound, should the test not stop it
			select {
			case <-quit:
				return
			default:
			}
			sent.Store(tick + 1) // before the write: ticks from sent.Load() on are yet to be sent
			if _, err := senders[tick%2].Write(lbtest.Event(tick, 0)); err != nil {
				t.Error(err)
				return
			}
			if tick%16 == 15 {
				time.Sleep(time.Millisecond) // stay within the socket buffers
			}
		}
	}()
	until(t, "events at A", func() bool { return at.count(a.ID, 0) >= 100 })

	writeFile(t, tables, toB)
	beforeHUP := sent.Load()
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.expect(t, p.stdout, "reloaded "+tables)
	reloaded := sent.Load()
	until(t, "events at B after the reload", func() bool { return at.count(b.ID, reloaded) >= 100 })

	writeFile(t, tables, toA+"table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 2 => 0x1122334455667788 0x7f000001 1 0 0\n")
	badHUP := sent.Load()
	p.cmd.Process.Signal(syscall.SIGHUP)
	if l := p.expect(t, p.stderr, "keeping the old tables"); !strings.Contains(l, "lb.tables:8:") {
		t.Errorf("the reload's error does not name the bad line: %q", l)
	}
	until(t, "events at B after the bad reload", func() bool { return at.count(b.ID, badHUP) >= 100 })
	stopSending()
	n := sent.Load()
	until(t, "every event", func() bool { return at.count(a.ID, 0)+at.count(b.ID, 0) >= int(n) })

	code, last := p.stop(t, syscall.SIGTERM)
	if want := fmt.Sprintf("%d received, %d forwarded, 0 dropped, 0 oversize, 0 send errors", n, n); code != 0 || !strings.HasPrefix(last, want) {
		t.Errorf("nsc lb exited %d, its last line %q; want 0 and %q", code, last, want)
	}
	at.mu.Lock()
	defer at.mu.Unlock()
	// Each sender's events reach the LB in order, on one worker: they go
	// to A until one goes to B, and then to B. (An event sent before the
	// SIGHUP may still be waiting in the socket when the tables change.)
	firstB := [2]uint64{n, n}
	for tick := range n {
		ms, s := at.at[tick], tick%2
		switch {
		case len(ms) != 1:
			t.Errorf("event %d arrived at members %v", tick, ms)
		case ms[0] == b.ID:
			firstB[s] = min(firstB[s], tick)
		case tick > firstB[s]:
			t.Errorf("event %d arrived at A after event %d, from the same sender, at B", tick, firstB[s])
		case tick >= reloaded:
			t.Errorf("event %d, sent after the reload, arrived at A", tick)
		}
	}
	t.Logf("%d events: %d sent before the good SIGHUP, %d before it was done, %d before the bad one", n, beforeHUP, reloaded, badHUP)
}

// TestLBOversizeAndInterrupt: with --max-datagram 9000, a 9,500-byte
// datagram is counted oversize and not forwarded, the event after it is;
// SIGINT stops nsc lb with its counters and exit code 0.
func TestLBOversizeAndInterrupt(t *testing.T) {
	m := lbtest.NewMember(t, 0)
	addr := lbtest.Addr(t)
	tables := filepath.Join(t.TempDir(), "lb.tables")
	writeFile(t, tables, lbtest.Tables(addr.AddrPort().Addr(), m.Dest(), m.Dest()))
	p := startLB(t, "--tables", tables, "--listen", addr.String(), "--workers", "1", "--max-datagram", "9000")
	s := lbtest.Sender(t, addr)
	for _, ev := range [][]byte{lbtest.Event(1, 9500), lbtest.Event(2, 0)} {
		if _, err := s.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	d, ok := m.Next(wait)
	if tick, _ := lbtest.Tick(d); !ok || tick != 2 || len(d) != len(lbtest.Event(2, 0))-16 {
		t.Errorf("the member got %d bytes (%v) first, want event 2", len(d), ok)
	}
	code, last := p.stop(t, os.Interrupt)
	if want := "2 received, 1 forwarded, 0 dropped, 1 oversize, 0 send errors"; code != 0 || !strings.HasPrefix(last, want) {
		t.Errorf("nsc lb exited %d, its last line %q; want 0 and %q", code, last, want)
	}
}

func TestLBUsage(t *testing.T) {
	for _, c := range []struct {
		flag, value, stderr string
	}{
		{"--batch", "0", "batch 0: must be 1 to 1024"},
		{"--batch", "1025", "batch 1025: must be 1 to 1024"},
		{"--workers", "0", "--workers 0: must be at least 1"},
		{"--max-datagram", "65508", "max datagram 65508: must be 1 to 65507"},
	} {
		code, _, stderr := nsc(t, "lb", "--tables", "ejfat/testdata/lb-2025.tables", "--listen", "127.0.0.1:0", c.flag, c.value)
		if code != exitUsage || !strings.Contains(stderr, c.stderr) {
			t.Errorf("nsc lb %s %s: exit %d, %q; want %d and %q", c.flag, c.value, code, stderr, exitUsage, c.stderr)
		}
	}
}
