// Package cptest helps test a control plane through its gRPC API.
package cptest

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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

// SyncMessage is an EJFAT sync message (ejfat-reassembly.md §2).
func SyncMessage(source uint32, event uint64, rate uint32, clock time.Time) []byte {
	b := []byte{'L', 'C', 2, 0}
	b = binary.BigEndian.AppendUint32(b, source)
	b = binary.BigEndian.AppendUint64(b, event)
	b = binary.BigEndian.AppendUint32(b, rate)
	return binary.BigEndian.AppendUint64(b, uint64(clock.UnixNano()))
}

// DiffLines are the lines of a not in b (-) and of b not in a (+).
func DiffLines(a, b []string) string {
	var out strings.Builder
	for _, l := range a {
		if !slices.Contains(b, l) {
			fmt.Fprintln(&out, "-", l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			fmt.Fprintln(&out, "+", l)
		}
	}
	return out.String()
}
