package cp_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestRepliesAsUdplbd2 checks the reply fields udplbd2 fills: ejfatUri of
// Reserve and CreateToken (written as udplbd2's EjfatUrl Display), the
// worker's sessionId and lastUpdated (the receiver's own timestamp),
// expiresAt (a year without until), idempotent Free and Deregister, and
// names refused as udplbd2's is_valid_name refuses them.
func TestRepliesAsUdplbd2(t *testing.T) {
	clk, c, lc := clockedCP(t)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "run.42/a_b:c-d"})
	if err != nil {
		t.Fatal(err)
	}
	sync, data := fmt.Sprint(res.SyncUdpPort), fmt.Sprintf("%d-%d", res.DataMinPort, res.DataMaxPort)
	want := "ejfat://" + res.Token + "@" + c.grpc + "/lb/" + res.LbId + "?sync=127.0.0.1:" + sync + "&sync=[::ffff:127.0.0.1]:" +
		sync + "&data=127.0.0.1:" + data + "&data=[::1]:" + data
	if res.EjfatUri != want {
		t.Errorf("ejfatUri %s\nwant      %s", res.EjfatUri, want)
	}
	// The host is the one the client called (its :authority).
	_, port, _ := net.SplitHostPort(c.grpc)
	tok, err := pb.NewLoadBalancerClient(dial(t, "localhost:"+port)).CreateToken(as(c.admin), &pb.CreateTokenRequest{Name: "t"})
	if err != nil || tok.EjfatUri != "ejfat://"+tok.Token+"@localhost:"+port+"/" {
		t.Errorf("CreateToken: %v, %v", tok, err)
	}

	reg, err := lc.Register(as(res.Token), &pb.RegisterRequest{LbId: res.LbId, Name: "w", Weight: 1, IpAddress: "127.0.0.1",
		UdpPort: 20000})
	if err != nil {
		t.Fatal(err)
	}
	sent := clk.Now().Add(-1500 * time.Millisecond) // the receiver's clock, behind
	if _, err := lc.SendState(as(reg.Token), &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId,
		Timestamp: timestamppb.New(sent), IsReady: true}); err != nil {
		t.Fatal(err)
	}
	st, err := lc.LoadBalancerStatus(as(res.Token), &pb.LoadBalancerStatusRequest{LbId: res.LbId})
	if err != nil {
		t.Fatal(err)
	}
	w := st.Workers[0]
	if fmt.Sprint(w.SessionId) != reg.SessionId || !w.LastUpdated.AsTime().Equal(sent) {
		t.Errorf("worker sessionId %d (want %s), lastUpdated %v (want the receiver's %v)", w.SessionId, reg.SessionId,
			w.LastUpdated.AsTime(), sent)
	}
	if !st.ExpiresAt.AsTime().Equal(clk.Now().Add(365 * 24 * time.Hour)) {
		t.Errorf("expiresAt %v without until, want a year from now", st.ExpiresAt.AsTime())
	}

	for range 2 {
		_, err = lc.Deregister(as(res.Token), &pb.DeregisterRequest{LbId: res.LbId, SessionId: reg.SessionId})
		wantCode(t, "Deregister, and again", err, codes.OK)
	}
	for range 2 {
		_, err = lc.FreeLoadBalancer(as(c.admin), &pb.FreeLoadBalancerRequest{LbId: res.LbId})
		wantCode(t, "Free, and again", err, codes.OK)
	}
	for _, name := range []string{"a..b", ".a", "a.", "-a", "a b", "a;b", string(make([]byte, 254))} {
		_, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: name})
		wantCode(t, fmt.Sprintf("reserve named %q", name), err, codes.InvalidArgument)
		_, err = lc.CreateToken(as(c.admin), &pb.CreateTokenRequest{Name: name})
		wantCode(t, fmt.Sprintf("token named %q", name), err, codes.InvalidArgument)
	}
}
