// Package cptest helps test a control plane through its gRPC API.
package cptest

import (
	"context"
	"fmt"
	"testing"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
)

// Register registers one session per weight on LB lb, session i receiving
// on 127.0.0.1 at ports[i] (one port), and returns their session IDs.
func Register(t testing.TB, lc pb.LoadBalancerClient, ctx context.Context, lb string, ports []int, weights ...float32) []string {
	t.Helper()
	var ids []string
	for i, w := range weights {
		reg, err := lc.Register(ctx, &pb.RegisterRequest{LbId: lb, Name: fmt.Sprint("r", i), Weight: w,
			IpAddress: "127.0.0.1", UdpPort: uint32(ports[i]), PortRange: pb.PortRange_PORT_RANGE_1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, reg.SessionId)
	}
	return ids
}
