package cp_test

import (
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
)

// TestReplyAddressesNeverEmpty: every data and sync address of Reserve,
// GetLoadBalancer and Overview is an address a client can parse (E2SAR's
// lbadm --overview aborts on an empty IPv6 one), whatever is configured,
// and an unconfigured one is derived from a configured one.
func TestReplyAddressesNeverEmpty(t *testing.T) {
	for _, tc := range []struct {
		name                string
		data4, data6, sync6 string
		want                [4]string // sync4, sync6, data4, data6
		family              pb.IpFamily
		viaIPv6             bool
	}{
		{name: "nothing configured", family: pb.IpFamily_IPV4,
			want: [4]string{"127.0.0.1", "::ffff:127.0.0.1", "127.0.0.1", "::ffff:127.0.0.1"}, viaIPv6: true},
		{name: "IPv4 only", data4: "10.232.0.1", family: pb.IpFamily_IPV4,
			want: [4]string{"127.0.0.1", "::ffff:127.0.0.1", "10.232.0.1", "::ffff:10.232.0.1"}},
		{name: "a mapped IPv6 data address only", data6: "::ffff:10.232.0.2", family: pb.IpFamily_IPV6,
			want: [4]string{"127.0.0.1", "::ffff:127.0.0.1", "10.232.0.2", "::ffff:10.232.0.2"}},
		{name: "all configured", data4: "10.232.0.1", data6: "2001:db8::1", sync6: "::1", family: pb.IpFamily_DUAL_STACK,
			want: [4]string{"127.0.0.1", "::1", "10.232.0.1", "2001:db8::1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCP(t, cp.Config{Instances: 1, DataIPv4: tc.data4, DataIPv6: tc.data6, SyncIPv6: tc.sync6})
			lc := client(t, c)
			res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "a", IpFamily: tc.family,
				SenderAddresses: []string{"127.0.0.1"}}) // the sync message's sender
			if err != nil {
				t.Fatal(err)
			}
			got, err := lc.GetLoadBalancer(as(c.admin), &pb.GetLoadBalancerRequest{LbId: res.LbId})
			if err != nil {
				t.Fatal(err)
			}
			ov, err := lc.Overview(as(c.admin), &pb.OverviewRequest{})
			if err != nil || len(ov.LoadBalancers) != 1 {
				t.Fatalf("overview %v, %v", ov, err)
			}
			for what, r := range map[string]*pb.ReserveLoadBalancerReply{"reserve": res, "get": got,
				"overview": ov.LoadBalancers[0].Reservation} {
				addrs := [4]string{r.SyncIpv4Address, r.SyncIpv6Address, r.DataIpv4Address, r.DataIpv6Address}
				for i, a := range addrs {
					if _, err := netip.ParseAddr(a); err != nil {
						t.Errorf("%s: address %d %q: %v", what, i, a, err)
					}
				}
				if addrs != tc.want {
					t.Errorf("%s: addresses %q, want %q", what, addrs, tc.want)
				}
			}
			if tc.viaIPv6 {
				// The derived IPv6 sync address reaches the IPv4 sync
				// server from an IPv6 socket.
				conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6unspecified})
				if err != nil {
					t.Skipf("no dual-stack UDP socket: %v", err)
				}
				defer conn.Close()
				to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(res.SyncIpv6Address), uint16(res.SyncUdpPort)))
				msg := []byte{'L', 'C', 2, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0x0f, 0x42, 0x40, 0, 0, 0, 0, 0, 0, 0, 1}
				if _, err := conn.WriteToUDP(msg, to); err != nil {
					t.Fatal(err)
				}
				id, _ := strconv.ParseInt(res.LbId, 10, 64)
				deadline := time.Now().Add(5 * time.Second)
				for !hasSource(c.store.Sync(id), 9) {
					if time.Now().After(deadline) {
						t.Fatalf("the sync message to %v never arrived", to)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
}

func hasSource(xs []cp.SyncSample, src uint32) bool {
	for _, x := range xs {
		if x.Source == src {
			return true
		}
	}
	return false
}
