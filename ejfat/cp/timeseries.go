package cp

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// series is one per-session metric Timeseries answers: a float or an
// integer taken from each stored state.
type series struct {
	name, unit string
	float      func(State) float32
	integer    func(State) int64
}

var sessionSeries = []series{
	{name: "fillPercent", unit: "ratio", float: func(s State) float32 { return s.Fill }},
	{name: "controlSignal", float: func(s State) float32 { return s.Control }},
	{name: "totalEventsRecv", unit: "events", integer: func(s State) int64 { return s.EventsRecv }},
	{name: "totalEventsReassembled", unit: "events", integer: func(s State) int64 { return s.Reassembled }},
	{name: "totalEventsReassemblyErr", unit: "events", integer: func(s State) int64 { return s.ReassemblyErr }},
	{name: "totalEventsDequeued", unit: "events", integer: func(s State) int64 { return s.Dequeued }},
	{name: "totalEventEnqueueErr", unit: "events", integer: func(s State) int64 { return s.EnqueueErr }},
	{name: "totalBytesRecv", unit: "bytes", integer: func(s State) int64 { return s.Bytes }},
	{name: "totalPacketsRecv", unit: "packets", integer: func(s State) int64 { return s.Packets }},
}

// maxSamples bounds the samples one Timeseries call answers, so that no
// request makes the CP build a reply of unbounded size.
var maxSamples = 100_000

// selects says whether selector names series name: a final "/*" matches
// everything below, other "*" one path element.
func selects(selector, name string) bool {
	if prefix, ok := strings.CutSuffix(selector, "/*"); ok && strings.HasPrefix(name, prefix+"/") {
		return true
	}
	ok, _ := path.Match(selector, name)
	return ok
}

// Timeseries answers stored session states as series named
// /lb/<lbId>/session/<sessionId>/<field>.
func (c *CP) Timeseries(ctx context.Context, req *pb.TimeseriesRequest) (*pb.TimeseriesResponse, error) {
	var since time.Time
	if req.Since != nil {
		since = req.Since.AsTime()
	}
	rep := &pb.TimeseriesResponse{Since: req.Since}
	latest := since
	budget := maxSamples
	for _, sel := range req.SeriesSelector {
		lbID, ok := selectorLB(sel)
		if !ok {
			return nil, invalid("series selector %q: want /lb/<lbId>/...", sel)
		}
		r, err := c.reservation(ctx, lbID, pb.PermissionType_READ_ONLY)
		if err != nil {
			return nil, err
		}
		for _, x := range c.store.Sessions(r.ID) {
			ts, last, err := c.sessionSeries(sel, x, since, &budget)
			if err != nil {
				return nil, err
			}
			rep.Timeseries = append(rep.Timeseries, ts...)
			if last.After(latest) {
				latest = last
			}
		}
	}
	if !latest.IsZero() {
		rep.Since = timestamppb.New(latest)
	}
	return rep, nil
}

func selectorLB(sel string) (string, bool) {
	rest, ok := strings.CutPrefix(sel, "/lb/")
	if !ok {
		return "", false
	}
	id, _, _ := strings.Cut(rest, "/")
	return id, id != "" && !strings.ContainsAny(id, "*?[")
}

// sessionSeries returns session x's series that sel selects, with their
// samples after since, and the newest sample's time. It takes the samples
// from budget, and fails with ResourceExhausted when that is not enough.
func (c *CP) sessionSeries(sel string, x Session, since time.Time, budget *int) ([]*pb.Timeseries, time.Time, error) {
	prefix := fmt.Sprintf("/lb/%d/session/%d/", x.Reservation, x.ID)
	var want []series
	for _, s := range sessionSeries {
		if selects(sel, prefix+s.name) {
			want = append(want, s)
		}
	}
	if len(want) == 0 {
		return nil, time.Time{}, nil
	}
	states, err := c.store.States(x.ID, since, *budget/len(want)+1)
	if err != nil {
		return nil, time.Time{}, storeErr(err)
	}
	if *budget -= len(states) * len(want); *budget < 0 {
		return nil, time.Time{}, status.Errorf(codes.ResourceExhausted,
			"more than %d samples: select fewer series or a later since", maxSamples)
	}
	if len(states) == 0 {
		return nil, time.Time{}, nil
	}
	var out []*pb.Timeseries
	for _, s := range want {
		out = append(out, s.of(prefix+s.name, states))
	}
	return out, states[len(states)-1].Time, nil
}

func (s series) of(name string, states []State) *pb.Timeseries {
	t := &pb.Timeseries{Name: name, Unit: s.unit}
	if s.float != nil {
		f := &pb.FloatTimeseries{}
		for _, st := range states {
			f.Data = append(f.Data, &pb.FloatSample{Timestamp: st.Time.UnixMilli(), Value: s.float(st)})
		}
		t.Timeseries = &pb.Timeseries_FloatSamples{FloatSamples: f}
		return t
	}
	n := &pb.IntegerTimeseries{}
	for _, st := range states {
		n.Data = append(n.Data, &pb.IntegerSample{Timestamp: st.Time.UnixMilli(), Value: s.integer(st)})
	}
	t.Timeseries = &pb.Timeseries_IntegerSamples{IntegerSamples: n}
	return t
}
