package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/client"
)

// systemDemo runs EJFAT whole on loopback, each part an nsc process: the
// control plane with its LB, three receivers that register and report
// their state (one slowed down, one leaving half-way as nsc recv leaves at
// a signal, without loss), two senders with sync messages; then a
// summary: events sent, reassembled per receiver, lost where (the leaving
// receiver must lose none), split across receivers (must be 0), and the
// control plane's metrics.
func systemDemo(e *env, dir string, events int, xdp bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	nw, err := loopbackNet()
	if xdp {
		nw, err = xdpNet()
	}
	if err != nil {
		return err
	}
	defer nw.cleanup()
	// Stopped by a signal, the demo still removes its namespace and veths
	// (its processes die with it).
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	go func() {
		if _, ok := <-stop; ok {
			nw.cleanup()
			os.Exit(1)
		}
	}()
	lbAddr := nw.lb
	tables := filepath.Join(dir, "base.tables")
	if err := os.WriteFile(tables, []byte(nw.tables), 0o644); err != nil {
		return err
	}
	// A new run: the files of an earlier one go (the directory is the
	// demo's own).
	for _, f := range []string{"cp.db", "cp.db-wal", "cp.db-shm", "admin", "rx0", "rx1", "rx2"} {
		if err := os.RemoveAll(filepath.Join(dir, f)); err != nil {
			return err
		}
	}
	var procs []*demoProc
	defer func() {
		for _, p := range procs {
			p.kill()
		}
	}()
	// runIn starts nsc in the receivers' and senders' namespace, run in
	// the demo's.
	runIn := func(netns string, args ...string) (*demoProc, error) {
		p, err := startDemoProc(self, netns, args...)
		if err == nil {
			procs = append(procs, p)
		}
		return p, err
	}
	run := func(args ...string) (*demoProc, error) { return runIn("", args...) }
	if xdp {
		fmt.Fprintf(e.stdout, "== EJFAT through XDP: nsc cp with the LB's XDP program on %s (%s); three nsc recv and two nsc send in network namespace %s (files in %s)\n",
			nw.lbFlags[1], lbAddr, nw.netns, dir)
	} else {
		fmt.Fprintf(e.stdout, "== EJFAT on loopback: nsc cp with its LB on %s, three nsc recv, two nsc send (files in %s)\n", lbAddr, dir)
	}
	cpp, err := run(append([]string{"cp", "--grpc", nw.cpIP + ":0", "--http", "127.0.0.1:0", "--sync-ipv4", nw.cpIP, "--db", filepath.Join(dir, "cp.db"),
		"--admin-token-file", filepath.Join(dir, "admin"), "--instances", "1", "--epoch-interval", "200ms",
		"--lb-tables", tables}, nw.lbFlags...)...)
	if err != nil {
		return err
	}
	line, err := cpp.await("nsc cp: gRPC on ")
	if err != nil {
		return err
	}
	m := regexp.MustCompile(`gRPC on ([^,]+), HTTP on ([^,]+),`).FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf("nsc cp said %q", line)
	}
	grpcAddr, httpAddr := m[1], m[2]
	admin, err := lbctlToken("", filepath.Join(dir, "admin"))
	if err != nil {
		return err
	}
	cl, err := client.Dial(grpcAddr, admin, "")
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := context.Background()
	res, err := cl.Reserve(ctx, "demo", time.Time{}, []string{nw.hostIP, nw.syncIP})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "reserved LB %s: data %s, sync %s:%d\n", res.LbId, lbAddr, res.SyncIpv4Address, res.SyncUdpPort)
	names := []string{"rx0", "rx1", "rx2"}
	recvs := map[string]*demoProc{}
	for _, name := range names {
		args := []string{"recv", "--listen", nw.hostIP + ":0", "--ports", "2", "--cp", grpcAddr, "--token", res.Token, "--lb", res.LbId,
			"--name", name, "--verify", "--kp", "1000", // weights are rescaled to a mean of 1000 (udplbd2)
			"--out", filepath.Join(dir, name)}
		if name == "rx2" {
			args = append(args, "--slow", "25ms", "--queue", "32") // falls behind: its queue fills, its control signal falls
		}
		p, err := runIn(nw.netns, args...)
		if err != nil {
			return err
		}
		if _, err := p.await("registered with"); err != nil {
			return err
		}
		recvs[name] = p
	}
	slots := func() (map[string]uint32, error) {
		st, err := cl.Status(ctx, res.LbId)
		if err != nil {
			return nil, err
		}
		out := map[string]uint32{}
		for _, w := range st.Workers {
			out[w.Name] = w.SlotsAssigned
		}
		return out, nil
	}
	var first map[string]uint32
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if first, err = slots(); err != nil {
			return err
		}
		if len(first) == 3 && first["rx0"] > 0 && first["rx1"] > 0 && first["rx2"] > 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the receivers never all held slots: %v", first)
		}
	}
	time.Sleep(400 * time.Millisecond) // the epoch's tables reach the LB
	fmt.Fprintf(e.stdout, "slots: %s\n", slotLine(first))
	const rate = 200
	var senders []*demoProc
	for i := range 2 {
		p, err := runIn(nw.netns, "send", "--to", lbAddr, "--from", nw.hostIP+":0", "--mtu", nw.mtu, "--events", strconv.Itoa(events), "--size", "30000",
			"--rate", strconv.Itoa(rate), "--data-id", strconv.Itoa(i+1), "--sync", fmt.Sprintf("%s:%d", res.SyncIpv4Address, res.SyncUdpPort))
		if err != nil {
			return err
		}
		senders = append(senders, p)
	}
	// Watch the calendar while the senders run; rx1 leaves half-way, once
	// the CP has both senders' first sync messages (after a second), so
	// that the epoch without it begins at a boundary in their numbers.
	var mid map[string]uint32
	gone := map[string]string{}
	var series []string // rx2's slots as they change
	half := time.Now().Add(time.Duration(events/2) * time.Second / rate)
	sent := make(chan error, 1)
	go func() {
		for _, s := range senders {
			if code := s.wait(); code != 0 {
				sent <- fmt.Errorf("nsc send exited %d: %s", code, s.stderr.String())
				return
			}
		}
		sent <- nil
	}()
watch:
	for tick := time.NewTicker(100 * time.Millisecond); ; {
		select {
		case err := <-sent:
			tick.Stop()
			if err != nil {
				return err
			}
			break watch
		case <-tick.C:
		}
		now, err := slots()
		if err != nil {
			return err
		}
		if v := fmt.Sprint(now["rx2"]); len(series) == 0 || series[len(series)-1] != v {
			series = append(series, v)
		}
		if mid == nil && time.Now().After(half) && syncSamples(httpAddr) >= 2 {
			mid = now
			fmt.Fprintf(e.stdout, "half-way, slots: %s; rx1 leaves (SIGTERM)\n", slotLine(mid))
			recvs["rx1"].signal()
		}
	}
	gone["rx1"] = recvs["rx1"].output()
	for l := range strings.Lines(recvs["rx1"].stderr.String()) {
		if _, what, ok := strings.Cut(l, "nsc recv: leaving: "); ok {
			fmt.Fprintf(e.stdout, "rx1 leaving: %s", what)
		}
	}
	fmt.Fprintf(e.stdout, "rx2, slowed down (its queue fills, its PID's control signal falls), held %s slots as the epochs changed\n", strings.Join(series, " → "))
	time.Sleep(time.Second) // the last segments and the slow receiver's queue
	end, err := slots()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "at the end, slots: %s\n", slotLine(end))
	if err := printMetrics(e, httpAddr); err != nil {
		return err
	}
	for _, name := range []string{"rx0", "rx2"} {
		recvs[name].signal() // both leave at once: the last one's events have no one else to go to
	}
	for _, name := range []string{"rx0", "rx2"} {
		gone[name] = recvs[name].output()
	}
	total, atReceivers := 0, 0
	written, lost := map[string]int{}, map[string]int{}
	seen := map[string]int{}
	fmt.Fprintf(e.stdout, "\n%-6s %14s %14s %14s %16s %8s\n", "", "slots at start", "slots half-way", "slots at end", "events written", "lost")
	for _, name := range names {
		files, _ := os.ReadDir(filepath.Join(dir, name))
		for _, f := range files {
			seen[f.Name()]++
		}
		// Lost there: incomplete (timed out, evicted) or complete but
		// dropped at the application's full queue.
		written[name], lost[name] = len(files), counterOf(gone[name], "errors")+counterOf(gone[name], "enqueue errors")
		total += len(files)
		atReceivers += lost[name]
		fmt.Fprintf(e.stdout, "%-6s %14d %14d %14d %16d %8d\n", name, first[name], mid[name], end[name], len(files), lost[name])
	}
	split := 0
	for _, n := range seen {
		if n > 1 {
			split++
		}
	}
	fmt.Fprintf(e.stdout, "rx1 (left half-way): %d events, %d lost\n", written["rx1"], lost["rx1"])
	fmt.Fprintf(e.stdout, "rx2 (slowed down): %d events, %d lost (its application's queue full, or events timed out)\n", written["rx2"], lost["rx2"])
	fmt.Fprintf(e.stdout, "sent %d events, %d written whole, %d lost (%d counted at the receivers, where an event split between two counts twice), %d split across receivers\n",
		2*events, total, 2*events-total, atReceivers, split)
	if split > 0 {
		return fmt.Errorf("%d events split across receivers", split)
	}
	return nil
}

// lbPort is the LB's data port ("LB"), which the LB models admit.
const lbPort = 0x4c42

// freeLBAddress is a loopback address whose LB data port is free.
func freeLBAddress() (net.IP, error) {
	for i := 2; i < 255; i++ {
		ip := net.IPv4(127, 0, 0, byte(i))
		if c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ip, Port: lbPort}); err == nil {
			c.Close()
			return ip, nil
		}
	}
	return nil, fmt.Errorf("no loopback address with UDP port %d free", lbPort)
}

func slotLine(s map[string]uint32) string {
	var parts []string
	for _, k := range sortedKeys(s) {
		parts = append(parts, fmt.Sprintf("%s %d", k, s[k]))
	}
	return strings.Join(parts, ", ")
}

// counterOf finds the number before what in a receiver's report.
func counterOf(report, what string) int {
	m := regexp.MustCompile(`(\d+) ` + regexp.QuoteMeta(what)).FindStringSubmatch(report)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// metrics is the control plane's /metrics.
func metrics(addr string) (string, error) {
	r, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	return string(b), err
}

// syncSamples is how many sync messages the control plane took (the
// demo's one LB); 0 when it does not answer.
func syncSamples(addr string) int {
	m, _ := metrics(addr)
	for l := range strings.Lines(m) {
		if rest, ok := strings.CutPrefix(l, "nsc_cp_sync_samples_total{"); ok {
			_, v, _ := strings.Cut(rest, "} ")
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(n)
		}
	}
	return 0
}

// printMetrics prints the control plane's epoch and slot metrics.
func printMetrics(e *env, addr string) error {
	m, err := metrics(addr)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "\ncontrol plane metrics (/metrics):")
	for l := range strings.Lines(m) {
		if strings.HasPrefix(l, "nsc_cp_epochs_total") || strings.HasPrefix(l, "nsc_cp_session_slots") ||
			strings.HasPrefix(l, "nsc_cp_session_control_signal") || strings.HasPrefix(l, "nsc_cp_sync_samples_total") {
			fmt.Fprint(e.stdout, "  "+l)
		}
	}
	return nil
}

// demoProc is an nsc process of the demo and what it printed.
type demoProc struct {
	name   string // the nsc command
	cmd    *exec.Cmd
	lines  chan string
	mu     sync.Mutex
	all    []string
	stderr bytes.Buffer
	done   chan struct{}
}

// startDemoProc starts nsc (self) in network namespace netns (ip netns
// exec, which becomes nsc), or in the demo's for "".
func startDemoProc(self, netns string, args ...string) (*demoProc, error) {
	p := &demoProc{name: args[0], cmd: exec.Command(self, args...), lines: make(chan string, 1024), done: make(chan struct{})}
	if netns != "" {
		p.cmd = exec.Command("ip", append([]string{"netns", "exec", netns, self}, args...)...)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // none outlives the demo
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.all = append(p.all, sc.Text())
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
	}()
	return p, nil
}

// await returns the first line that starts with or holds prefix.
func (p *demoProc) await(prefix string) (string, error) {
	// Generous: nsc cp --xdp-dev compiles its program (clang) before it
	// serves, which takes seconds on a busy machine.
	timeout := time.After(45 * time.Second)
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l, prefix) {
				return l, nil
			}
		case <-p.done:
			return "", fmt.Errorf("nsc %s ended before saying %q: %s", p.name, prefix, p.stderr.String())
		case <-timeout:
			return "", fmt.Errorf("nsc %s did not say %q within 45 s: %s", p.name, prefix, p.stderr.String())
		}
	}
}

// signal sends the process SIGTERM: an nsc recv --cp leaves the
// calendars and then ends.
func (p *demoProc) signal() { p.cmd.Process.Signal(syscall.SIGTERM) }

// output waits for the process to end and returns all it printed.
func (p *demoProc) output() string {
	p.wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.all, "\n")
}

func (p *demoProc) wait() int {
	<-p.done
	p.cmd.Wait()
	return p.cmd.ProcessState.ExitCode()
}

func (p *demoProc) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}
