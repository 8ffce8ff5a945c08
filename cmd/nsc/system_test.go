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
	dir := t.TempDir()
	lbAddr := lbtest.Addr(t)
	ip := binary.BigEndian.Uint32(lbAddr.IP.To4())
	writeFile(t, filepath.Join(dir, "base.tables"), fmt.Sprintf(`table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0
`, ip, ip))
	cp := startNSC(t, "cp", "--grpc", "127.0.0.1:0", "--db", filepath.Join(dir, "cp.db"), "--admin-token-file", filepath.Join(dir, "admin"),
		"--instances", "1", "--epoch-interval", "100ms", "--lb-listen", lbAddr.String(), "--lb-tables", filepath.Join(dir, "base.tables"))
	line := cp.expect(t, cp.stdout, "nsc cp: gRPC on ")
	addr, _, _ := strings.Cut(strings.TrimPrefix(line, "nsc cp: gRPC on "), ",")
	lc := cpClient(t, addr)
	res, err := lc.ReserveLoadBalancer(bearer(adminToken(t, dir)), &pb.ReserveLoadBalancerRequest{Name: "system", SenderAddresses: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	var recvs []*nscProcess
	var outs []string
	for i, engine := range []string{"runtime", "model"} {
		out := filepath.Join(dir, fmt.Sprint("rx", i))
		r, _ := startRecv(t, "--cp", addr, "--token", res.Token, "--lb", res.LbId, "--name", fmt.Sprint("rx", i),
			"--engine", engine, "--out", out, "--verify")
		r.expect(t, r.stdout, "registered with")
		recvs, outs = append(recvs, r), append(outs, out)
	}
	// Both receivers hold slots before anything is sent.
	for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		st, err := lc.LoadBalancerStatus(bearer(res.Token), &pb.LoadBalancerStatusRequest{LbId: res.LbId})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Workers) == 2 && st.Workers[0].SlotsAssigned > 0 && st.Workers[1].SlotsAssigned > 0 {
			time.Sleep(300 * time.Millisecond) // the tick that made the epoch programs the LB after storing it
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receivers never both held slots: %v", st.Workers)
		}
	}
	const events = 200
	send := startNSC(t, "send", "--to", lbAddr.String(), "--from", "127.0.0.1:0", "--events", fmt.Sprint(events), "--size", "30000",
		"--rate", "400", "--sync", fmt.Sprintf("%s:%d", res.SyncIpv4Address, res.SyncUdpPort))
	if code, out := send.waitExit(t); code != 0 {
		t.Fatalf("nsc send exited %d: %q", code, out)
	}
	time.Sleep(500 * time.Millisecond)
	got := map[string]int{}
	for i, r := range recvs {
		r.cmd.Process.Signal(syscall.SIGTERM)
		code, lines := r.waitExit(t)
		if code != 0 || !strings.HasSuffix(lines[len(lines)-1], "0 bad") {
			t.Errorf("rx%d exited %d: %q", i, code, lines)
		}
		t.Logf("rx%d: %q", i, lines[max(0, len(lines)-5):])
		names, _ := os.ReadDir(outs[i])
		for _, n := range names {
			got[n.Name()]++
		}
		t.Logf("rx%d reassembled %d events", i, len(names))
	}
	for n := range events {
		switch name := fmt.Sprintf("%d-0.bin", n); got[name] {
		case 1:
		case 0:
			t.Errorf("event %d reached no receiver whole", n)
		default:
			t.Errorf("event %d reached %d receivers", n, got[name])
		}
	}
	if len(got) != events {
		t.Errorf("%d distinct events written, want %d", len(got), events)
	}
}

// nsc demo --system runs the whole system and says no event was split.
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
// event and with most events written whole, and returns what it printed.
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
