package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/cptest"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/packet"
)

// TestCPXDPPinnedKillUnderLoad: `nsc cp --xdp-pinned` drives the pinned
// XDP LB (nsc xdp attach --pin) of the system demo's namespace, two
// `nsc recv --cp` sending state and an `nsc send --sync` sending; the CP
// is killed with SIGKILL mid-stream and restarted on the same database
// and pins while the sender goes on. The restarted CP takes over the
// maps: the same epoch and calendar (LoadBalancerStatus), the same
// calendars and members under the same data-plane ids in the maps as at
// the kill, and the maps do what the CP's tables (its /tables) say. A
// third receiver then joins, so the restarted CP makes new epochs, and a
// second sender sends across them: every event of both is written whole
// by exactly one receiver, the third one among them.
func TestCPXDPPinnedKillUnderLoad(t *testing.T) {
	xdptest.Require(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command")
	}
	nw, err := xdpNet()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nw.cleanup)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.tables")
	writeFile(t, base, nw.tables)
	obj, err := buildLBXDP("lb-2025", dir)
	if err != nil {
		t.Fatal(err)
	}
	pins := filepath.Join(xdptest.BPFFS(t), "lb")
	a := startNSC(t, "xdp", "attach", "--dev", nw.lbFlags[1], "--mode", "generic", "--obj", obj, "--tables", base, "--pin", pins)
	if code, out := a.waitExit(t); code != 0 {
		t.Fatalf("nsc xdp attach --pin exited %d: %q", code, out)
	}
	l, err := net.Listen("tcp", nw.cpIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr := l.Addr().String()
	l.Close()
	httpAddr := freeTCP(t)
	startCP := func() *nscProcess {
		p := startNSC(t, "cp", "--grpc", grpcAddr, "--http", httpAddr, "--lb-feed", "--sync-ipv4", nw.cpIP, "--db", filepath.Join(dir, "cp.db"),
			"--admin-token-file", filepath.Join(dir, "admin"), "--instances", "1", "--epoch-interval", "100ms", "--ready-timeout", "1m",
			"--data-ipv4", strings.TrimSuffix(nw.lb, fmt.Sprintf(":%d", lbPort)), "--member-mac", nw.lbFlags[5], "--xdp-pinned", pins)
		p.expect(t, p.stdout, "nsc cp: gRPC on ")
		return p
	}
	cpp := startCP()
	admin := adminToken(t, dir)
	lc := cpClient(t, grpcAddr)
	res, err := lc.ReserveLoadBalancer(bearer(admin), &pb.ReserveLoadBalancerRequest{Name: "kill", SenderAddresses: []string{nw.hostIP, nw.syncIP}})
	if err != nil {
		t.Fatal(err)
	}
	var recvs []*nscProcess
	var outs []string
	recv := func(i int) {
		out := filepath.Join(dir, fmt.Sprint("rx", i))
		r := startNSCIn(t, nw.netns, "recv", "--listen", nw.hostIP+":0", "--ports", "2", "--cp", grpcAddr, "--token", res.Token,
			"--lb", res.LbId, "--name", fmt.Sprint("rx", i), "--out", out, "--verify")
		r.expect(t, r.stdout, "registered with")
		recvs, outs = append(recvs, r), append(outs, out)
	}
	recv(0)
	recv(1)
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
	until := func(re *regexp.Regexp) {
		t.Helper()
		for deadline := time.Now().Add(wait); !re.MatchString(status()); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no calendar matching %s: %s", re, status())
			}
		}
		time.Sleep(300 * time.Millisecond) // the tick that made the epoch programs after storing it
	}
	until(regexp.MustCompile(`rx0 [1-9].*rx1 [1-9]|rx1 [1-9].*rx0 [1-9]`))
	// maps reads the instance's entries back from the pinned maps.
	maps := func() ([]string, []string) {
		t.Helper()
		r, err := xdprun.OpenPinned(pins)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		es, err := cp.XDPEntries(r.Live(), 0)
		if err != nil {
			t.Fatal(err)
		}
		var raw []string // calendars and members under their data-plane ids
		for _, te := range es {
			if !strings.HasPrefix(te.Table, "epoch") {
				raw = append(raw, fmt.Sprint(te))
			}
		}
		slices.Sort(raw)
		return cp.Resolved(es), raw
	}
	specs, err := cp.ModelTables("lb-2025")
	if err != nil {
		t.Fatal(err)
	}
	// cpTables is what the CP computes, and whether it held still while the maps were read.
	cpTables := func() (resolved, mapsResolved, raw []string) {
		t.Helper()
		for range 20 {
			script, etag := cpTablesNow(t, httpAddr, admin)
			mapsResolved, raw = maps()
			if _, again := cpTablesNow(t, httpAddr, admin); again != etag {
				continue
			}
			es, err := packet.ParseEntries("/tables", bytes.NewReader(script), specs)
			if err != nil {
				t.Fatal(err)
			}
			return cp.Resolved(es), mapsResolved, raw
		}
		t.Fatal("the CP's tables never held still while the maps were read")
		return nil, nil, nil
	}
	sync := fmt.Sprintf("%s:%d", res.SyncIpv4Address, res.SyncUdpPort)
	sender := func(dataID, events int) *nscProcess {
		return startNSCIn(t, nw.netns, "send", "--to", nw.lb, "--from", nw.hostIP+":0", "--events", fmt.Sprint(events),
			"--data-id", fmt.Sprint(dataID), "--size", "20000", "--mtu", "1500", "--rate", "100", "--sync", sync)
	}
	want, inMaps, _ := cpTables()
	if !slices.Equal(want, inMaps) {
		t.Errorf("before the kill the maps do not do what the CP's tables say:\n%s", cptest.DiffLines(want, inMaps))
	}
	s1 := sender(1, 300) // 3 s
	time.Sleep(time.Second)
	before := status()
	cpp.cmd.Process.Signal(syscall.SIGKILL)
	cpp.waitExit(t)
	atKill, rawAtKill := maps()
	time.Sleep(700 * time.Millisecond) // events go on through the XDP program
	cpp = startCP()
	if after := status(); after != before {
		t.Errorf("after the restart\n %s\nwant\n %s", after, before)
	}
	want, inMaps, raw := cpTables()
	if !slices.Equal(want, inMaps) {
		t.Errorf("after the restart the maps do not do what the CP's tables say:\n%s", cptest.DiffLines(want, inMaps))
	}
	if st := status(); st == before {
		if !slices.Equal(inMaps, atKill) || !slices.Equal(raw, rawAtKill) {
			t.Errorf("the same epochs, but the maps changed from the kill:\n%s%s", cptest.DiffLines(atKill, inMaps), cptest.DiffLines(rawAtKill, raw))
		}
	} else {
		t.Logf("a new epoch since the restart (%s), the maps are not compared with the kill's", st)
	}
	if code, out := s1.waitExit(t); code != 0 {
		t.Fatalf("nsc send exited %d: %q", code, out)
	}
	// A third receiver: the restarted CP's epochs, while a sender sends.
	// An epoch starts about 2 s of events past the newest sync message
	// (lead + guard), so the sender goes on well past that.
	s2 := sender(2, 500)
	time.Sleep(500 * time.Millisecond)
	recv(2)
	if code, out := s2.waitExit(t); code != 0 {
		t.Fatalf("nsc send exited %d: %q", code, out)
	}
	time.Sleep(500 * time.Millisecond)
	if st := status(); !strings.Contains(st, "rx2") {
		t.Errorf("rx2 not in the status: %s", st)
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
	var per [3][3]int
	for dataID, n := range map[int]int{1: 300, 2: 500} {
		for e := range n {
			at := got[fmt.Sprintf("%d-%d.bin", e, dataID)]
			if len(at) != 1 {
				t.Errorf("sender %d: event %d written by receivers %v, want one", dataID, e, at)
				continue
			}
			per[dataID][at[0]]++
		}
	}
	t.Logf("events whole per receiver: %v across the kill and restart, %v as rx2 joined", per[1], per[2])
	if per[2][2] == 0 {
		t.Errorf("no event at rx2: the restarted CP's epochs did not reach the maps")
	}
	cpp.stop(t, syscall.SIGTERM)
}
