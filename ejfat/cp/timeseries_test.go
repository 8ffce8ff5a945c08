package cp_test

import (
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/cptest"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestTimeseriesSelectors: udplbd2's selectors — "*" is everything the
// token may read, "/lb/*" every reservation's, a session token reads its
// own session's series alone — and since is echoed.
func TestTimeseriesSelectors(t *testing.T) {
	clk, c, lc := clockedCP(t)
	res, reg := lbSession(t, lc, c.admin)
	// The sync message's sender is one of the reservation's.
	if _, err := lc.AddSenders(as(res.Token), &pb.AddSendersRequest{LbId: res.LbId, SenderAddresses: []string{"127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", res.SyncUdpPort))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(cptest.SyncMessage(1, 5000, 1000, clk.Now())); err != nil {
		t.Fatal(err)
	}
	id := int64(0)
	fmt.Sscan(res.LbId, &id)
	for deadline := time.Now().Add(5 * time.Second); len(c.store.Sync(id)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sync message never arrived")
		}
	}
	since := timestamppb.New(clk.Now().Add(-time.Hour))
	names := func(token string, sel ...string) []string {
		t.Helper()
		rep, err := lc.Timeseries(as(token), &pb.TimeseriesRequest{SeriesSelector: sel, Since: since})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Since.AsTime().Equal(since.AsTime()) {
			t.Errorf("since %v, want the request's %v", rep.Since.AsTime(), since.AsTime())
		}
		var out []string
		for _, s := range rep.Timeseries {
			out = append(out, s.Name)
		}
		return out
	}
	lb, sess := "/lb/"+res.LbId+"/", "/lb/"+res.LbId+"/session/"+reg.SessionId+"/"
	all := names(c.admin, "*")
	for _, want := range []string{lb + "event_number", lb + "avg_event_rate_hz", sess + "is_ready", sess + "fill_percent"} {
		if !slices.Contains(all, want) {
			t.Errorf("%q lacks %s: %q", "*", want, all)
		}
	}
	if got := names(c.admin, "/lb/*"); !slices.Equal(got, all) {
		t.Errorf("/lb/* %q, want what * gives, %q", got, all)
	}
	if got := names(c.admin, "/lb/*/session/*/is_ready"); !slices.Equal(got, []string{sess + "is_ready"}) {
		t.Errorf("/lb/*/session/*/is_ready: %q", got)
	}
	mine := names(reg.Token, "*")
	if len(mine) != 10 || slices.Contains(mine, lb+"event_number") {
		t.Errorf("a session token's *: %q, want its 10 session series alone", mine)
	}
}
