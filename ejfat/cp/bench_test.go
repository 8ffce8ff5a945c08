package cp_test

import (
	"sync/atomic"
	"testing"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
)

// BenchmarkSendState is SendState calls from parallel sessions through
// gRPC on loopback; BenchmarkVersion, the same round trip without token or
// store, is its baseline.
func BenchmarkSendState(b *testing.B) {
	c := startCP(b, cpConfig())
	lc := client(b, c)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{})
	if err != nil {
		b.Fatal(err)
	}
	var regs []*pb.RegisterReply
	for range 64 {
		reg, err := lc.Register(as(res.Token), &pb.RegisterRequest{LbId: res.LbId, Weight: 1, IpAddress: "127.0.0.1", UdpPort: 1})
		if err != nil {
			b.Fatal(err)
		}
		regs = append(regs, reg)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb_ *testing.PB) {
		reg := regs[next.Add(1)%int64(len(regs))]
		ctx := as(reg.Token)
		for pb_.Next() {
			if _, err := lc.SendState(ctx, &pb.SendStateRequest{LbId: res.LbId, SessionId: reg.SessionId, FillPercent: 0.5}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkVersion(b *testing.B) {
	c := startCP(b, cpConfig())
	lc := client(b, c)
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(p *testing.PB) {
		for p.Next() {
			if _, err := lc.Version(as(""), &pb.VersionRequest{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
