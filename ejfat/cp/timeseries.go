package cp

import (
	"context"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// sessionSeries are udplbd2's per-session series, each a float taken from
// a stored state: /lb/<lbId>/session/<sessionId>/<name>.
var sessionSeries = []struct {
	name  string
	value func(State) float32
}{
	{"fill_percent", func(s State) float32 { return s.Fill }},
	{"control_signal", func(s State) float32 { return s.Control }},
	{"is_ready", func(s State) float32 {
		if s.Ready {
			return 1
		}
		return 0
	}},
	{"total_events_recv", func(s State) float32 { return float32(s.EventsRecv) }},
	{"total_events_reassembled", func(s State) float32 { return float32(s.Reassembled) }},
	{"total_events_reassembly_err", func(s State) float32 { return float32(s.ReassemblyErr) }},
	{"total_events_dequeued", func(s State) float32 { return float32(s.Dequeued) }},
	{"total_event_enqueue_err", func(s State) float32 { return float32(s.EnqueueErr) }},
	{"total_bytes_recv", func(s State) float32 { return float32(s.Bytes) }},
	{"total_packets_recv", func(s State) float32 { return float32(s.Packets) }},
}

// maxSamples bounds the samples one Timeseries call answers, so that no
// request makes the CP build a reply of unbounded size.
var maxSamples = 100_000

// defaultSince is how far back a Timeseries without since looks, as
// udplbd2.
const defaultSince = time.Minute

// selects says whether selector names series name: "*" alone everything,
// a final "/*" everything below, other "*" one path element.
func selects(selector, name string) bool {
	if selector == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(selector, "/*"); ok && strings.HasPrefix(name, prefix+"/") {
		return true
	}
	ok, _ := path.Match(selector, name)
	return ok
}

// Timeseries answers the series the selectors name that the caller may
// read: per session its stored states, per reservation its sync samples
// (/lb/<lbId>/event_number, avg_event_rate_hz) and epoch boundaries
// (/lb/<lbId>/epoch/boundary_event). As in udplbd2, selectors of series
// the caller may not read select nothing, every value is a float, and the
// reply's since is the request's (a minute ago when absent).
func (c *CP) Timeseries(ctx context.Context, req *pb.TimeseriesRequest) (*pb.TimeseriesResponse, error) {
	if err := known(ctx); err != nil {
		return nil, err
	}
	since := c.cfg.Now().Add(-defaultSince)
	if req.Since != nil {
		if err := req.Since.CheckValid(); err != nil {
			return nil, invalid("Invalid since timestamp: %v", err)
		}
		since = req.Since.AsTime()
	}
	q := seriesQuery{c: c, selectors: req.SeriesSelector, since: since, budget: maxSamples}
	for _, r := range c.store.Reservations() {
		if err := q.reservation(ctx, r); err != nil {
			return nil, err
		}
	}
	return &pb.TimeseriesResponse{Timeseries: q.out, Since: timestamppb.New(since)}, nil
}

// seriesQuery collects one Timeseries reply.
type seriesQuery struct {
	c         *CP
	selectors []string
	since     time.Time
	budget    int // samples left
	out       []*pb.Timeseries
}

// wants says whether a selector names series name.
func (q *seriesQuery) wants(name string) bool {
	for _, sel := range q.selectors {
		if selects(strings.TrimSpace(sel), name) {
			return true
		}
	}
	return false
}

// add appends series name with samples (ms, value), or fails when the
// reply would hold more than maxSamples.
func (q *seriesQuery) add(name string, ms []int64, values []float32) error {
	if q.budget -= len(ms); q.budget < 0 {
		return status.Errorf(codes.ResourceExhausted,
			"more than %d samples: select fewer series or a later since", maxSamples)
	}
	f := &pb.FloatTimeseries{}
	for i := range ms {
		f.Data = append(f.Data, &pb.FloatSample{Timestamp: ms[i], Value: values[i]})
	}
	q.out = append(q.out, &pb.Timeseries{Name: name, Timeseries: &pb.Timeseries_FloatSamples{FloatSamples: f}})
	return nil
}

// reservation adds r's series the caller may read.
func (q *seriesQuery) reservation(ctx context.Context, r Reservation) error {
	lb := strconv.FormatInt(r.ID, 10)
	prefix := "/lb/" + lb + "/"
	if q.c.holds(caller(ctx), resPerm(lb, pb.PermissionType_READ_ONLY)) {
		var ms []int64
		var event, rate []float32
		for _, x := range q.c.store.Sync(r.ID) {
			if !x.Time.Before(q.since) {
				ms, event, rate = append(ms, x.Time.UnixMilli()), append(event, float32(x.Event)), append(rate, float32(x.Rate))
			}
		}
		var ems []int64
		var boundary []float32
		for _, e := range q.c.store.Epochs(r.ID) {
			if !e.Created.Before(q.since) {
				ems, boundary = append(ems, e.Created.UnixMilli()), append(boundary, float32(e.Boundary))
			}
		}
		for _, s := range []struct {
			name   string
			ms     []int64
			values []float32
		}{{"event_number", ms, event}, {"avg_event_rate_hz", ms, rate}, {"epoch/boundary_event", ems, boundary}} {
			if q.wants(prefix+s.name) && len(s.ms) > 0 {
				if err := q.add(prefix+s.name, s.ms, s.values); err != nil {
					return err
				}
			}
		}
	}
	for _, x := range q.c.store.Sessions(r.ID) {
		sid := strconv.FormatInt(x.ID, 10)
		if q.c.holds(caller(ctx), Permission{Resource: pb.ResourceType_SESSION, ID: sid, Level: pb.PermissionType_READ_ONLY}) {
			if err := q.session(prefix+"session/"+sid+"/", x); err != nil {
				return err
			}
		}
	}
	return nil
}

// session adds session x's selected series.
func (q *seriesQuery) session(prefix string, x Session) error {
	var want []int
	for i, s := range sessionSeries {
		if q.wants(prefix + s.name) {
			want = append(want, i)
		}
	}
	if len(want) == 0 {
		return nil
	}
	// States are stored by receipt; a sample's time is the receiver's
	// timestamp when it sent one (udplbd2 keeps only that).
	states, err := q.c.store.States(x.ID, q.since.Add(-time.Millisecond), q.budget/len(want)+1)
	if err != nil {
		return storeErr(err)
	}
	if len(states) == 0 {
		return nil
	}
	ms := make([]int64, len(states))
	for i := range states {
		ms[i] = states[i].Updated().UnixMilli()
	}
	for _, i := range want {
		values := make([]float32, len(states))
		for j, st := range states {
			values[j] = sessionSeries[i].value(st)
		}
		if err := q.add(prefix+sessionSeries[i].name, ms, values); err != nil {
			return err
		}
	}
	return nil
}
