package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// cpProcess is `nsc cp` running as a real process.
type cpProcess struct {
	cmd   *exec.Cmd
	addr  string // gRPC
	lines []string
}

// buildNSC builds the nsc binary once per test.
func buildNSC(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nsc")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startCPProcess runs bin cp with instances LB instances on dir's
// database (more flags added) and waits until it serves.
func startCPProcess(t *testing.T, bin, dir string, instances int, more ...string) *cpProcess {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"cp", "--grpc", "127.0.0.1:0", "--db", filepath.Join(dir, "cp.db"),
		"--admin-token-file", filepath.Join(dir, "admin"), "--instances", fmt.Sprint(instances)}, more...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &cpProcess{cmd: cmd}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		p.lines = append(p.lines, sc.Text())
		if addr, ok := strings.CutPrefix(sc.Text(), "nsc cp: gRPC on "); ok {
			p.addr = addr
			go func() {
				for sc.Scan() {
				}
			}()
			return p
		}
	}
	t.Fatalf("nsc cp did not start: %q", p.lines)
	return nil
}

func cpClient(t *testing.T, addr string) pb.LoadBalancerClient {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewLoadBalancerClient(conn)
}

func bearer(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

func adminToken(t *testing.T, dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "admin"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestCPSurvivesKill reserves, registers and sends state through a real
// `nsc cp`, kills it with SIGKILL, restarts it on the same database and
// finds the same reservation, session, state and tokens.
func TestCPSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nsc")
	}
	bin, dir := buildNSC(t), t.TempDir()
	p := startCPProcess(t, bin, dir, 2)
	admin := adminToken(t, dir)
	if !strings.Contains(strings.Join(p.lines, "\n"), "shown once): "+admin) {
		t.Errorf("first start did not print the admin token: %q", p.lines)
	}
	lc := cpClient(t, p.addr)
	res, err := lc.ReserveLoadBalancer(bearer(admin), &pb.ReserveLoadBalancerRequest{Name: "crash",
		SenderAddresses: []string{"192.0.2.1"}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := lc.Register(bearer(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: "w", Weight: 2,
		IpAddress: "127.0.0.1", UdpPort: 20000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.SendState(bearer(reg.Token), &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId,
		FillPercent: 0.375, IsReady: true, TotalBytesRecv: 4242}); err != nil {
		t.Fatal(err)
	}
	child, err := lc.CreateToken(bearer(admin), &pb.CreateTokenRequest{Name: "reader",
		Permissions: []*pb.TokenPermission{{ResourceType: pb.ResourceType_ALL, Permission: pb.PermissionType_READ_ONLY}}})
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Kill() // SIGKILL: no chance to clean up
	p.cmd.Wait()

	p = startCPProcess(t, bin, dir, 2)
	if strings.Contains(strings.Join(p.lines, "\n"), "admin token") {
		t.Errorf("a restart printed the admin token again: %q", p.lines)
	}
	lc = cpClient(t, p.addr)
	ov, err := lc.Overview(bearer(child.Token), &pb.OverviewRequest{})
	if err != nil {
		t.Fatalf("overview with the child token after restart: %v", err)
	}
	if len(ov.LoadBalancers) != 1 || ov.LoadBalancers[0].Name != "crash" {
		t.Fatalf("after restart: %v", ov.LoadBalancers)
	}
	st := ov.LoadBalancers[0].Status
	if len(st.Workers) != 1 || st.Workers[0].Name != "w" || st.Workers[0].FillPercent != 0.375 ||
		st.Workers[0].TotalBytesRecv != 4242 || strings.Join(st.SenderAddresses, ",") != "192.0.2.1" {
		t.Errorf("status after restart: %v", st)
	}
	if _, err := lc.SendState(bearer(reg.Token), &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId,
		FillPercent: 0.5}); err != nil {
		t.Errorf("the session token after restart: %v", err)
	}
	if _, err := lc.GetLoadBalancer(bearer(res.Token), &pb.GetLoadBalancerRequest{LbId: res.LbId}); err != nil {
		t.Errorf("the reservation token after restart: %v", err)
	}
	if _, err := lc.ReserveLoadBalancer(bearer(admin), &pb.ReserveLoadBalancerRequest{}); err != nil {
		t.Errorf("the second instance is not free after restart: %v", err)
	}
}

// TestCPStopsCleanly sends SIGTERM and expects exit status 0.
func TestCPStopsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nsc")
	}
	bin, dir := buildNSC(t), t.TempDir()
	p := startCPProcess(t, bin, dir, 2)
	if _, err := cpClient(t, p.addr).Overview(bearer(adminToken(t, dir)), &pb.OverviewRequest{}); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("nsc cp after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("nsc cp still running 20 s after SIGTERM")
	}
}

func TestCPConfigFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "cp.conf")
	os.WriteFile(conf, []byte("# test\ngrpc 127.0.0.1:1\ndb = x.db\ninstances = two\n"), 0o644)
	_, err := cpOptions(&env{os.Stdout, os.Stderr}, []string{"--config", conf, "--admin-token-file", "a"})
	if err == nil || !strings.HasPrefix(err.Error(), conf+":4: ") {
		t.Errorf("bad config line: %v, want %s:4: ...", err, conf)
	}
	os.WriteFile(conf, []byte("grpc 127.0.0.1:1\ndb = x.db\ninstances 3\n"), 0o644)
	f, err := cpOptions(&env{os.Stdout, os.Stderr}, []string{"--config", conf, "--admin-token-file", "a", "--instances", "4"})
	if err != nil || f.db != "x.db" || f.grpc != "127.0.0.1:1" || f.cfg.Instances != 4 {
		t.Errorf("config + flags: %+v, %v; want db x.db, 4 instances (the command line wins)", f, err)
	}
}

// TestCPDataAddressFromLB: without --data-ipv4/--data-port-*, the data
// address and port handed out are the in-process LB's (--lb-listen).
func TestCPDataAddressFromLB(t *testing.T) {
	base := []string{"--grpc", "127.0.0.1:1", "--db", "x.db", "--admin-token-file", "a", "--lb-listen", "127.0.0.1:40000",
		"--lb-tables", "t"}
	for _, c := range []struct {
		args     []string
		ip       string
		min, max uint32
	}{
		{nil, "127.0.0.1", 40000, 40000},
		{[]string{"--data-ipv4", "10.232.0.1"}, "10.232.0.1", 40000, 40000},
		{[]string{"--data-port-min", "5000", "--data-port-max", "5001"}, "127.0.0.1", 5000, 5001},
	} {
		f, err := cpOptions(&env{os.Stdout, os.Stderr}, append(base, c.args...))
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if f.cfg.DataIPv4 != c.ip || f.cfg.DataPortMin != c.min || f.cfg.DataPortMax != c.max {
			t.Errorf("%q: data %s %d..%d, want %s %d..%d", c.args, f.cfg.DataIPv4, f.cfg.DataPortMin, f.cfg.DataPortMax,
				c.ip, c.min, c.max)
		}
	}
}

var cpLoad = flag.Duration("cp-load", 3*time.Second, "how long TestCPSendStateLoad runs")

// TestCPSendStateLoad drives a real `nsc cp` with 8 instances × 64
// sessions each sending state every 100 ms for -cp-load, and reports the
// calls' p50/p99 latency and the CP process's CPU. It asserts only that
// every call succeeded: timings on a shared machine are reported, not
// judged.
func TestCPSendStateLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nsc and runs a load")
	}
	const instances, sessions, period = 8, 64, 100 * time.Millisecond
	bin, dir := buildNSC(t), t.TempDir()
	p := startCPProcess(t, bin, dir, instances)
	admin := adminToken(t, dir)
	lc := cpClient(t, p.addr)
	type sess struct {
		lb  string
		reg *pb.RegisterReply
	}
	var all []sess
	for range instances {
		res, err := lc.ReserveLoadBalancer(bearer(admin), &pb.ReserveLoadBalancerRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range sessions {
			reg, err := lc.Register(bearer(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: fmt.Sprint("w", i),
				Weight: 1, IpAddress: "127.0.0.1", UdpPort: uint32(20000 + i)})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, sess{res.LbId, reg})
		}
	}
	cpu0 := processCPU(t, p.cmd.Process.Pid)
	start := time.Now()
	lat := make([][]time.Duration, len(all))
	errs := make(chan error, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Go(func() {
			time.Sleep(period * time.Duration(i) / time.Duration(len(all))) // spread the phases
			tick := time.NewTicker(period)
			defer tick.Stop()
			ctx := bearer(s.reg.Token)
			for time.Since(start) < *cpLoad {
				t0 := time.Now()
				_, err := lc.SendState(ctx, &pb.SendStateRequest{LbId: s.lb, SessionId: s.reg.SessionId,
					FillPercent: 0.5, IsReady: true, TotalEventsRecv: int64(len(lat[i]))})
				if err != nil {
					errs <- err
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
				<-tick.C
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU(t, p.cmd.Process.Pid) - cpu0
	close(errs)
	for err := range errs {
		t.Fatalf("SendState under load: %v", err)
	}
	var flat []time.Duration
	for _, l := range lat {
		flat = append(flat, l...)
	}
	slices.Sort(flat)
	q := func(f float64) time.Duration { return flat[int(f*float64(len(flat)-1))] }
	t.Logf("%d sessions × SendState every %v for %v: %d calls (%.0f/s), latency p50 %v p99 %v max %v; CP CPU %v (%.0f%% of one core)",
		len(all), period, elapsed.Round(time.Millisecond), len(flat), float64(len(flat))/elapsed.Seconds(),
		q(0.5), q(0.99), flat[len(flat)-1], cpu, 100*cpu.Seconds()/elapsed.Seconds())
}

// processCPU is the user+system CPU time process pid has used (Linux).
func processCPU(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// Fields after the parenthesized command: utime and stime are the
	// 12th and 13th, in clock ticks (USER_HZ, 100 on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// TestCPServesTLS starts nsc cp with a self-signed certificate and calls
// it over TLS trusting only that certificate.
func TestCPServesTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nsc")
	}
	bin, dir := buildNSC(t), t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, certPEM, 0o600)
	os.WriteFile(key, keyPEM, 0o600)
	p := startCPProcess(t, bin, dir, 1, "--tls-cert", cert, "--tls-key", key)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(pool, "127.0.0.1")))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := pb.NewLoadBalancerClient(conn).Overview(bearer(adminToken(t, dir)), &pb.OverviewRequest{}); err != nil {
		t.Errorf("Overview over TLS: %v", err)
	}
	if _, err := cpClient(t, p.addr).Version(context.Background(), &pb.VersionRequest{}); err == nil {
		t.Error("a plaintext call to the TLS server succeeded")
	}
}

// selfSigned makes a certificate for 127.0.0.1 and its key, PEM-encoded.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// TestCPDataPlaneFlags: the data planes' flags are checked before
// anything starts.
func TestCPDataPlaneFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--xdp-dev", "eth0"}, "--xdp-dev needs --lb-tables"},
		{[]string{"--xdp-dev", "eth0", "--lb-tables", "t", "--xdp-mode", "fast"}, `unknown --xdp-mode "fast"`},
		{[]string{"--lb-feed"}, "--lb-feed needs --http"},
		{[]string{"--xdp-pinned", "/sys/fs/bpf/lb", "--xdp-mode", "generic"}, "--xdp-pinned takes the program"},
		{[]string{"--max-token-depth", "0"}, "--max-token-depth: want at least 1"},
	} {
		args := append([]string{"--grpc", "127.0.0.1:1", "--db", "x.db", "--admin-token-file", "a"}, c.args...)
		if _, err := cpOptions(&env{os.Stdout, os.Stderr}, args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
