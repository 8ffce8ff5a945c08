package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// vethNetns makes a network namespace and a veth pair, one end (host)
// in the test's namespace at 10.201.0.1/24, the other in the new one at
// 10.201.0.2/24; both go when the test ends. It returns the namespace
// and the two ends' names.
func vethNetns(t *testing.T) (netns, host, peer string) {
	t.Helper()
	id := os.Getpid() % 100000
	netns, host, peer = fmt.Sprintf("nsc-t%d", id), fmt.Sprintf("nsct%da", id), fmt.Sprintf("nsct%db", id)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", netns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", netns).Run() })
	ip("link", "add", host, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { exec.Command("ip", "link", "del", host).Run() })
	ip("link", "set", peer, "netns", netns)
	ip("addr", "add", "10.201.0.1/24", "dev", host)
	ip("link", "set", host, "up")
	ip("-n", netns, "addr", "add", "10.201.0.2/24", "dev", peer)
	ip("-n", netns, "link", "set", peer, "up")
	ip("-n", netns, "link", "set", "lo", "up")
	return netns, host, peer
}

// TestCPProgramsXDP runs `nsc cp --xdp-dev` on a veth whose other end is
// in a network namespace with two `nsc recv` and an `nsc send`: the LB is
// the model's XDP program on the veth (generic mode), answering the
// sender's ARP and sending each event back out, rewritten, to the
// receiver its calendar names. Every event is reassembled whole by
// exactly the receiver that Status says holds its slot; after one
// session stops being ready, the CP's next epoch sends every later event
// to the other.
func TestCPProgramsXDP(t *testing.T) { cpProgramsXDP(t, false) }

// TestCPProgramsXDPPinned is TestCPProgramsXDP with the program attached
// and pinned by `nsc xdp attach --pin` and its maps driven by `nsc cp
// --xdp-pinned` in another process: after the CP exits, the program
// still forwards by the last epoch's tables; a second CP on the pins
// while the first runs exits refusing.
func TestCPProgramsXDPPinned(t *testing.T) { cpProgramsXDP(t, true) }

func cpProgramsXDP(t *testing.T, pinned bool) {
	xdptest.Require(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command")
	}
	netns, host, peer := vethNetns(t)
	hostIf, err := net.InterfaceByName(host)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ip", "-n", netns, "-o", "link", "show", peer).Output()
	if err != nil {
		t.Fatal(err)
	}
	peerMAC := regexp.MustCompile(`link/ether ([0-9a-f:]{17})`).FindSubmatch(out)
	if peerMAC == nil {
		t.Fatalf("no MAC in %q", out)
	}
	dir := t.TempDir()
	mac := strings.ReplaceAll(hostIf.HardwareAddr.String(), ":", "")
	// The LB's MAC and broadcast (ARP requests); its address for IPv4 and ARP.
	writeFile(t, filepath.Join(dir, "base.tables"), fmt.Sprintf(`table_add mac_dst_filter_table set_mac_sa 0&&&0 0x%s => 0x%s 0
table_add mac_dst_filter_table set_mac_sa 0&&&0 0xffffffffffff => 0x%s 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 0x0ac90001 => 0x0ac90001 0 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0806 0x0ac90001 => 0x0ac90001 0 0
`, mac, mac, mac))
	plane, named := []string{"--xdp-dev", host, "--xdp-mode", "generic", "--lb-tables", filepath.Join(dir, "base.tables")}, "lb-2025 XDP on "+host
	if pinned {
		obj, err := buildLBXDP("lb-2025", dir)
		if err != nil {
			t.Fatal(err)
		}
		pins := filepath.Join(xdptest.BPFFS(t), "lb")
		a := startNSC(t, "xdp", "attach", "--dev", host, "--mode", "generic", "--obj", obj, "--tables", filepath.Join(dir, "base.tables"), "--pin", pins)
		if code, out := a.waitExit(t); code != 0 {
			t.Fatalf("nsc xdp attach --pin exited %d: %q", code, out)
		}
		plane, named = []string{"--xdp-pinned", pins}, "lb-2025 XDP pinned in "+pins
	}
	cpArgs := append([]string{"cp", "--grpc", "127.0.0.1:0", "--db", filepath.Join(dir, "cp.db"), "--admin-token-file", filepath.Join(dir, "admin"),
		"--http", "127.0.0.1:0", "--instances", "1", "--epoch-interval", "100ms", "--ready-timeout", "1m", "--data-ipv4", "10.201.0.1", "--member-mac", string(peerMAC[1])}, plane...)
	cpp := startNSC(t, cpArgs...)
	line := cpp.expect(t, cpp.stdout, "nsc cp: gRPC on ")
	if !strings.Contains(line, named) {
		t.Errorf("start line %q does not name the XDP LB (%s)", line, named)
	}
	addr, _, _ := strings.Cut(strings.TrimPrefix(line, "nsc cp: gRPC on "), ",")
	_, web, _ := strings.Cut(line, ", HTTP on ")
	web, _, _ = strings.Cut(web, ",")
	lc := cpClient(t, addr)
	res, err := lc.ReserveLoadBalancer(bearer(adminToken(t, dir)), &pb.ReserveLoadBalancerRequest{Name: "xdp", SenderAddresses: []string{"10.201.0.2"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := bearer(res.Token)
	var recvs []*nscProcess
	var outs, ids []string
	for i := range 2 {
		outs = append(outs, filepath.Join(dir, fmt.Sprint("rx", i)))
		r := startNSCIn(t, netns, "recv", "--listen", "10.201.0.2:0", "--ports", "2", "--out", outs[i], "--verify")
		m := regexp.MustCompile(`ports (\d+)-`).FindStringSubmatch(r.expect(t, r.stdout, "receiving on"))
		reg, err := lc.Register(ctx, &pb.RegisterRequest{LbId: res.LbId, Name: fmt.Sprint("rx", i), Weight: 1,
			IpAddress: "10.201.0.2", UdpPort: uint32(atoi(m[1])), PortRange: pb.PortRange_PORT_RANGE_2})
		if err != nil {
			t.Fatal(err)
		}
		recvs, ids = append(recvs, r), append(ids, reg.SessionId)
	}
	ready := func(r0, r1 bool) {
		t.Helper()
		for i, r := range []bool{r0, r1} {
			if _, err := lc.SendState(ctx, &pb.SendStateRequest{LbId: res.LbId, SessionId: ids[i], IsReady: r}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// slots waits until session 0 holds want slots in the newest epoch
	// and the XDP program's maps hold that epoch (the CP stores an epoch,
	// which Status shows at once, before it programs the maps: under load
	// that took longer than any fixed wait).
	slots := func(want uint32) *pb.LoadBalancerStatusReply {
		t.Helper()
		var stored time.Time // when Status first showed the epoch
		for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
			st, err := lc.LoadBalancerStatus(ctx, &pb.LoadBalancerStatusRequest{LbId: res.LbId})
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Workers) == 2 && st.Workers[0].SlotsAssigned == want && st.Workers[1].SlotsAssigned == 512-want {
				if stored.IsZero() {
					stored = time.Now()
				}
				if strings.Contains(scrape(t, web), fmt.Sprintf("nsc_cp_lb_dataplane_epoch{instance=\"0\",lb=\"%s\"} %d\n", res.LbId, st.CurrentEpoch)) {
					t.Logf("epoch %d in the XDP maps %v after Status showed it", st.CurrentEpoch, time.Since(stored).Round(time.Millisecond))
					return st
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no epoch giving session 0 %d slots in the XDP maps: %v", want, st)
			}
		}
	}
	send := func(dataID int) { // events 0..99
		t.Helper()
		s := startNSCIn(t, netns, "send", "--to", "10.201.0.1:19522", "--from", "10.201.0.2:0", "--events", "100",
			"--data-id", fmt.Sprint(dataID), "--size", "20000", "--mtu", "1500", "--rate", "400")
		if code, out := s.waitExit(t); code != 0 {
			t.Fatalf("nsc send exited %d: %q", code, out)
		}
	}
	ready(true, true)
	epochs := []*pb.LoadBalancerStatusReply{slots(256)}
	send(0)
	ready(false, true)
	epochs = append(epochs, slots(0))
	send(1)
	time.Sleep(500 * time.Millisecond)
	if pinned { // one CP drives the pins at a time (a database of its own: its lock is another refusal)
		other := slices.Clone(cpArgs)
		own := t.TempDir()
		other[slices.Index(other, "--db")+1] = filepath.Join(own, "cp.db")
		other[slices.Index(other, "--admin-token-file")+1] = filepath.Join(own, "admin")
		again := startNSC(t, other...)
		if code, _ := again.waitExit(t); code == 0 || !strings.Contains(strings.Join(again.errOut, "\n"), "another process drives") {
			t.Errorf("a second nsc cp on the pins exited %d: %q", code, again.errOut)
		}
	}
	if code, _ := cpp.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("nsc cp exited %d", code)
	}
	batches := 2
	if pinned { // the CP is gone, its last tables stay
		send(2)
		time.Sleep(500 * time.Millisecond)
		batches = 3
		epochs = append(epochs, epochs[1])
	}
	got := map[string][]int{}
	for i, r := range recvs {
		if code, last := r.stop(t, syscall.SIGTERM); code != 0 || !strings.HasSuffix(last, "0 bad") {
			t.Errorf("rx%d exited %d: %q", i, code, last)
		}
		names, _ := os.ReadDir(outs[i])
		for _, n := range names {
			got[n.Name()] = append(got[n.Name()], i)
		}
	}
	// Without sync messages the boundaries are the wall clock's µs (as
	// udplbd2), far above these events numbered from 0: they go by the
	// newest epoch's calendar (the catch-all below the oldest boundary),
	// event n by slot n (lb-2025's do_assign_epoch: the tick's low 9
	// bits). Which slots each receiver holds depends on whether the
	// first epoch was made before the second receiver registered (the
	// next calendar moves slots 256-511 over: events 0-99 all go to rx0)
	// or after (the slots alternate).
	var per [3][2]int // per[batch][receiver]: events written whole
	for batch := range batches {
		var owner [512]int
		for i, w := range epochs[batch].Workers {
			for _, r := range w.Slots {
				for j := range r.Length {
					owner[int(r.Index)+int(j)] = i
				}
			}
		}
		for n := range 100 {
			at := got[fmt.Sprintf("%d-%d.bin", n, batch)]
			if len(at) != 1 || at[0] != owner[n] {
				t.Errorf("batch %d: event %d written by receivers %v, want rx%d (the calendar's slot %d)", batch, n, at, owner[n], n)
				continue
			}
			per[batch][at[0]]++
		}
	}
	t.Logf("events through the XDP LB, whole at rx0 and rx1: %v with both ready, %v after rx0 stopped being ready, %v after the CP exited (pinned %v)", per[0], per[1], per[2], pinned)
}

// scrape returns the CP's /metrics page at addr.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s %v", res.Status, err)
	}
	return string(b)
}
