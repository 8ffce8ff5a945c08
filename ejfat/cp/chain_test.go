package cp_test

import (
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
)

// TestChainLoadBalancer chains an LB on one CP (down) to an LB on another
// (up), both real CPs over gRPC: down's LB registers upstream as a
// receiver with the LB header kept, at down's data address; down's
// receivers' aggregate state reaches up; the chain graph shows the edge,
// and the chain back from up to down is refused as a cycle; Unchain
// deregisters upstream, and so does Free.
func TestChainLoadBalancer(t *testing.T) {
	up, down := startCP(t, cpConfig()), startCP(t, cpConfig())
	ul, dl := client(t, up), client(t, down)
	ures, err := ul.ReserveLoadBalancer(as(up.admin), &pb.ReserveLoadBalancerRequest{Name: "up"})
	if err != nil {
		t.Fatal(err)
	}
	dres, dreg := lbSession(t, dl, down.admin)
	chain, err := dl.ChainLoadBalancer(as(dres.Token), &pb.ChainLoadBalancerRequest{LbId: dres.LbId, EjfatUri: ures.EjfatUri,
		IpFamily: pb.IpFamily_IPV4, Weight: 2, MinFactor: 0.5, MaxFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	// down's receiver reports; the chain's worker on up takes the
	// aggregate within a few of the 100 ms reports.
	if _, err := dl.SendState(as(dreg.Token), &pb.SendStateRequest{LbId: dres.LbId, SessionId: dreg.SessionId, FillPercent: 0.5,
		ControlSignal: 0.25, IsReady: true, TotalBytesRecv: 1234}); err != nil {
		t.Fatal(err)
	}
	var w *pb.WorkerStatus
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := ul.LoadBalancerStatus(as(ures.Token), &pb.LoadBalancerStatusRequest{LbId: ures.LbId})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Workers) == 1 && st.Workers[0].TotalBytesRecv == 1234 {
			w = st.Workers[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("up's workers %v: no aggregate state from down", st.Workers)
		}
	}
	if w.Name != "chain-"+dres.LbId || !w.KeepLbHeader || w.IpAddress != dres.DataIpv4Address ||
		w.UdpPort != dres.DataMinPort || w.MinFactor != 0.5 || w.MaxFactor != 3 || w.FillPercent != 0.5 || w.ControlSignal != 0.25 {
		t.Errorf("the chain's worker upstream: %v", w)
	}

	g, err := dl.GetChainGraph(as(dres.Token), &pb.GetChainGraphRequest{LbId: dres.LbId})
	if err != nil || g.CycleDetected || len(g.Edges) != 1 {
		t.Fatalf("chain graph: %v, %v", g, err)
	}
	if e := g.Edges[0]; e.UpstreamLbId != ures.LbId || e.DownstreamLbId != dres.LbId || e.ChainId != chain.ChainId ||
		e.UpstreamDataIpv4 != ures.DataIpv4Address || e.DownstreamDataIpv6 != dres.DataIpv6Address {
		t.Errorf("edge %v", e)
	}
	// up → down would close a loop: down's graph walk comes back to up.
	_, err = ul.ChainLoadBalancer(as(ures.Token), &pb.ChainLoadBalancerRequest{LbId: ures.LbId, EjfatUri: dres.EjfatUri,
		IpFamily: pb.IpFamily_IPV4, Weight: 1})
	wantCode(t, "a chain back from up to down", err, codes.FailedPrecondition)

	if _, err := dl.UnchainLoadBalancer(as(dres.Token), &pb.UnchainLoadBalancerRequest{LbId: dres.LbId, ChainId: chain.ChainId}); err != nil {
		t.Fatal(err)
	}
	if st, _ := ul.LoadBalancerStatus(as(ures.Token), &pb.LoadBalancerStatusRequest{LbId: ures.LbId}); len(st.GetWorkers()) != 0 {
		t.Errorf("up's workers after Unchain: %v", st.GetWorkers())
	}
	if g, _ := dl.GetChainGraph(as(dres.Token), &pb.GetChainGraphRequest{LbId: dres.LbId}); len(g.GetEdges()) != 0 {
		t.Errorf("edges after Unchain: %v", g.GetEdges())
	}

	// Free deregisters the chains upstream too.
	if _, err := dl.ChainLoadBalancer(as(dres.Token), &pb.ChainLoadBalancerRequest{LbId: dres.LbId, EjfatUri: ures.EjfatUri,
		IpFamily: pb.IpFamily_IPV6, Weight: 1}); err != nil {
		t.Fatal(err)
	}
	st, _ := ul.LoadBalancerStatus(as(ures.Token), &pb.LoadBalancerStatusRequest{LbId: ures.LbId})
	if len(st.GetWorkers()) != 1 || st.Workers[0].IpAddress != dres.DataIpv6Address {
		t.Errorf("up's workers after an IPv6 chain: %v", st.GetWorkers())
	}
	if _, err := dl.FreeLoadBalancer(as(down.admin), &pb.FreeLoadBalancerRequest{LbId: dres.LbId}); err != nil {
		t.Fatal(err)
	}
	if st, _ := ul.LoadBalancerStatus(as(ures.Token), &pb.LoadBalancerStatusRequest{LbId: ures.LbId}); len(st.GetWorkers()) != 0 {
		t.Errorf("up's workers after down's Free: %v", st.GetWorkers())
	}
}
