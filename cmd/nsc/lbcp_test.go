package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/cptest"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
)

// cpTablesNow GETs an nsc cp's /tables: the script and its ETag, once the
// CP serves them (503 until it has programmed after starting).
func cpTablesNow(t *testing.T, addr, token string) ([]byte, string) {
	t.Helper()
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest("GET", "http://"+addr+"/tables", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			return body, res.Header.Get("ETag")
		}
	}
	t.Fatalf("nsc cp at %s does not serve its tables", addr)
	return nil, ""
}

// TestLBFromCPSurvivesKill runs `nsc lb --cp` on the tables of an
// `nsc cp --lb-feed` (both processes) and kills the CP with SIGKILL: the
// LB goes on forwarding with the tables it holds — the events sent while
// the CP is down arrive whole, each at one receiver — and after the CP
// restarts on the same database it serves the same tables (the same
// script, byte for byte, so the same ETag), which the LB finds it holds
// already; the events after that arrive whole too.
func TestLBFromCPSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	lbAddr := lbtest.Addr(t)
	ip := binary.BigEndian.Uint32(lbAddr.IP.To4())
	base := filepath.Join(dir, "base.tables")
	writeFile(t, base, fmt.Sprintf(`table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0
table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0
`, ip, ip))
	grpcAddr, httpAddr := freeTCP(t), freeTCP(t)
	startCP := func() *nscProcess {
		p := startNSC(t, "cp", "--grpc", grpcAddr, "--http", httpAddr, "--db", filepath.Join(dir, "cp.db"),
			"--admin-token-file", filepath.Join(dir, "admin"), "--instances", "1", "--epoch-interval", "100ms",
			"--ready-timeout", "1m", "--lb-feed")
		p.expect(t, p.stdout, "nsc cp: gRPC on ")
		return p
	}
	cp := startCP()
	admin := adminToken(t, dir)
	lc := cpClient(t, grpcAddr)
	res, err := lc.ReserveLoadBalancer(bearer(admin), &pb.ReserveLoadBalancerRequest{Name: "feed", SenderAddresses: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := bearer(res.Token)
	members := []*lbtest.Member{lbtest.NewMember(t, 0), lbtest.NewMember(t, 1)}
	for _, id := range cptest.Register(t, lc, ctx, res.LbId, []int{members[0].Port(), members[1].Port()}, 1, 1) {
		if _, err := lc.SendState(ctx, &pb.SendStateRequest{LbId: res.LbId, SessionId: id, IsReady: true}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		st, err := lc.LoadBalancerStatus(ctx, &pb.LoadBalancerStatusRequest{LbId: res.LbId})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Workers) == 2 && st.Workers[0].SlotsAssigned+st.Workers[1].SlotsAssigned == 512 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no calendar: %v", st.Workers)
		}
	}
	time.Sleep(300 * time.Millisecond) // the tick that made the epoch programs after storing it
	script, etag := cpTablesNow(t, httpAddr, admin)
	lb := startNSC(t, "lb", "--tables", base, "--listen", lbAddr.String(), "--workers", "1", "--cp", httpAddr, "--token", admin)
	lb.expect(t, lb.stdout, "tables from nsc cp at "+httpAddr+": version "+etag)
	sender := lbtest.NewEventSender(t, lbAddr)
	// whole sends events lo..hi-1 and wants each whole at one member.
	whole := func(what string, lo, hi uint64) {
		t.Helper()
		sender.Send(t, lo, hi)
		got := lbtest.Arrivals(members, int(hi-lo)*lbtest.Segments)
		wrong, per := 0, map[int]int{}
		for n := lo; n < hi; n++ {
			g := got[n]
			for m, c := range g {
				per[m] += c
			}
			if len(g) != 1 || g[0]+g[1] != lbtest.Segments {
				if wrong++; wrong <= 5 {
					t.Errorf("%s: event %d arrived %v (member: segments), want %d segments at one", what, n, g, lbtest.Segments)
				}
			}
		}
		t.Logf("%s: %d events, segments per member %v, %d not whole at one", what, hi-lo, per, wrong)
	}
	whole("CP up", 0, 200)
	cp.cmd.Process.Signal(syscall.SIGKILL)
	cp.waitExit(t)
	lb.expect(t, lb.stderr, "forwarding with the tables held")
	whole("CP killed", 1000, 1200)
	cp = startCP()
	again, etagAgain := cpTablesNow(t, httpAddr, admin)
	if etagAgain != etag || !bytes.Equal(again, script) {
		t.Errorf("after the restart the CP serves version %s (%d bytes), before %s (%d bytes)", etagAgain, len(again), etag, len(script))
	}
	lb.expect(t, lb.stdout, "nsc cp at "+httpAddr+" is back: version "+etag)
	whole("CP restarted", 2000, 2200)
	if code, last := lb.stop(t, syscall.SIGTERM); code != 0 || !strings.Contains(last, "forwarded") && !strings.Contains(last, "drop") {
		t.Errorf("nsc lb exited %d, last line %q", code, last)
	}
	_, out := lb.waitExit(t)
	for _, l := range out {
		if strings.HasPrefix(l, "tables from nsc cp") && !strings.HasSuffix(l, etag) {
			t.Errorf("the LB took other tables: %q", l)
		}
	}
	cp.stop(t, syscall.SIGTERM)
}
