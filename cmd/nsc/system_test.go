package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// TestEJFATSystem runs EJFAT whole, each part a real nsc process on
// loopback: nsc cp programming its in-process LB, two nsc recv registering
// with the reservation and sending state (one reassembling with the
// runtime, one with the code generated from the reassembler model), and
// nsc send sending events and sync messages to the LB. Every event
// arrives whole at exactly one receiver, byte for byte what was sent.
func TestEJFATSystem(t *testing.T) {
	sys := startSystem(t)
	var recvs []*nscProcess
	var outs []string
	for i, engine := range []string{"runtime", "model"} {
		r, out := sys.receiver(t, fmt.Sprint("rx", i), "--engine", engine)
		recvs, outs = append(recvs, r), append(outs, out)
	}
	sys.awaitSlots(t, 2)
	lbAddr, res := sys.lb, sys.res
	const events = 200
	send := startNSC(t, "send", "--to", lbAddr.String(), "--from", "127.0.0.1:0", "--events", fmt.Sprint(events), "--size", "30000",
		"--rate", "400", "--sync", fmt.Sprintf("%s:%d", res.SyncIpv4Address, res.SyncUdpPort))
	if code, out := send.waitExit(t); code != 0 {
		t.Fatalf("nsc send exited %d: %q", code, out)
	}
	time.Sleep(500 * time.Millisecond)
	for _, r := range recvs {
		r.cmd.Process.Signal(syscall.SIGTERM)
	}
	for i, r := range recvs {
		if code, lines := r.waitExit(t); code != 0 || !strings.HasSuffix(lines[len(lines)-1], "0 bad") {
			t.Errorf("rx%d exited %d: %q", i, code, lines)
		}
	}
	everyEventOnce(t, events, outs...)
}

// everyEventOnce wants events 0 to n−1 (data id 0) each written whole
// (nsc recv --verify checked its bytes) in exactly one of the receivers'
// directories; it returns the highest event number each wrote.
func everyEventOnce(t *testing.T, n int, outs ...string) []int {
	t.Helper()
	got := map[string]int{}
	highest := make([]int, len(outs))
	for i, out := range outs {
		names, _ := os.ReadDir(out)
		for _, f := range names {
			got[f.Name()]++
			var ev int
			fmt.Sscanf(f.Name(), "%d-", &ev)
			highest[i] = max(highest[i], ev)
		}
		t.Logf("%s: %d events", filepath.Base(out), len(names))
	}
	for ev := range n {
		switch name := fmt.Sprintf("%d-0.bin", ev); got[name] {
		case 1:
		case 0:
			t.Errorf("event %d reached no receiver whole", ev)
		default:
			t.Errorf("event %d reached %d receivers", ev, got[name])
		}
	}
	if len(got) != n {
		t.Errorf("%d distinct events written, want %d", len(got), n)
	}
	return highest
}

// TestRecvLeaves: of two nsc recv --cp, one gets SIGTERM half-way
// through a stream. It reports not ready, goes on receiving until the
// control plane says the epoch without it is in force, then deregisters
// and exits 0 with no event lost (none timed out, evicted or dropped at
// its queue); the stream goes on to the other receiver, and every event
// arrives whole at exactly one of them.
func TestRecvLeaves(t *testing.T) {
	sys := startSystem(t, "--epoch-lead", "200ms", "--epoch-guard", "300ms")
	stay, stayOut := sys.receiver(t, "stay")
	leave, leaveOut := sys.receiver(t, "leave")
	sys.awaitSlots(t, 2)
	const events, rate = 1600, 400 // 4 s
	send := startNSC(t, "send", "--to", sys.lb.String(), "--from", "127.0.0.1:0", "--events", fmt.Sprint(events), "--size", "20000",
		"--rate", fmt.Sprint(rate), "--sync", fmt.Sprintf("%s:%d", sys.res.SyncIpv4Address, sys.res.SyncUdpPort))
	time.Sleep(1500 * time.Millisecond)
	sys.awaitSync(t) // the epoch without it then begins at a boundary in the sender's numbers
	leave.cmd.Process.Signal(syscall.SIGTERM)
	code, lines := leave.waitExit(t)
	leave.mu.Lock()
	stderr := strings.Join(leave.errOut, "\n")
	leave.mu.Unlock()
	t.Logf("the leaving receiver:\n%s\n%s", stderr, strings.Join(lines, "\n"))
	if code != 0 || counter(t, lines, "errors") != 0 || counter(t, lines, "enqueue errors") != 0 || !strings.HasSuffix(lines[len(lines)-1], "0 bad") {
		t.Errorf("the leaving receiver exited %d, losing events: %q", code, lines)
	}
	if !strings.Contains(stderr, "is in force") || strings.Contains(stderr, "--drain") {
		t.Errorf("the leaving receiver did not wait for the epoch without it to be in force:\n%s", stderr)
	}
	if code, out := send.waitExit(t); code != 0 {
		t.Fatalf("nsc send exited %d: %q", code, out)
	}
	time.Sleep(500 * time.Millisecond)
	if code, last := stay.stop(t, syscall.SIGTERM); code != 0 || !strings.HasSuffix(last, "0 bad") {
		t.Errorf("the staying receiver exited %d: %q", code, last)
	}
	highest := everyEventOnce(t, events, stayOut, leaveOut)
	if highest[1] >= events-rate {
		t.Errorf("the leaving receiver wrote event %d, within the last second of the stream: it did not leave half-way", highest[1])
	}
}

// system is nsc cp programming its in-process LB on loopback, with a
// reservation whose sender is 127.0.0.1.
type system struct {
	dir, cp string // the files, the CP's gRPC address
	lb      *net.UDPAddr
	lc      pb.LoadBalancerClient
	res     *pb.ReserveLoadBalancerReply
}

// startSystem starts nsc cp (its epochs every 100 ms, args added) and
// reserves its LB.
func startSystem(t *testing.T, args ...string) *system {
	t.Helper()
	sys := &system{dir: t.TempDir(), lb: lbtest.Addr(t)}
	ip := binary.BigEndian.Uint32(sys.lb.IP.To4())
	writeFile(t, filepath.Join(sys.dir, "base.tables"), fmt.Sprintf(`table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0
`, ip, ip))
	cp := startNSC(t, append([]string{"cp", "--grpc", "127.0.0.1:0", "--db", filepath.Join(sys.dir, "cp.db"),
		"--admin-token-file", filepath.Join(sys.dir, "admin"), "--instances", "1", "--epoch-interval", "100ms",
		"--lb-listen", sys.lb.String(), "--lb-tables", filepath.Join(sys.dir, "base.tables")}, args...)...)
	line := cp.expect(t, cp.stdout, "nsc cp: gRPC on ")
	sys.cp, _, _ = strings.Cut(strings.TrimPrefix(line, "nsc cp: gRPC on "), ",")
	sys.lc = cpClient(t, sys.cp)
	var err error
	sys.res, err = sys.lc.ReserveLoadBalancer(bearer(adminToken(t, sys.dir)), &pb.ReserveLoadBalancerRequest{Name: "system", SenderAddresses: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

// receiver starts nsc recv --cp named name, writing and verifying its
// events in a directory of its name, which it returns.
func (sys *system) receiver(t *testing.T, name string, args ...string) (*nscProcess, string) {
	t.Helper()
	out := filepath.Join(sys.dir, name)
	r, _ := startRecv(t, append([]string{"--cp", sys.cp, "--token", sys.res.Token, "--lb", sys.res.LbId, "--name", name,
		"--out", out, "--verify"}, args...)...)
	r.expect(t, r.stdout, "registered with")
	return r, out
}

// awaitSlots waits until n receivers hold slots and the LB has the epoch.
func (sys *system) awaitSlots(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		st, err := sys.lc.LoadBalancerStatus(bearer(sys.res.Token), &pb.LoadBalancerStatusRequest{LbId: sys.res.LbId})
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		for _, w := range st.Workers {
			if w.SlotsAssigned > 0 {
				held++
			}
		}
		if held == n {
			time.Sleep(300 * time.Millisecond) // the tick that made the epoch programs the LB after storing it
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receivers never all held slots: %v", st.Workers)
		}
	}
}

// awaitSync waits until the control plane has a sync message.
func (sys *system) awaitSync(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		ts, err := sys.lc.Timeseries(bearer(sys.res.Token), &pb.TimeseriesRequest{SeriesSelector: []string{"/lb/" + sys.res.LbId + "/event_number"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(ts.Timeseries) > 0 && len(ts.Timeseries[0].GetFloatSamples().GetData()) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no sync message reached the control plane")
		}
	}
}

// nsc demo --system runs the whole system and says no event was split
// and none lost at the receiver that left half-way.
func TestSystemDemo(t *testing.T) {
	systemDemoRun(t, "demo", "--system", "--events", "300", "-o", t.TempDir())
}

// nsc demo --system --xdp does it with the LB as the model's XDP program
// on a veth, receivers and senders in a network namespace.
func TestSystemDemoXDP(t *testing.T) {
	xdptest.Require(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command")
	}
	text := systemDemoRun(t, "demo", "--system", "--xdp", "--events", "300", "-o", t.TempDir())
	if !strings.Contains(text, "== EJFAT through XDP") {
		t.Errorf("the demo does not say it runs through XDP:\n%s", text)
	}
}

// systemDemoRun runs a system demo, wants it to end well, without a split
// event, none lost at the receiver that left and most events written
// whole, and returns what it printed.
func systemDemoRun(t *testing.T, args ...string) string {
	t.Helper()
	p := startNSC(t, args...)
	t.Cleanup(func() { // before startNSC's SIGKILL: SIGTERM lets the demo remove its namespace
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
			}
		}
	})
	select { // --xdp compiles the XDP program first
	case <-p.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("nsc %v did not end", args)
	}
	code, out := p.waitExit(t)
	text := strings.Join(out, "\n")
	p.mu.Lock()
	stderr := strings.Join(p.errOut, "\n") // the cause, when there is one: a process's error, a lost receiver
	p.mu.Unlock()
	if code != 0 || !strings.Contains(text, ", 0 split across receivers") || !strings.Contains(text, "nsc_cp_epochs_total") {
		t.Errorf("nsc %v exited %d:\n%s\nstderr:\n%s", args, code, text, stderr)
	}
	if !regexp.MustCompile(`rx1 \(left half-way\): \d+ events, 0 lost`).MatchString(text) {
		t.Errorf("nsc %v: the receiver that left lost events:\n%s\nstderr:\n%s", args, text, stderr)
	}
	m := regexp.MustCompile(`sent (\d+) events, (\d+) written whole`).FindStringSubmatch(text)
	if m == nil || 2*atoi(m[2]) < atoi(m[1]) {
		t.Errorf("nsc %v: fewer than half the events written whole:\n%s\nstderr:\n%s", args, text, stderr)
	}
	return text
}

// TestCPKillUnderLoad: nsc cp (with its LB) is killed with SIGKILL while
// receivers send state and a sender sends, and restarted on the same
// database: it comes back with the same epoch and calendar, programs its
// LB again, the receivers go on reporting, and the events sent after the
// restart arrive whole, each at one receiver.
func TestCPKillUnderLoad(t *testing.T) {
	dir := t.TempDir()
	lbAddr := lbtest.Addr(t)
	ip := binary.BigEndian.Uint32(lbAddr.IP.To4())
	writeFile(t, filepath.Join(dir, "base.tables"), fmt.Sprintf(`table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0
`, ip, ip))
	grpcAddr := freeTCP(t)
	startCP := func() *nscProcess {
		p := startNSC(t, "cp", "--grpc", grpcAddr, "--db", filepath.Join(dir, "cp.db"), "--admin-token-file", filepath.Join(dir, "admin"),
			"--instances", "1", "--epoch-interval", "100ms", "--lb-listen", lbAddr.String(), "--lb-tables", filepath.Join(dir, "base.tables"))
		p.expect(t, p.stdout, "nsc cp: gRPC on ")
		return p
	}
	cp := startCP()
	lc := cpClient(t, grpcAddr)
	res, err := lc.ReserveLoadBalancer(bearer(adminToken(t, dir)), &pb.ReserveLoadBalancerRequest{Name: "k", SenderAddresses: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	var recvs []*nscProcess
	var outs []string
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprint("rx", i))
		r, _ := startRecv(t, "--cp", grpcAddr, "--token", res.Token, "--lb", res.LbId, "--name", fmt.Sprint("rx", i), "--out", out, "--verify")
		r.expect(t, r.stdout, "registered with")
		recvs, outs = append(recvs, r), append(outs, out)
	}
	status := func() string {
		t.Helper()
		st, err := lc.LoadBalancerStatus(bearer(res.Token), &pb.LoadBalancerStatusRequest{LbId: res.LbId})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "epoch %d", st.CurrentEpoch)
		for _, w := range st.Workers {
			fmt.Fprintf(&b, "; %s %d slots %v", w.Name, w.SlotsAssigned, w.Slots)
		}
		return b.String()
	}
	// Both in the calendar; their shares follow their fill levels, which a
	// loaded machine moves off half and half.
	both := regexp.MustCompile(`rx0 [1-9].*rx1 [1-9]|rx1 [1-9].*rx0 [1-9]`)
	for deadline := time.Now().Add(wait); !both.MatchString(status()); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no calendar with both receivers: %s", status())
		}
	}
	time.Sleep(300 * time.Millisecond)
	before := status()
	cp.cmd.Process.Signal(syscall.SIGKILL)
	cp.waitExit(t)
	cp = startCP()
	if after := status(); after != before {
		t.Errorf("after the restart\n %s\nwant\n %s", after, before)
	}
	time.Sleep(500 * time.Millisecond) // the first tick programs the LB again; the receivers report again
	send := startNSC(t, "send", "--to", lbAddr.String(), "--from", "127.0.0.1:0", "--events", "100", "--size", "20000", "--rate", "400")
	if code, out := send.waitExit(t); code != 0 {
		t.Fatalf("nsc send exited %d: %q", code, out)
	}
	time.Sleep(500 * time.Millisecond)
	got := map[string]int{}
	for i, r := range recvs {
		if code, last := r.stop(t, syscall.SIGTERM); code != 0 || !strings.HasSuffix(last, "0 bad") {
			t.Errorf("rx%d exited %d: %q", i, code, last)
		}
		names, _ := os.ReadDir(outs[i])
		for _, n := range names {
			got[n.Name()]++
		}
	}
	for n := range 100 {
		if c := got[fmt.Sprintf("%d-0.bin", n)]; c != 1 {
			t.Errorf("event %d written by %d receivers, want 1", n, c)
		}
	}
	if st := status(); !strings.Contains(st, "rx0") || !strings.Contains(st, "rx1") {
		t.Logf("status after the receivers stopped: %s", st)
	}
	cp.stop(t, syscall.SIGTERM)
}

// freeTCP is a free TCP address on loopback.
func freeTCP(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestRecvLeaveBounded: leaving is bounded. With no sender, the epoch
// without a receiver is in force only once the wall clock's µs pass its
// boundary (about 2 s on): a receiver with --drain 500ms stops at the
// deadline, one sent a second signal stops at once; both exit 0 and say
// why on stderr.
func TestRecvLeaveBounded(t *testing.T) {
	sys := startSystem(t)
	deadline, _ := sys.receiver(t, "deadline", "--drain", "500ms")
	twice, _ := sys.receiver(t, "twice")
	sys.awaitSlots(t, 2)
	for _, c := range []struct {
		r     *nscProcess
		again bool
		want  string
	}{{twice, true, "stopped by a second signal"}, {deadline, false, "--drain 500ms passed"}} {
		start := time.Now()
		c.r.cmd.Process.Signal(syscall.SIGTERM)
		c.r.expect(t, c.r.stderr, "reported not ready")
		if c.again {
			c.r.cmd.Process.Signal(syscall.SIGINT)
		}
		code, _ := c.r.waitExit(t)
		took := time.Since(start)
		c.r.mu.Lock()
		stderr := strings.Join(c.r.errOut, "\n")
		c.r.mu.Unlock()
		if code != 0 || !strings.Contains(stderr, c.want) || took > 1500*time.Millisecond {
			t.Errorf("exited %d after %v, want 0 within 1.5 s saying %q:\n%s", code, took, c.want, stderr)
		}
	}
}
