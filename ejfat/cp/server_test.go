package cp_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// clock is a settable time for Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// clockedCP starts a CP on a clock the test sets.
func clockedCP(t *testing.T) (*clock, *testCP, pb.LoadBalancerClient) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	cfg := cpConfig()
	cfg.Now = clk.Now
	c := startCP(t, cfg)
	return clk, c, client(t, c)
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Errorf("%s: %v (%v), want %v", what, got, err, want)
	}
}

// lbSession reserves an LB and registers one session on it with tok.
func lbSession(t *testing.T, lc pb.LoadBalancerClient, tok string) (*pb.ReserveLoadBalancerReply, *pb.RegisterReply) {
	t.Helper()
	res, err := lc.ReserveLoadBalancer(as(tok), &pb.ReserveLoadBalancerRequest{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := lc.Register(as(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: "w", Weight: 1,
		IpAddress: "127.0.0.1", UdpPort: 20000, PortRange: pb.PortRange_PORT_RANGE_1})
	if err != nil {
		t.Fatal(err)
	}
	return res, reg
}

func TestAuthentication(t *testing.T) {
	c := startCP(t, cpConfig())
	lc := client(t, c)
	req := &pb.OverviewRequest{}
	_, err := lc.Overview(context.Background(), req)
	wantCode(t, "no token", err, codes.Unauthenticated)
	// As udplbd2: an unknown token holds nothing, a malformed header is
	// an invalid argument, and Version needs a token too.
	_, err = lc.Overview(as("0123"), req)
	wantCode(t, "unknown token", err, codes.PermissionDenied)
	_, err = lc.Overview(metadata.AppendToOutgoingContext(context.Background(), "authorization", c.admin), req)
	wantCode(t, "token without Bearer", err, codes.InvalidArgument)
	_, err = lc.Version(context.Background(), &pb.VersionRequest{})
	wantCode(t, "Version without a token", err, codes.Unauthenticated)
	_, err = lc.Version(as("0123"), &pb.VersionRequest{})
	wantCode(t, "Version with an unknown token", err, codes.PermissionDenied)
	_, err = lc.Version(as(c.admin), &pb.VersionRequest{})
	wantCode(t, "Version with a token", err, codes.OK)
	_, err = lc.Overview(as(c.admin), req)
	wantCode(t, "admin", err, codes.OK)
}

func TestPermissions(t *testing.T) {
	c := startCP(t, cpConfig())
	lc := client(t, c)
	res, reg := lbSession(t, lc, c.admin)
	other, _ := lbSession(t, lc, c.admin)
	lbTok, sessTok := res.Token, reg.Token

	_, err := lc.ReserveLoadBalancer(as(lbTok), &pb.ReserveLoadBalancerRequest{})
	wantCode(t, "reserve with an LB token", err, codes.PermissionDenied)
	_, err = lc.LoadBalancerStatus(as(lbTok), &pb.LoadBalancerStatusRequest{LbId: other.LbId})
	wantCode(t, "status of another LB", err, codes.PermissionDenied)
	_, err = lc.Register(as(sessTok), &pb.RegisterRequest{LbId: res.LbId, IpAddress: "127.0.0.1", UdpPort: 1, Weight: 1})
	wantCode(t, "register with a session token", err, codes.PermissionDenied)
	// Overview lists what the token may read (udplbd2).
	ov, err := lc.Overview(as(lbTok), &pb.OverviewRequest{})
	if err != nil || len(ov.LoadBalancers) != 1 || ov.LoadBalancers[0].Reservation.LbId != res.LbId {
		t.Errorf("overview with an LB token: %v, %v; want its LB alone", ov, err)
	}
	_, err = lc.SendState(as(sessTok), &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId, FillPercent: 0.5})
	wantCode(t, "send state with the session token", err, codes.OK)
	_, err = lc.SendState(as(lbTok), &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId, FillPercent: 0.5})
	wantCode(t, "send state with the LB token (covers its sessions)", err, codes.OK)
	_, err = lc.SendState(as(other.Token), &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId})
	wantCode(t, "send state with another LB's token", err, codes.PermissionDenied)
	_, err = lc.LoadBalancerStatus(as(c.admin), &pb.LoadBalancerStatusRequest{LbId: "999"})
	wantCode(t, "status of no LB", err, codes.NotFound)
	_, err = lc.LoadBalancerStatus(as(c.admin), &pb.LoadBalancerStatusRequest{LbId: "x"})
	wantCode(t, "status of lbId x", err, codes.InvalidArgument)
	_, err = lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{})
	wantCode(t, "a third reservation on two instances", err, codes.ResourceExhausted)
	for _, fill := range []float32{-0.1, 1.5, float32(math.NaN())} {
		_, err = lc.SendState(as(sessTok), &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId, FillPercent: fill})
		wantCode(t, fmt.Sprintf("fillPercent %v", fill), err, codes.InvalidArgument)
	}
	_, err = lc.SendState(as(sessTok), &pb.SendStateRequest{LbId: other.LbId, SessionId: reg.SessionId})
	wantCode(t, "session on the wrong LB", err, codes.NotFound)
	_, err = lc.Register(as(lbTok), &pb.RegisterRequest{LbId: res.LbId, IpAddress: "nope", UdpPort: 1, Weight: 1})
	wantCode(t, "register a bad address", err, codes.InvalidArgument)
	_, err = lc.Register(as(lbTok), &pb.RegisterRequest{LbId: res.LbId, IpAddress: "::1", UdpPort: 65535,
		PortRange: pb.PortRange_PORT_RANGE_2, Weight: 1})
	wantCode(t, "register ports beyond 65535", err, codes.InvalidArgument)

	// The rejections are counted by method and code.
	metrics := get200(t, "http://"+c.http+"/metrics")
	for _, line := range []string{
		`nsc_cp_rejected_calls_total{code="PermissionDenied",method="ReserveLoadBalancer"} 1`,
		`nsc_cp_rejected_calls_total{code="InvalidArgument",method="SendState"} 3`,
		`nsc_cp_rejected_calls_total{code="ResourceExhausted",method="ReserveLoadBalancer"} 1`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}

func get200(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s", url, resp.Status)
	}
	return string(b)
}

func perm(r pb.ResourceType, id string, p pb.PermissionType) *pb.TokenPermission {
	return &pb.TokenPermission{ResourceType: r, ResourceId: id, Permission: p}
}

func TestTokens(t *testing.T) {
	c := startCP(t, cpConfig())
	lc := client(t, c)
	res, _ := lbSession(t, lc, c.admin)
	ro := perm(pb.ResourceType_RESERVATION, res.LbId, pb.PermissionType_READ_ONLY)
	child, err := lc.CreateToken(as(res.Token), &pb.CreateTokenRequest{Name: "ro", Permissions: []*pb.TokenPermission{ro}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*pb.TokenPermission{
		perm(pb.ResourceType_RESERVATION, res.LbId, pb.PermissionType_REGISTER),
		perm(pb.ResourceType_ALL, "", pb.PermissionType_READ_ONLY),
		perm(pb.ResourceType_RESERVATION, "999", pb.PermissionType_READ_ONLY),
		perm(pb.ResourceType_LOAD_BALANCER, "0", pb.PermissionType_READ_ONLY), // the instance of res
	} {
		_, err := lc.CreateToken(as(child.Token), &pb.CreateTokenRequest{Permissions: []*pb.TokenPermission{p}})
		wantCode(t, fmt.Sprintf("read-only child grants %v", p), err, codes.PermissionDenied)
	}
	grand, err := lc.CreateToken(as(child.Token), &pb.CreateTokenRequest{Name: "grand", Permissions: []*pb.TokenPermission{ro}})
	wantCode(t, "child grants what it holds", err, codes.OK)

	me, err := lc.ListTokenPermissions(as(grand.Token), &pb.ListTokenPermissionsRequest{Target: &pb.TokenSelector{}})
	if err != nil || me.Token.Name != "grand" || len(me.Token.Permissions) != 1 || me.Token.Permissions[0].ResourceId != res.LbId {
		t.Errorf("ListTokenPermissions of self: %v, %v", me, err)
	}
	kids, err := lc.ListChildTokens(as(res.Token), &pb.ListChildTokensRequest{
		Target: &pb.TokenSelector{TokenSelector: &pb.TokenSelector_Token{Token: child.Token}}})
	if err != nil || len(kids.Tokens) != 1 || kids.Tokens[0].Name != "grand" {
		t.Errorf("ListChildTokens of the child: %v, %v", kids, err)
	}
	_, err = lc.ListTokenPermissions(as(grand.Token), &pb.ListTokenPermissionsRequest{
		Target: &pb.TokenSelector{TokenSelector: &pb.TokenSelector_Token{Token: child.Token}}})
	wantCode(t, "a token reads its parent", err, codes.PermissionDenied)
	_, err = lc.RevokeToken(as(grand.Token), &pb.RevokeTokenRequest{
		Target: &pb.TokenSelector{TokenSelector: &pb.TokenSelector_Token{Token: child.Token}}})
	wantCode(t, "a token revokes its parent", err, codes.PermissionDenied)

	// Revoking the LB token revokes the child and grandchild made from it.
	_, err = lc.RevokeToken(as(c.admin), &pb.RevokeTokenRequest{
		Target: &pb.TokenSelector{TokenSelector: &pb.TokenSelector_Token{Token: res.Token}}})
	wantCode(t, "admin revokes the LB token", err, codes.OK)
	for _, tok := range []string{res.Token, child.Token, grand.Token} {
		_, err := lc.GetLoadBalancer(as(tok), &pb.GetLoadBalancerRequest{LbId: res.LbId})
		wantCode(t, "a revoked token", err, codes.PermissionDenied)
	}
	_, err = lc.GetLoadBalancer(as(c.admin), &pb.GetLoadBalancerRequest{LbId: res.LbId})
	wantCode(t, "the admin after revoking a child", err, codes.OK)
}

func TestReservationLifecycle(t *testing.T) {
	clk, c, lc := clockedCP(t)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{
		Until: timestamppb.New(clk.Now().Add(10 * time.Second)), SenderAddresses: []string{"10.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, lb := as(res.Token), res.LbId
	_, err = lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Until: timestamppb.New(clk.Now().Add(-time.Second))})
	wantCode(t, "reserve until the past", err, codes.InvalidArgument)
	_, err = lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Strategy: "random"})
	wantCode(t, "reserve with an unknown strategy", err, codes.InvalidArgument)
	if _, err := lc.AddSenders(ctx, &pb.AddSendersRequest{LbId: lb, SenderAddresses: []string{"10.0.0.3", "::1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.RemoveSenders(ctx, &pb.RemoveSendersRequest{LbId: lb, SenderAddresses: []string{"10.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	_, err = lc.AddSenders(ctx, &pb.AddSendersRequest{LbId: lb, SenderAddresses: []string{"10.0.0.300"}})
	wantCode(t, "add a bad sender", err, codes.InvalidArgument)
	st, err := lc.LoadBalancerStatus(ctx, &pb.LoadBalancerStatusRequest{LbId: lb})
	if err != nil || strings.Join(st.SenderAddresses, " ") != "10.0.0.3 ::1" {
		t.Errorf("senders after add and remove: %v, %v", st.GetSenderAddresses(), err)
	}
	ext, err := lc.ExtendReservation(ctx, &pb.ExtendReservationRequest{LbId: lb, Until: timestamppb.New(clk.Now().Add(time.Minute))})
	if err != nil || !ext.Until.AsTime().Equal(clk.Now().Add(time.Minute)) {
		t.Errorf("extend: %v, %v", ext, err)
	}
	clk.Add(30 * time.Second)
	c.Tick()
	if _, err := lc.GetLoadBalancer(ctx, &pb.GetLoadBalancerRequest{LbId: lb}); err != nil {
		t.Errorf("extended reservation gone after 30 s: %v", err)
	}
	clk.Add(31 * time.Second)
	_, err = lc.GetLoadBalancer(ctx, &pb.GetLoadBalancerRequest{LbId: lb})
	wantCode(t, "an expired reservation", err, codes.NotFound)
	c.Tick()
	if n := len(c.store.Reservations()); n != 0 {
		t.Errorf("%d reservations after expiry and a tick, want 0", n)
	}
}

func TestSessionsEpochsTimeseries(t *testing.T) {
	clk, c, lc := clockedCP(t)
	res, reg := lbSession(t, lc, c.admin)
	ctx, lb := as(res.Token), res.LbId
	send := func(fill float32, ready bool) {
		t.Helper()
		if _, err := lc.SendState(ctx, &pb.SendStateRequest{LbId: lb, SessionId: reg.SessionId, FillPercent: fill,
			IsReady: ready, TotalEventsReassembled: int64(100 * fill)}); err != nil {
			t.Fatal(err)
		}
	}
	slots := func() (uint64, uint32) {
		t.Helper()
		st, err := lc.LoadBalancerStatus(ctx, &pb.LoadBalancerStatusRequest{LbId: lb})
		if err != nil {
			t.Fatal(err)
		}
		return st.CurrentEpoch, st.Workers[0].SlotsAssigned
	}
	c.Tick()
	if e, n := slots(); e != 1 || n != cp.Slots {
		t.Errorf("before any state: epoch %d, %d slots; want 1, %d (a session is ready at Register, as in udplbd2)", e, n, cp.Slots)
	}
	send(0.1, true)
	clk.Add(time.Second)
	send(0.2, true)
	c.Tick()
	if e, n := slots(); e != 1 || n != cp.Slots {
		t.Errorf("ready session: epoch %d, %d slots; want 1, %d", e, n, cp.Slots)
	}
	c.Tick()
	if e, _ := slots(); e != 1 {
		t.Errorf("unchanged calendar started epoch %d", e)
	}
	clk.Add(3 * time.Second) // past the 2 s readiness timeout
	c.Tick()
	if e, n := slots(); e != 2 || n != 0 {
		t.Errorf("silent session: epoch %d, %d slots; want 2, 0", e, n)
	}

	ts, err := lc.Timeseries(ctx, &pb.TimeseriesRequest{SeriesSelector: []string{"/lb/" + lb + "/*"},
		Since: timestamppb.New(clk.Now().Add(-time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range ts.Timeseries {
		got[s.Name] = fmt.Sprint(s.GetFloatSamples().GetData(), s.GetIntegerSamples().GetData())
	}
	// 10 session series (3 states: Register's and two SendStates) and
	// the epochs' boundaries; no sync message came.
	fill := "/lb/" + lb + "/session/" + reg.SessionId + "/fill_percent"
	if len(got) != 11 || !strings.Contains(got[fill], "value:0.1") || !strings.Contains(got[fill], "value:0.2") ||
		got["/lb/"+lb+"/epoch/boundary_event"] == "" {
		t.Errorf("timeseries: %d series; %s = %s", len(got), fill, got[fill])
	}
	one, err := lc.Timeseries(ctx, &pb.TimeseriesRequest{SeriesSelector: []string{fill}})
	if err != nil || len(one.Timeseries) != 1 {
		t.Errorf("one series selected: %v, %v", one, err)
	}
	other, err := lc.Timeseries(ctx, &pb.TimeseriesRequest{SeriesSelector: []string{"/lb/999/*"}})
	if err != nil || len(other.Timeseries) != 0 {
		t.Errorf("timeseries of another LB: %v, %v; want nothing (unauthorized selectors are dropped)", other, err)
	}
	all := &pb.TimeseriesRequest{SeriesSelector: []string{"/lb/" + lb + "/*"}, Since: timestamppb.New(clk.Now().Add(-time.Hour))}
	defer cp.SetMaxSamples(3*10 + 2)()
	_, err = lc.Timeseries(ctx, all)
	wantCode(t, "3 states × 10 series and 2 epochs within a bound of 32 samples", err, codes.OK)
	cp.SetMaxSamples(3*10 + 1)
	_, err = lc.Timeseries(ctx, all)
	wantCode(t, "3 states × 10 series and 2 epochs over a bound of 31 samples", err, codes.ResourceExhausted)

	clk.Add(61 * time.Second) // past the 60 s deletion timeout
	c.Tick()
	if st, err := lc.LoadBalancerStatus(ctx, &pb.LoadBalancerStatusRequest{LbId: lb}); err != nil || len(st.Workers) != 0 {
		t.Errorf("silent session not deleted after 60 s: %v, %v", st.GetWorkers(), err)
	}
}

func TestResetAndSlotDemands(t *testing.T) {
	c := startCP(t, cpConfig())
	lc := client(t, c)
	res, reg := lbSession(t, lc, c.admin)
	ctx, lb := as(res.Token), res.LbId
	demand := []*pb.SlotRange{{Index: 10, Length: 5}}
	_, err := lc.SetSlotDemands(ctx, &pb.SetSlotDemandsRequest{LbId: lb,
		SlotConstraints: []*pb.SessionSlotRanges{{SessionId: reg.SessionId, Slots: demand}}})
	wantCode(t, "set slot demands", err, codes.OK)
	_, err = lc.SetSlotDemands(ctx, &pb.SetSlotDemandsRequest{LbId: lb,
		SlotConstraints: []*pb.SessionSlotRanges{{SessionId: reg.SessionId, Slots: []*pb.SlotRange{{Index: 510, Length: 5}}}}})
	wantCode(t, "slot demands past slot 511", err, codes.InvalidArgument)
	_, err = lc.SetSlotDemands(ctx, &pb.SetSlotDemandsRequest{LbId: lb,
		SlotConstraints: []*pb.SessionSlotRanges{{SessionId: "999"}}})
	wantCode(t, "slot demands of no session", err, codes.NotFound)
	st, _ := lc.LoadBalancerStatus(ctx, &pb.LoadBalancerStatusRequest{LbId: lb})
	if d := st.Workers[0].SlotDemands; len(d) != 1 || d[0].Index != 10 || d[0].Length != 5 {
		t.Errorf("slot demands %v", d)
	}
	rep, err := lc.ResetLoadBalancer(ctx, &pb.ResetLoadBalancerRequest{LbId: lb, Workers: true})
	if err != nil || !rep.Workers || rep.Senders {
		t.Errorf("reset reply %v, %v", rep, err)
	}
	st, _ = lc.LoadBalancerStatus(ctx, &pb.LoadBalancerStatusRequest{LbId: lb})
	if len(st.Workers) != 0 {
		t.Errorf("%d workers after reset", len(st.Workers))
	}
	_, err = lc.Deregister(as(reg.Token), &pb.DeregisterRequest{LbId: lb, SessionId: reg.SessionId})
	wantCode(t, "the token of a reset session", err, codes.PermissionDenied)
	_, err = lc.Deregister(ctx, &pb.DeregisterRequest{LbId: lb, SessionId: reg.SessionId})
	wantCode(t, "deregister a reset session (idempotent, as udplbd2)", err, codes.OK)
}

func TestSyncServer(t *testing.T) {
	cfg := cpConfig()
	cfg.SyncIPv6 = "::1"
	c := startCP(t, cfg)
	lc := client(t, c)
	res, _ := lbSession(t, lc, c.admin)
	if _, err := lc.AddSenders(as(c.admin), &pb.AddSendersRequest{LbId: res.LbId, SenderAddresses: []string{"127.0.0.1", "::1"}}); err != nil {
		t.Fatal(err)
	}
	if res.SyncIpv4Address != "127.0.0.1" || res.SyncIpv6Address != "::1" {
		t.Errorf("sync addresses %q, %q", res.SyncIpv4Address, res.SyncIpv6Address)
	}
	good := []byte{'L', 'C', 2, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0x30, 0x39, 0, 0x0f, 0x42, 0x40, 0, 0, 0, 0, 0, 0, 0, 1}
	bad := map[string][]byte{
		"length":  good[:27],
		"magic":   append([]byte{'L', 'B'}, good[2:]...),
		"version": append([]byte{'L', 'C', 1}, good[3:]...),
	}
	sendUDP(t, fmt.Sprintf("127.0.0.1:%d", res.SyncUdpPort),
		good, bad["length"], append(good[:28:28], 0), bad["magic"], bad["version"], good)
	sendUDP(t, fmt.Sprintf("[::1]:%d", res.SyncUdpPort), good)
	// A well-formed message to an instance without a reservation.
	freed, _ := lbSession(t, lc, c.admin)
	if _, err := lc.FreeLoadBalancer(as(c.admin), &pb.FreeLoadBalancerRequest{LbId: freed.LbId}); err != nil {
		t.Fatal(err)
	}
	sendUDP(t, fmt.Sprintf("127.0.0.1:%d", freed.SyncUdpPort), good)
	want := []string{
		`nsc_cp_sync_dropped_total{instance="1",reason="unreserved"} 1`,
		`nsc_cp_sync_dropped_total{instance="0",reason="length"} 2`,
		`nsc_cp_sync_dropped_total{instance="0",reason="magic"} 1`,
		`nsc_cp_sync_dropped_total{instance="0",reason="version"} 1`,
		`nsc_cp_sync_samples_total{lb="` + res.LbId + `"} 3`,
	}
	var metrics string
	for range 200 { // the datagrams are counted asynchronously
		metrics = get200(t, "http://"+c.http+"/metrics")
		if !slices.ContainsFunc(want, func(l string) bool { return !strings.Contains(metrics, l+"\n") }) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, line := range want {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	var id int64
	fmt.Sscan(res.LbId, &id)
	s := c.store.Sync(id)
	if len(s) != 3 || s[0].Source != 7 || s[0].Event != 12345 || s[0].Rate != 1_000_000 || s[0].SenderTime != 1 {
		t.Errorf("stored sync samples %+v", s)
	}
}

func TestMetricsAndDashboard(t *testing.T) {
	c := startCP(t, cpConfig())
	lc := client(t, c)
	res, reg := lbSession(t, lc, c.admin)
	if _, err := lc.SendState(as(reg.Token), &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId,
		FillPercent: 0.75, ControlSignal: 0.5, IsReady: true, TotalBytesRecv: 777}); err != nil {
		t.Fatal(err)
	}
	c.Tick()
	metrics := get200(t, "http://"+c.http+"/metrics")
	labels := `{lb="` + res.LbId + `",name="w",session="` + reg.SessionId + `"}`
	for _, line := range []string{
		"nsc_cp_session_fill_percent" + labels + " 0.75",
		"nsc_cp_session_control_signal" + labels + " 0.5",
		"nsc_cp_session_bytes_received" + labels + " 777",
		"nsc_cp_session_slots" + labels + " 512",
		`nsc_cp_lb_ready_sessions{instance="0",lb="` + res.LbId + `"} 1`,
		`nsc_cp_epochs_total{lb="` + res.LbId + `"} 1`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	page := get200(t, "http://"+c.http+"/")
	for _, want := range []string{"instance 0: LB " + res.LbId + " t (dynamic)", "instance 1: free",
		"<td>w</td><td>127.0.0.1:20000</td>", "width:75px", "<h3>epoch 1 from event "} {
		if !strings.Contains(page, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	// Without sync messages the boundary is the wall clock's µs (1 MHz
	// from the reservation, as udplbd2) lead and guard ahead.
	var boundary int64
	if _, after, ok := strings.Cut(page, "<h3>epoch 1 from event "); ok {
		fmt.Sscan(after, &boundary)
	}
	ahead := (cp.DefaultLead + cp.DefaultGuard).Microseconds()
	if now := time.Now().UnixMicro(); boundary < now+ahead-60e6 || boundary > now+ahead {
		t.Errorf("first boundary %d, want the µs clock (%d) %d µs ahead, or less by the test's time", boundary, now, ahead)
	}
	// The calendar picture: 512 slots, every one the session's color.
	if n := strings.Count(page, `fill="#4477aa"><title>slot `); n != 512 {
		t.Errorf("the calendar picture shows %d slots of the session, want 512", n)
	}
}

// sendUDP sends each datagram to addr.
func sendUDP(t *testing.T, addr string, datagrams ...[]byte) {
	t.Helper()
	sendUDPFrom(t, "", addr, datagrams...)
}
