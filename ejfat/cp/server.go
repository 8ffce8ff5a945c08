package cp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
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
		return status.Error(codes.ResourceExhausted, "All accessible load balancers are currently reserved")
	case errors.Is(err, ErrLimit):
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

func resPerm(lbID string, level pb.PermissionType) Permission {
	return Permission{Resource: pb.ResourceType_RESERVATION, ID: lbID, Level: level}
}

// reservationID checks lbID is a number, as udplbd2 does before anything
// else.
func reservationID(lbID string) (int64, error) {
	id, err := strconv.ParseInt(lbID, 10, 64)
	if err != nil {
		return 0, invalid("Invalid load balancer ID %q", lbID)
	}
	return id, nil
}

// reservation checks the caller holds level on reservation lbID and
// returns it.
func (c *CP) reservation(ctx context.Context, lbID string, level pb.PermissionType) (Reservation, error) {
	id, err := reservationID(lbID)
	if err != nil {
		return Reservation{}, err
	}
	if err := c.require(ctx, resPerm(lbID, level)); err != nil {
		return Reservation{}, err
	}
	r, ok := c.store.Reservation(id)
	if !ok || r.Expired(c.cfg.Now()) {
		return Reservation{}, status.Errorf(codes.NotFound, "load balancer %s not found", lbID)
	}
	return r, nil
}

// session checks the caller holds UPDATE on session sessionID (directly
// or through its reservation or LB) and returns it; found is false when
// the session is gone. A session that is not on LB lbID is NOT_FOUND.
func (c *CP) session(ctx context.Context, lbID, sessionID string) (x Session, found bool, err error) {
	id, err := strconv.ParseInt(sessionID, 10, 64)
	if err != nil {
		return Session{}, false, invalid("Invalid session ID %q", sessionID)
	}
	need := Permission{Resource: pb.ResourceType_SESSION, ID: sessionID, Level: pb.PermissionType_UPDATE}
	x, ok := c.store.Session(id)
	if !ok && c.holds(caller(ctx), resPerm(lbID, pb.PermissionType_UPDATE)) {
		return Session{}, false, nil // gone, and it was the caller's to end
	}
	if err := c.require(ctx, need); err != nil {
		return Session{}, false, err
	}
	if ok && strconv.FormatInt(x.Reservation, 10) != lbID {
		return Session{}, false, status.Errorf(codes.NotFound, "session %s not found on load balancer %s", sessionID, lbID)
	}
	return x, ok, nil
}

// defaultReservation is how long a reservation lasts when Reserve or
// ExtendReservation gives no until, as udplbd2.
const defaultReservation = 365 * 24 * time.Hour

// until converts a reservation end: nil (or the Unix epoch, which older
// clients send for "none") is a year from now; a time already past is
// refused.
func (c *CP) until(ts *timestamppb.Timestamp) (time.Time, error) {
	now := c.cfg.Now()
	if ts == nil || (ts.Seconds == 0 && ts.Nanos == 0) {
		return now.Add(defaultReservation), nil
	}
	if err := ts.CheckValid(); err != nil {
		return time.Time{}, invalid("Invalid expiration timestamp: %v", err)
	}
	t := ts.AsTime()
	if !t.After(now) {
		return time.Time{}, invalid("Expiration time must be in the future (until %s)", t.Format(time.RFC3339))
	}
	return t, nil
}

// validName is udplbd2's rule for reservation, session and token names:
// empty, or at most 253 bytes of dot-separated labels of 1..63 letters,
// digits, '-', '_', ':', '/', each beginning and ending with a letter or
// digit.
func validName(name string) error {
	if name == "" {
		return nil
	}
	ok := len(name) <= 253
	for label := range strings.SplitSeq(name, ".") {
		ok = ok && label != "" && len(label) <= 63 && alnum(label[0]) && alnum(label[len(label)-1])
		for i := 0; ok && i < len(label); i++ {
			ok = alnum(label[i]) || strings.IndexByte("-_:/", label[i]) >= 0
		}
	}
	if !ok {
		return invalid("Name must contain only alphanumeric characters plus '.' ':' '/' '_' '-', and two periods may not follow each other")
	}
	return nil
}

func alnum(b byte) bool { return '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }

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

// ejfatURI is the EJFAT URI of a reservation (lb nil: of a token alone),
// as udplbd2 writes it: ejfat[s]://token@host:port/lb/id?sync=…&data=…,
// host:port being the address the client called (its :authority).
func (c *CP) ejfatURI(ctx context.Context, token string, lb *pb.ReserveLoadBalancerReply) string {
	u := "ejfat://"
	if c.cfg.TLS {
		u = "ejfats://"
	}
	u += token + "@" + c.authority(ctx)
	if lb == nil {
		return u + "/"
	}
	sync := strconv.FormatUint(uint64(lb.SyncUdpPort), 10)
	data := fmt.Sprintf("%d-%d", lb.DataMinPort, lb.DataMaxPort)
	return u + "/lb/" + lb.LbId + "?sync=" + lb.SyncIpv4Address + ":" + sync + "&sync=[" + lb.SyncIpv6Address + "]:" + sync +
		"&data=" + lb.DataIpv4Address + ":" + data + "&data=[" + lb.DataIpv6Address + "]:" + data
}

// authority is the host:port a call was made to.
func (c *CP) authority(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if a := md.Get(":authority"); len(a) > 0 {
		return a[0]
	}
	return c.cfg.GRPCAddr
}

// reservable are the LB instances the caller may reserve: all with
// RESERVE on ALL, else those it holds RESERVE on as LOAD_BALANCERs.
func (c *CP) reservable(ctx context.Context) []int {
	var out []int
	for i := range c.cfg.Instances {
		if c.holds(caller(ctx), Permission{Resource: pb.ResourceType_LOAD_BALANCER, ID: strconv.Itoa(i),
			Level: pb.PermissionType_RESERVE}) {
			out = append(out, i)
		}
	}
	return out
}

// ReserveLoadBalancer reserves a free LB instance.
func (c *CP) ReserveLoadBalancer(ctx context.Context, req *pb.ReserveLoadBalancerRequest) (*pb.ReserveLoadBalancerReply, error) {
	instances := c.reservable(ctx)
	if len(instances) == 0 {
		return nil, status.Error(codes.PermissionDenied, "No permission to reserve any load balancers")
	}
	if err := validName(req.Name); err != nil {
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
	r, token, err := c.store.ReserveOn(r, instances, caller(ctx).ID, resPerm("", pb.PermissionType_UPDATE))
	if err != nil {
		return nil, storeErr(err)
	}
	rep := c.reply(r, token)
	rep.EjfatUri = c.ejfatURI(ctx, token, rep)
	return rep, nil
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
		rep.EpochInForce = inForce(es, c.store.Sync(r.ID), rep.Timestamp.AsTime())
	}
	for _, x := range c.store.Sessions(r.ID) {
		rep.Workers = append(rep.Workers, worker(x, cal))
	}
	return rep
}

// worker describes session x with its slots in calendar cal.
func worker(x Session, cal []int64) *pb.WorkerStatus {
	w := &pb.WorkerStatus{SessionId: x.ID, Name: x.Name, IpAddress: x.IP, UdpPort: x.Port, PortRange: x.PortRange,
		MinFactor: x.MinFactor, MaxFactor: x.MaxFactor, KeepLbHeader: x.KeepLBHeader, SlotDemands: slotRanges(x.Demands)}
	if st := x.State; st != nil {
		w.FillPercent, w.ControlSignal, w.LastUpdated = st.Fill, st.Control, timestamppb.New(st.Updated())
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

// FreeLoadBalancer ends a reservation. Freeing one already gone
// succeeds, as in udplbd2.
func (c *CP) FreeLoadBalancer(ctx context.Context, req *pb.FreeLoadBalancerRequest) (*pb.FreeLoadBalancerReply, error) {
	id, err := reservationID(req.LbId)
	if err != nil {
		return nil, err
	}
	if err := c.require(ctx, resPerm(req.LbId, pb.PermissionType_UPDATE)); err != nil {
		return nil, err
	}
	chains, err := c.store.Chains(id)
	if err != nil {
		return nil, storeErr(err)
	}
	for _, ch := range chains {
		c.unchain(ch)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.program()
	if err := c.store.Free(id, c.cfg.Now()); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, storeErr(err)
	}
	return &pb.FreeLoadBalancerReply{}, nil
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
	r, err := c.reservation(ctx, req.LbId, pb.PermissionType_UPDATE)
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
	if err := validName(req.Name); err != nil {
		return nil, err
	}
	if err := checkRegister(req); err != nil {
		return nil, err
	}
	if err := c.memberPolicy(req.IpAddress); err != nil {
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
	// A session is ready from Register until --ready-timeout passes
	// without a SendState, as in udplbd2 (which stores a ready state).
	if err := c.store.AddState(x.ID, State{Time: x.Created, Ready: true}); err != nil {
		return nil, storeErr(err)
	}
	return &pb.RegisterReply{Token: token, SessionId: strconv.FormatInt(x.ID, 10)}, nil
}

func checkRegister(req *pb.RegisterRequest) error {
	if _, err := netip.ParseAddr(req.IpAddress); err != nil {
		return invalid("Invalid IP address %q: %v", req.IpAddress, err)
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

// Deregister removes a session; deregistering one already gone succeeds,
// as in udplbd2.
func (c *CP) Deregister(ctx context.Context, req *pb.DeregisterRequest) (*pb.DeregisterReply, error) {
	x, found, err := c.session(ctx, req.LbId, req.SessionId)
	if err != nil || !found {
		return &pb.DeregisterReply{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.program()
	if err := c.store.Deregister(x.ID); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, storeErr(err)
	}
	return &pb.DeregisterReply{}, nil
}

// SendState records a receiver's state.
func (c *CP) SendState(ctx context.Context, req *pb.SendStateRequest) (*pb.SendStateReply, error) {
	x, found, err := c.session(ctx, req.LbId, req.SessionId)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, status.Errorf(codes.NotFound, "session %s not found", req.SessionId)
	}
	if !(req.FillPercent >= 0 && req.FillPercent <= 1) {
		return nil, invalid("fillPercent %v outside 0..1", req.FillPercent)
	}
	if !finite(req.ControlSignal) {
		return nil, invalid("controlSignal %v is not finite", req.ControlSignal)
	}
	st := State{Time: c.cfg.Now(), Reported: reported(req.Timestamp), Fill: req.FillPercent, Control: req.ControlSignal, Ready: req.IsReady,
		EventsRecv: req.TotalEventsRecv, Reassembled: req.TotalEventsReassembled, ReassemblyErr: req.TotalEventsReassemblyErr,
		Dequeued: req.TotalEventsDequeued, EnqueueErr: req.TotalEventEnqueueErr, Bytes: req.TotalBytesRecv, Packets: req.TotalPacketsRecv}
	return &pb.SendStateReply{}, storeErr(c.store.AddState(x.ID, st))
}

// known fails with PERMISSION_DENIED for a token the CP does not know.
func known(ctx context.Context) error {
	if caller(ctx).ID == 0 {
		return status.Error(codes.PermissionDenied, "Permission denied: unknown token")
	}
	return nil
}

// reported is a SendState's timestamp (zero when absent or invalid).
func reported(t *timestamppb.Timestamp) time.Time {
	if t.CheckValid() != nil {
		return time.Time{}
	}
	return t.AsTime()
}

// Overview describes the reservations the caller may read.
func (c *CP) Overview(ctx context.Context, _ *pb.OverviewRequest) (*pb.OverviewReply, error) {
	if err := known(ctx); err != nil {
		return nil, err
	}
	rep := &pb.OverviewReply{}
	now := c.cfg.Now()
	for _, r := range c.store.Reservations() {
		read := c.holds(caller(ctx), resPerm(strconv.FormatInt(r.ID, 10), pb.PermissionType_READ_ONLY))
		if read && !r.Expired(now) {
			rep.LoadBalancers = append(rep.LoadBalancers, &pb.Overview{Name: r.Name, Reservation: c.reply(r, ""), Status: c.status(r)})
		}
	}
	return rep, nil
}

// Version reports the build; any known token may ask, as in udplbd2.
func (c *CP) Version(ctx context.Context, _ *pb.VersionRequest) (*pb.VersionReply, error) {
	if err := known(ctx); err != nil {
		return nil, err
	}
	rep := &pb.VersionReply{Commit: c.cfg.Commit, CompatTag: "nsc"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rep.Build = bi.GoVersion + " " + bi.Main.Version
	}
	return rep, nil
}
