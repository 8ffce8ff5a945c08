package cp

import (
	"context"
	"errors"
	"math"
	"net/netip"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// storeErr turns a store error into a gRPC status.
func storeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, ErrNoInstance):
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

func lbPerm(lbID string, level pb.PermissionType) Permission {
	return Permission{Resource: pb.ResourceType_LOAD_BALANCER, ID: lbID, Level: level}
}

// reservation checks the caller holds level on LB lbID and returns it.
func (c *CP) reservation(ctx context.Context, lbID string, level pb.PermissionType) (Reservation, error) {
	if err := c.require(ctx, lbPerm(lbID, level)); err != nil {
		return Reservation{}, err
	}
	id, err := strconv.ParseInt(lbID, 10, 64)
	if err != nil {
		return Reservation{}, invalid("lbId %q is not a number", lbID)
	}
	r, ok := c.store.Reservation(id)
	if !ok || r.Expired(c.cfg.Now()) {
		return Reservation{}, status.Errorf(codes.NotFound, "no load balancer %s", lbID)
	}
	return r, nil
}

// session checks the caller holds UPDATE on session sessionID of LB lbID
// (directly, or on the LB named) and returns it. A session that is not on
// that LB is NotFound.
func (c *CP) session(ctx context.Context, lbID, sessionID string) (Session, error) {
	need := Permission{Resource: pb.ResourceType_SESSION, ID: sessionID, Level: pb.PermissionType_UPDATE}
	if !c.holds(caller(ctx), lbPerm(lbID, pb.PermissionType_UPDATE)) {
		if err := c.require(ctx, need); err != nil {
			return Session{}, err
		}
	}
	id, err := strconv.ParseInt(sessionID, 10, 64)
	if err != nil {
		return Session{}, invalid("sessionId %q is not a number", sessionID)
	}
	x, ok := c.store.Session(id)
	if !ok || strconv.FormatInt(x.Reservation, 10) != lbID {
		return Session{}, status.Errorf(codes.NotFound, "no session %s on load balancer %s", sessionID, lbID)
	}
	return x, nil
}

// until converts a reservation end: nil or the Unix epoch mean none; a time
// already past is refused.
func (c *CP) until(ts *timestamppb.Timestamp) (time.Time, error) {
	if ts == nil || (ts.Seconds == 0 && ts.Nanos == 0) {
		return time.Time{}, nil
	}
	if err := ts.CheckValid(); err != nil {
		return time.Time{}, invalid("until: %v", err)
	}
	t := ts.AsTime()
	if !t.After(c.cfg.Now()) {
		return time.Time{}, invalid("until %s is not in the future", t.Format(time.RFC3339))
	}
	return t, nil
}

func parseAddrs(addrs []string) error {
	for _, a := range addrs {
		if _, err := netip.ParseAddr(a); err != nil {
			return invalid("sender address %q: %v", a, err)
		}
	}
	return nil
}

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// reply describes reservation r as Reserve and GetLoadBalancer answer:
// both data addresses whatever r's ipFamily, as udplbd2 does.
func (c *CP) reply(r Reservation, token string) *pb.ReserveLoadBalancerReply {
	a := c.addrs
	return &pb.ReserveLoadBalancerReply{
		Token: token, LbId: strconv.FormatInt(r.ID, 10), FpgaLbId: uint32(r.Instance), Strategy: r.Strategy,
		SyncIpv4Address: a.sync4, SyncIpv6Address: a.sync6, SyncUdpPort: c.syncPort(r.Instance),
		DataIpv4Address: a.data4, DataIpv6Address: a.data6, DataMinPort: c.cfg.DataPortMin, DataMaxPort: c.cfg.DataPortMax,
	}
}

// ReserveLoadBalancer reserves a free LB instance.
func (c *CP) ReserveLoadBalancer(ctx context.Context, req *pb.ReserveLoadBalancerRequest) (*pb.ReserveLoadBalancerReply, error) {
	if err := c.require(ctx, Permission{Resource: pb.ResourceType_ALL, Level: pb.PermissionType_RESERVE}); err != nil {
		return nil, err
	}
	strategy := req.Strategy
	switch strategy {
	case "":
		strategy = "dynamic"
	case "dynamic", "static", "explicit":
	default:
		return nil, invalid("strategy %q: want dynamic, static or explicit", req.Strategy)
	}
	if _, ok := pb.IpFamily_name[int32(req.IpFamily)]; !ok {
		return nil, invalid("ipFamily %d", req.IpFamily)
	}
	until, err := c.until(req.Until)
	if err != nil {
		return nil, err
	}
	if err := parseAddrs(req.SenderAddresses); err != nil {
		return nil, err
	}
	r := Reservation{Name: req.Name, Strategy: strategy, IPFamily: req.IpFamily, Created: c.cfg.Now(), Until: until,
		Senders: req.SenderAddresses}
	r, token, err := c.store.Reserve(r, c.cfg.Instances, caller(ctx).ID, lbPerm("", pb.PermissionType_UPDATE))
	if err != nil {
		return nil, storeErr(err)
	}
	return c.reply(r, token), nil
}

// GetLoadBalancer describes a reservation (without a token).
func (c *CP) GetLoadBalancer(ctx context.Context, req *pb.GetLoadBalancerRequest) (*pb.ReserveLoadBalancerReply, error) {
	r, err := c.reservation(ctx, req.LbId, pb.PermissionType_READ_ONLY)
	if err != nil {
		return nil, err
	}
	return c.reply(r, ""), nil
}

// LoadBalancerStatus reports a reservation's epoch and workers.
func (c *CP) LoadBalancerStatus(ctx context.Context, req *pb.LoadBalancerStatusRequest) (*pb.LoadBalancerStatusReply, error) {
	r, err := c.reservation(ctx, req.LbId, pb.PermissionType_READ_ONLY)
	if err != nil {
		return nil, err
	}
	return c.status(r), nil
}

func (c *CP) status(r Reservation) *pb.LoadBalancerStatusReply {
	rep := &pb.LoadBalancerStatusReply{Timestamp: timestamppb.New(c.cfg.Now()), SenderAddresses: r.Senders,
		ExpiresAt: ts(r.Until), SlotResolution: Slots}
	var cal []int64
	if es := c.store.Epochs(r.ID); len(es) > 0 {
		cur := es[len(es)-1]
		rep.CurrentEpoch, rep.CurrentPredictedEventNumber, cal = cur.Number, cur.Boundary, cur.Calendar
	}
	for _, x := range c.store.Sessions(r.ID) {
		rep.Workers = append(rep.Workers, worker(x, cal))
	}
	return rep
}

// worker describes session x with its slots in calendar cal.
func worker(x Session, cal []int64) *pb.WorkerStatus {
	w := &pb.WorkerStatus{Name: x.Name, IpAddress: x.IP, UdpPort: x.Port, PortRange: x.PortRange,
		MinFactor: x.MinFactor, MaxFactor: x.MaxFactor, KeepLbHeader: x.KeepLBHeader, SlotDemands: slotRanges(x.Demands)}
	if st := x.State; st != nil {
		w.FillPercent, w.ControlSignal, w.LastUpdated = st.Fill, st.Control, timestamppb.New(st.Time)
		w.TotalEventsRecv, w.TotalEventsReassembled, w.TotalEventsReassemblyErr = st.EventsRecv, st.Reassembled, st.ReassemblyErr
		w.TotalEventsDequeued, w.TotalEventEnqueueErr = st.Dequeued, st.EnqueueErr
		w.TotalBytesRecv, w.TotalPacketsRecv = st.Bytes, st.Packets
	}
	w.Slots = slotRanges(ranges(cal, x.ID))
	for _, s := range w.Slots {
		w.SlotsAssigned += s.Length
	}
	return w
}

// ranges lists the runs of slots in cal that belong to session id.
func ranges(cal []int64, id int64) []SlotRange {
	var out []SlotRange
	for i, s := range cal {
		switch {
		case s != id:
		case len(out) > 0 && int(out[len(out)-1].Index)+int(out[len(out)-1].Length) == i:
			out[len(out)-1].Length++
		default:
			out = append(out, SlotRange{Index: int32(i), Length: 1})
		}
	}
	return out
}

func slotRanges(rs []SlotRange) []*pb.SlotRange {
	out := make([]*pb.SlotRange, len(rs))
	for i, r := range rs {
		out[i] = &pb.SlotRange{Index: r.Index, Length: r.Length}
	}
	return out
}

// FreeLoadBalancer ends a reservation.
func (c *CP) FreeLoadBalancer(ctx context.Context, req *pb.FreeLoadBalancerRequest) (*pb.FreeLoadBalancerReply, error) {
	r, err := c.reservation(ctx, req.LbId, pb.PermissionType_RESERVE)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.program()
	return &pb.FreeLoadBalancerReply{}, storeErr(c.store.Free(r.ID, c.cfg.Now()))
}

// ResetLoadBalancer forgets what the request selects.
func (c *CP) ResetLoadBalancer(ctx context.Context, req *pb.ResetLoadBalancerRequest) (*pb.ResetLoadBalancerReply, error) {
	r, err := c.reservation(ctx, req.LbId, pb.PermissionType_UPDATE)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.program()
	if err := c.store.Reset(r.ID, req.Sync, req.Epochs, req.Senders, req.Workers); err != nil {
		return nil, storeErr(err)
	}
	return &pb.ResetLoadBalancerReply{Sync: req.Sync, Epochs: req.Epochs, Senders: req.Senders, Workers: req.Workers}, nil
}

// ExtendReservation moves a reservation's end.
func (c *CP) ExtendReservation(ctx context.Context, req *pb.ExtendReservationRequest) (*pb.ExtendReservationReply, error) {
	r, err := c.reservation(ctx, req.LbId, pb.PermissionType_RESERVE)
	if err != nil {
		return nil, err
	}
	until, err := c.until(req.Until)
	if err != nil {
		return nil, err
	}
	if err := c.store.SetUntil(r.ID, until); err != nil {
		return nil, storeErr(err)
	}
	return &pb.ExtendReservationReply{Until: ts(until)}, nil
}

// AddSenders lets more sender addresses through the LB.
func (c *CP) AddSenders(ctx context.Context, req *pb.AddSendersRequest) (*pb.AddSendersReply, error) {
	return &pb.AddSendersReply{}, c.changeSenders(ctx, req.LbId, req.SenderAddresses, c.store.AddSenders)
}

// RemoveSenders stops sender addresses at the LB.
func (c *CP) RemoveSenders(ctx context.Context, req *pb.RemoveSendersRequest) (*pb.RemoveSendersReply, error) {
	return &pb.RemoveSendersReply{}, c.changeSenders(ctx, req.LbId, req.SenderAddresses, c.store.RemoveSenders)
}

// changeSenders checks an Add/RemoveSenders call, stores the change and
// programs the data plane.
func (c *CP) changeSenders(ctx context.Context, lbID string, addrs []string, change func(int64, []string) error) error {
	r, err := c.senders(ctx, lbID, addrs)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.program()
	return storeErr(change(r.ID, addrs))
}

// senders checks an Add/RemoveSenders call.
func (c *CP) senders(ctx context.Context, lbID string, addrs []string) (Reservation, error) {
	r, err := c.reservation(ctx, lbID, pb.PermissionType_UPDATE)
	if err != nil {
		return Reservation{}, err
	}
	return r, parseAddrs(addrs)
}

// Register adds a receiver session to an LB.
func (c *CP) Register(ctx context.Context, req *pb.RegisterRequest) (*pb.RegisterReply, error) {
	r, err := c.reservation(ctx, req.LbId, pb.PermissionType_REGISTER)
	if err != nil {
		return nil, err
	}
	if err := checkRegister(req); err != nil {
		return nil, err
	}
	demands, err := demands(req.SlotDemands)
	if err != nil {
		return nil, err
	}
	x := Session{Reservation: r.ID, Name: req.Name, Weight: req.Weight, IP: req.IpAddress, Port: req.UdpPort,
		PortRange: req.PortRange, MinFactor: req.MinFactor, MaxFactor: req.MaxFactor, KeepLBHeader: req.KeepLbHeader,
		Demands: demands, Created: c.cfg.Now()}
	x, token, err := c.store.Register(x, caller(ctx).ID,
		Permission{Resource: pb.ResourceType_SESSION, Level: pb.PermissionType_UPDATE})
	if err != nil {
		return nil, storeErr(err)
	}
	return &pb.RegisterReply{Token: token, SessionId: strconv.FormatInt(x.ID, 10)}, nil
}

func checkRegister(req *pb.RegisterRequest) error {
	if _, err := netip.ParseAddr(req.IpAddress); err != nil {
		return invalid("ipAddress %q: %v", req.IpAddress, err)
	}
	if req.PortRange < 0 || req.PortRange > pb.PortRange_PORT_RANGE_16384 {
		return invalid("portRange %d: want 0..14", req.PortRange)
	}
	if last := uint64(req.UdpPort) + 1<<req.PortRange - 1; req.UdpPort == 0 || last > math.MaxUint16 {
		return invalid("udpPort %d with %d ports does not fit 1..65535", req.UdpPort, 1<<req.PortRange)
	}
	if !finite(req.Weight) || req.Weight <= 0 {
		return invalid("weight %v: want > 0", req.Weight)
	}
	if !finite(req.MinFactor) || !finite(req.MaxFactor) || req.MinFactor < 0 || req.MaxFactor < 0 ||
		(req.MaxFactor != 0 && req.MaxFactor < req.MinFactor) {
		return invalid("minFactor %v, maxFactor %v: want 0 <= min <= max (max 0: no maximum)", req.MinFactor, req.MaxFactor)
	}
	return nil
}

func finite(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// demands checks slot ranges against the calendar.
func demands(rs []*pb.SlotRange) ([]SlotRange, error) {
	out := make([]SlotRange, len(rs))
	for i, r := range rs {
		if r.Index < -1 || r.Length > Slots || (r.Index >= 0 && int(r.Index)+int(r.Length) > Slots) {
			return nil, invalid("slot range %d+%d outside the %d slots", r.Index, r.Length, Slots)
		}
		out[i] = SlotRange{Index: r.Index, Length: r.Length}
	}
	return out, nil
}

// SetSlotDemands replaces sessions' slot demands.
func (c *CP) SetSlotDemands(ctx context.Context, req *pb.SetSlotDemandsRequest) (*pb.SetSlotDemandsReply, error) {
	r, err := c.reservation(ctx, req.LbId, pb.PermissionType_UPDATE)
	if err != nil {
		return nil, err
	}
	all := map[int64][]SlotRange{}
	for _, sc := range req.SlotConstraints {
		id, err := strconv.ParseInt(sc.SessionId, 10, 64)
		if x, ok := c.store.Session(id); err != nil || !ok || x.Reservation != r.ID {
			return nil, status.Errorf(codes.NotFound, "no session %s on load balancer %s", sc.SessionId, req.LbId)
		}
		if all[id], err = demands(sc.Slots); err != nil {
			return nil, err
		}
	}
	return &pb.SetSlotDemandsReply{}, storeErr(c.store.SetDemands(all))
}

// Deregister removes a session.
func (c *CP) Deregister(ctx context.Context, req *pb.DeregisterRequest) (*pb.DeregisterReply, error) {
	x, err := c.session(ctx, req.LbId, req.SessionId)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.program()
	return &pb.DeregisterReply{}, storeErr(c.store.Deregister(x.ID))
}

// SendState records a receiver's state.
func (c *CP) SendState(ctx context.Context, req *pb.SendStateRequest) (*pb.SendStateReply, error) {
	x, err := c.session(ctx, req.LbId, req.SessionId)
	if err != nil {
		return nil, err
	}
	if !(req.FillPercent >= 0 && req.FillPercent <= 1) {
		return nil, invalid("fillPercent %v outside 0..1", req.FillPercent)
	}
	if !finite(req.ControlSignal) {
		return nil, invalid("controlSignal %v is not finite", req.ControlSignal)
	}
	st := State{Time: c.cfg.Now(), Fill: req.FillPercent, Control: req.ControlSignal, Ready: req.IsReady,
		EventsRecv: req.TotalEventsRecv, Reassembled: req.TotalEventsReassembled, ReassemblyErr: req.TotalEventsReassemblyErr,
		Dequeued: req.TotalEventsDequeued, EnqueueErr: req.TotalEventEnqueueErr, Bytes: req.TotalBytesRecv, Packets: req.TotalPacketsRecv}
	return &pb.SendStateReply{}, storeErr(c.store.AddState(x.ID, st))
}

// Overview describes every reservation.
func (c *CP) Overview(ctx context.Context, _ *pb.OverviewRequest) (*pb.OverviewReply, error) {
	if err := c.require(ctx, Permission{Resource: pb.ResourceType_ALL, Level: pb.PermissionType_READ_ONLY}); err != nil {
		return nil, err
	}
	rep := &pb.OverviewReply{}
	now := c.cfg.Now()
	for _, r := range c.store.Reservations() {
		if !r.Expired(now) {
			rep.LoadBalancers = append(rep.LoadBalancers, &pb.Overview{Name: r.Name, Reservation: c.reply(r, ""), Status: c.status(r)})
		}
	}
	return rep, nil
}

// Version reports the build.
func (c *CP) Version(context.Context, *pb.VersionRequest) (*pb.VersionReply, error) {
	rep := &pb.VersionReply{Commit: c.cfg.Commit, CompatTag: "nsc"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rep.Build = bi.GoVersion + " " + bi.Main.Version
	}
	return rep, nil
}
