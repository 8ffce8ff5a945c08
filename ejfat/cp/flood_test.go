package cp_test

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/cptest"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
)

var floodFor = flag.Duration("cp-flood", 3*time.Second, "how long TestWALBoundedUnderFlood floods the CP (the issue's: 30s)")

// TestWALBoundedUnderFlood floods a CP for -cp-flood with valid sync
// datagrams from the reservations' sender, as fast as 4 senders can, to
// both instances, and with SendState calls from 16 sessions back to back,
// and samples the WAL file's size every 10 ms: it must stay under 256 MB
// (issue 24: 263 MB → 2.1 GB in 30 s, a transaction per sync sample).
// With the truncation threshold at 1 MB, the WAL must come back under it
// after passing it. It reports what it sent and the largest WAL.
func TestWALBoundedUnderFlood(t *testing.T) {
	for _, limit := range []int64{0, 1 << 20} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			if limit != 0 {
				defer cp.SetWALLimit(limit)()
			}
			flood(t, limit)
		})
	}
}

func flood(t *testing.T, limit int64) {
	dir := t.TempDir()
	c := startCPAt(t, cpConfig(), dir)
	lc := client(t, c)
	type lb struct {
		res *pb.ReserveLoadBalancerReply
		ids []string
	}
	var lbs []lb
	for range 2 {
		res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "flood", SenderAddresses: []string{"127.0.0.1"}})
		if err != nil {
			t.Fatal(err)
		}
		ids := cptest.Register(t, lc, as(res.Token), res.LbId, []int{1, 2, 3, 4, 5, 6, 7, 8}, 1, 1, 1, 1, 1, 1, 1, 1)
		lbs = append(lbs, lb{res, ids})
	}
	wal := filepath.Join(dir, "cp.db-wal")
	var datagrams, states atomic.Int64
	var maxWAL, overLimit, backUnder int64
	deadline := time.Now().Add(*floodFor)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			var conns []net.Conn
			for _, l := range lbs {
				conn, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", l.res.SyncUdpPort))
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				conns = append(conns, conn)
			}
			for n := uint64(0); time.Now().Before(deadline); n++ {
				for _, conn := range conns {
					if _, err := conn.Write(cptest.SyncMessage(uint32(i), n, 1_000_000, time.Now())); err == nil {
						datagrams.Add(1)
					}
				}
			}
		})
	}
	for _, l := range lbs {
		for _, id := range l.ids {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					if _, err := lc.SendState(as(l.res.Token), &pb.SendStateRequest{LbId: l.res.LbId, SessionId: id, IsReady: true}); err != nil {
						t.Error(err)
						return
					}
					states.Add(1)
				}
			})
		}
	}
	for time.Now().Before(deadline) {
		if fi, err := os.Stat(wal); err == nil {
			maxWAL = max(maxWAL, fi.Size())
			if limit != 0 && fi.Size() > limit {
				overLimit++
			} else if limit != 0 && overLimit > 0 && fi.Size() < limit {
				backUnder++
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("%v: %d sync datagrams and %d SendState calls; the WAL at most %.1f MB", *floodFor, datagrams.Load(), states.Load(), float64(maxWAL)/(1<<20))
	if maxWAL >= 256<<20 {
		t.Errorf("the WAL grew to %d MB, want under 256 MB", maxWAL>>20)
	}
	if limit != 0 && (overLimit == 0 || backUnder == 0) {
		t.Errorf("the WAL was over %d bytes in %d samples and back under it in %d: want both", limit, overLimit, backUnder)
	}
}
