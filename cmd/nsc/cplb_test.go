package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/cptest"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
)

// TestCPProgramsLB runs `nsc cp --lb-listen` as a process: two sessions
// on loopback receivers get slots, and every event sent to the LB reaches,
// whole, the receiver that LoadBalancerStatus says holds its slot; after
// one session stops being ready, a new epoch sends them all to the other.
// The CP writes the same changes as a BMv2 script (--p4-script) beside.
func TestCPProgramsLB(t *testing.T) {
	dir := t.TempDir()
	lbAddr := lbtest.Addr(t)
	ip := binary.BigEndian.Uint32(lbAddr.IP.To4())
	writeFile(t, filepath.Join(dir, "base.tables"), fmt.Sprintf(`table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0
`, ip, ip))
	p := startNSC(t, "cp", "--grpc", "127.0.0.1:0", "--db", filepath.Join(dir, "cp.db"), "--admin-token-file", filepath.Join(dir, "admin"),
		"--instances", "2", "--epoch-interval", "50ms", "--ready-timeout", "1m", "--lb-listen", lbAddr.String(), "--lb-tables", filepath.Join(dir, "base.tables"),
		"--p4-script", filepath.Join(dir, "epochs.cli"))
	line := p.expect(t, p.stdout, "nsc cp: gRPC on ")
	if !strings.Contains(line, "lb-2025 LB on "+lbAddr.String()) {
		t.Errorf("start line %q does not name the LB", line)
	}
	addr, _, _ := strings.Cut(strings.TrimPrefix(line, "nsc cp: gRPC on "), ",")
	lc := cpClient(t, addr)
	res, err := lc.ReserveLoadBalancer(bearer(adminToken(t, dir)), &pb.ReserveLoadBalancerRequest{Name: "e2e",
		SenderAddresses: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := bearer(res.Token)
	// A sender at 1000 events/s, synced every 100 ms, before the sessions
	// register: they are ready from Register (as in udplbd2), so the
	// first epoch is made at once, from these samples.
	sync, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", res.SyncUdpPort))
	if err != nil {
		t.Fatal(err)
	}
	defer sync.Close()
	for i := range 3 {
		if _, err := sync.Write(cptest.SyncMessage(1, uint64(5000+100*i), 1000, time.Now())); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	members := []*lbtest.Member{lbtest.NewMember(t, 0), lbtest.NewMember(t, 1)}
	ids := cptest.Register(t, lc, ctx, res.LbId, []int{members[0].Port(), members[1].Port()}, 1, 3)
	ready := func(r0, r1 bool) {
		t.Helper()
		for i, r := range []bool{r0, r1} {
			if _, err := lc.SendState(ctx, &pb.SendStateRequest{LbId: res.LbId, SessionId: ids[i], IsReady: r}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// calendar waits until the current epoch gives member 0 want slots
	// and returns the epoch, its boundary and each slot's member.
	calendar := func(want uint32) (uint64, uint64, [512]int) {
		t.Helper()
		var cal [512]int
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			st, err := lc.LoadBalancerStatus(ctx, &pb.LoadBalancerStatusRequest{LbId: res.LbId})
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Workers) != 2 || st.Workers[0].SlotsAssigned != want || st.Workers[1].SlotsAssigned != 512-want {
				continue
			}
			for i, w := range st.Workers {
				for _, r := range w.Slots {
					for j := range r.Length {
						cal[r.Index+int32(j)] = i
					}
				}
			}
			time.Sleep(200 * time.Millisecond) // the tick that made the epoch programs the LB after storing it
			return st.CurrentEpoch, st.CurrentPredictedEventNumber, cal
		}
		t.Fatalf("no epoch giving %d slots to session 0", want)
		return 0, 0, cal
	}
	sender := lbtest.NewEventSender(t, lbAddr)
	check := func(what string, boundary uint64, cal [512]int) {
		t.Helper()
		lo, hi := boundary+1000, boundary+2024
		sender.Send(t, lo, hi)
		got := lbtest.Arrivals(members, int(hi-lo)*lbtest.Segments)
		wrong := 0
		for n := lo; n < hi; n++ {
			if g, want := got[n], cal[n%512]; len(g) != 1 || g[want] != lbtest.Segments {
				if wrong++; wrong <= 5 {
					t.Errorf("%s: event %d arrived %v (receiver: segments), want %d segments at %d", what, n, g, lbtest.Segments, want)
				}
			}
		}
		if wrong > 0 {
			t.Errorf("%s: %d of %d events wrong", what, wrong, hi-lo)
		}
	}
	ready(true, true)
	e1, b1, cal := calendar(128)
	if b1 < 5200+2000 || b1 > 5200+3000 {
		t.Errorf("first boundary %d, want the last event synced (5200) plus 2 s of events and a little", b1)
	}
	check("weights 1:3", b1, cal)
	ready(true, false)
	e2, b2, cal := calendar(512)
	if e2 <= e1 || b2 <= b1 {
		t.Errorf("epoch %d at %d after epoch %d at %d", e2, b2, e1, b1)
	}
	check("one session ready", b2, cal)
	script, _ := os.ReadFile(filepath.Join(dir, "epochs.cli"))
	if n := strings.Count(string(script), "table_add IngressImpl.load_balance_calendar_table"); n < 512 {
		t.Errorf("the P4 script beside the LB adds %d calendar entries, want at least 512", n)
	}
	if code, last := p.stop(t, syscall.SIGTERM); code != 0 || !strings.Contains(last, "drop") && !strings.Contains(last, "forwarded") {
		t.Errorf("nsc cp exited %d, last line %q", code, last)
	}
}

// TestCPWritesP4Script runs `nsc cp --p4-script`: a session's first epoch
// appears in the file as table_add commands in the BMv2 program's names.
func TestCPWritesP4Script(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "epochs.cli")
	p := startNSC(t, "cp", "--grpc", "127.0.0.1:0", "--db", filepath.Join(dir, "cp.db"), "--admin-token-file", filepath.Join(dir, "admin"),
		"--instances", "2", "--epoch-interval", "50ms", "--p4-script", script)
	addr, _, _ := strings.Cut(strings.TrimPrefix(p.expect(t, p.stdout, "nsc cp: gRPC on "), "nsc cp: gRPC on "), ",")
	lc := cpClient(t, addr)
	res, err := lc.ReserveLoadBalancer(bearer(adminToken(t, dir)), &pb.ReserveLoadBalancerRequest{Name: "p4"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := lc.Register(bearer(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: "r", Weight: 1,
		IpAddress: "10.1.2.3", UdpPort: 0x4556, PortRange: pb.PortRange_PORT_RANGE_16})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.SendState(bearer(res.Token), &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId, IsReady: true}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"table_add IngressImpl.member_info_lookup_table IngressImpl.do_ipv4_member_rewrite 0x0 0x0800 0x0000 => 0x000000000000 0x0a010203 0x4556 0x04 0x0",
		"table_add IngressImpl.load_balance_calendar_table IngressImpl.do_assign_member 0x0 0x00000001 0x01ff => 0x0000",
	}
	var text string
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(script)
		if text = string(b); strings.Contains(text, want[0]) && strings.Contains(text, want[1]) {
			return
		}
	}
	t.Errorf("%s lacks %q; has:\n%.2000s", script, want, text)
}
