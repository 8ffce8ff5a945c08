package cp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// LB chaining, as udplbd2 (src/api/handlers/lb.rs, src/reservation/upstream.rs):
// a reservation registers its LB's data address as a receiver (keepLbHeader)
// of an LB on an upstream control plane, and every chainEvery reports there
// the aggregate state of its own receivers.

// chainEvery is how often chained reservations report upstream (udplbd2:
// 100 ms).
const chainEvery = 100 * time.Millisecond

// upstreamTimeout bounds each call to an upstream control plane.
const upstreamTimeout = 5 * time.Second

// ejfatURI is the part of an EJFAT URI (ejfat[s]://token@host:port/lb/id?...)
// chaining needs.
type ejfatURI struct {
	tls         bool
	token, host string // host is host:port
	lb          string
}

func parseEjfatURI(s string) (ejfatURI, error) {
	var u ejfatURI
	rest, ok := strings.CutPrefix(s, "ejfats://")
	if u.tls = ok; !ok {
		if rest, ok = strings.CutPrefix(s, "ejfat://"); !ok {
			return u, invalid("Invalid EJFAT URI: EJFAT URI has invalid scheme, must be ejfat:// or ejfats://")
		}
	}
	rest, _, _ = strings.Cut(rest, "?")
	if tok, after, ok := strings.Cut(rest, "@"); ok {
		u.token, rest = tok, after
	}
	hostport, path, _ := strings.Cut(rest, "/")
	if lb, ok := strings.CutPrefix(path, "lb/"); ok {
		u.lb, _, _ = strings.Cut(lb, "/")
	}
	switch _, port, err := net.SplitHostPort(hostport); {
	case u.lb == "":
		return u, invalid("EJFAT URI must include a load balancer ID")
	case u.token == "":
		return u, invalid("EJFAT URI must include a token")
	case err != nil || port == "":
		return u, invalid("EJFAT URI must include a gRPC port")
	}
	u.host = hostport
	return u, nil
}

// upstream is a connection to another control plane, calling with a token.
type upstream struct {
	conn  *grpc.ClientConn
	lb    pb.LoadBalancerClient
	token string
}

func dialUpstream(host string, useTLS bool, token string) (*upstream, error) {
	creds := insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12}) // the system's roots
	}
	conn, err := grpc.NewClient(host, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, err
	}
	return &upstream{conn: conn, lb: pb.NewLoadBalancerClient(conn), token: token}, nil
}

// ctx is a bounded context carrying the upstream's token.
func (u *upstream) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, upstreamTimeout)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+u.token), cancel
}

// nodeID is this CP's identity for reservation lbID in chain graphs,
// "host:port/lbId" with the CP's gRPC address, as udplbd2.
func (c *CP) nodeID(lbID string) string { return c.cfg.GRPCAddr + "/" + lbID }

// portRange is the PortRange covering the data ports (the largest 2^k
// that fits them).
func portRange(lo, hi uint32) pb.PortRange {
	k := bits.Len32(hi-lo+1) - 1
	return pb.PortRange(min(k, int(pb.PortRange_PORT_RANGE_16384)))
}

// ChainLoadBalancer registers reservation lbId's LB as a receiver of the
// upstream LB its ejfatUri names.
func (c *CP) ChainLoadBalancer(ctx context.Context, req *pb.ChainLoadBalancerRequest) (*pb.ChainLoadBalancerReply, error) {
	r, err := c.reservation(ctx, req.LbId, pb.PermissionType_UPDATE)
	if err != nil {
		return nil, err
	}
	u, err := parseEjfatURI(req.EjfatUri)
	if err != nil {
		return nil, err
	}
	var ip string
	switch req.IpFamily {
	case pb.IpFamily_DUAL_STACK:
		return nil, invalid("DUAL_STACK is not supported for ChainLoadBalancer, use IPV4 or IPV6")
	case pb.IpFamily_IPV4:
		ip = c.addrs.data4
	case pb.IpFamily_IPV6:
		ip = c.addrs.data6
	default:
		return nil, invalid("Invalid IP family %d", req.IpFamily)
	}
	up, err := dialUpstream(u.host, u.tls, u.token)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "Failed to connect to upstream control plane: %v", err)
	}
	defer up.conn.Close()
	uctx, cancel := up.ctx(ctx)
	defer cancel()
	info, err := up.lb.GetLoadBalancer(uctx, &pb.GetLoadBalancerRequest{LbId: u.lb})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "Failed to get upstream load balancer info: %v", err)
	}
	// A chain that leads back here would forward in a loop; an upstream
	// that cannot say is taken to have none (udplbd2: optimistic).
	if g, err := up.lb.GetChainGraph(uctx, &pb.GetChainGraphRequest{LbId: u.lb, Visited: []string{c.nodeID(req.LbId)}}); err == nil &&
		g.CycleDetected {
		return nil, status.Error(codes.FailedPrecondition, "ChainLoadBalancer would create a forwarding cycle")
	}
	reg, err := up.lb.Register(uctx, &pb.RegisterRequest{LbId: u.lb, Name: "chain-" + req.LbId, Weight: req.Weight,
		IpAddress: ip, UdpPort: c.cfg.DataPortMin, PortRange: portRange(c.cfg.DataPortMin, c.cfg.DataPortMax),
		MinFactor: req.MinFactor, MaxFactor: req.MaxFactor, KeepLbHeader: true, SlotDemands: req.SlotDemands})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "Failed to register with upstream control plane: %v", err)
	}
	ch, err := c.store.AddChain(Chain{Reservation: r.ID, Upstream: u.host, TLS: u.tls, UpstreamLB: u.lb, UpstreamTok: u.token,
		SessionTok: reg.Token, SessionID: reg.SessionId, Data4: info.DataIpv4Address, Data6: info.DataIpv6Address,
		Created: c.cfg.Now()})
	if err != nil {
		c.deregisterUpstream(Chain{Upstream: u.host, TLS: u.tls, UpstreamLB: u.lb, SessionTok: reg.Token, SessionID: reg.SessionId})
		return nil, storeErr(err)
	}
	return &pb.ChainLoadBalancerReply{ChainId: strconv.FormatInt(ch.ID, 10)}, nil
}

// UnchainLoadBalancer deregisters a chain upstream (best effort) and
// forgets it.
func (c *CP) UnchainLoadBalancer(ctx context.Context, req *pb.UnchainLoadBalancerRequest) (*pb.UnchainLoadBalancerReply, error) {
	id, err := reservationID(req.LbId)
	if err != nil {
		return nil, err
	}
	chainID, err := strconv.ParseInt(req.ChainId, 10, 64)
	if err != nil {
		return nil, invalid("Invalid chain ID %q", req.ChainId)
	}
	if err := c.require(ctx, resPerm(req.LbId, pb.PermissionType_UPDATE)); err != nil {
		return nil, err
	}
	ch, err := c.store.Chain(chainID)
	if errors.Is(err, ErrNotFound) {
		return nil, status.Errorf(codes.NotFound, "Upstream chain not found: %d", chainID)
	}
	if err != nil {
		return nil, storeErr(err)
	}
	if ch.Reservation != id {
		return nil, invalid("Chain does not belong to this reservation")
	}
	c.unchain(ch)
	return &pb.UnchainLoadBalancerReply{}, nil
}

// unchain deregisters ch upstream (best effort) and forgets it.
func (c *CP) unchain(ch Chain) {
	c.deregisterUpstream(ch)
	c.logErr("forget upstream chain", c.store.DeleteChain(ch.ID))
}

func (c *CP) deregisterUpstream(ch Chain) {
	up, err := dialUpstream(ch.Upstream, ch.TLS, ch.SessionTok)
	if err != nil {
		c.logErr("deregister upstream", err)
		return
	}
	defer up.conn.Close()
	ctx, cancel := up.ctx(context.Background())
	defer cancel()
	_, err = up.lb.Deregister(ctx, &pb.DeregisterRequest{LbId: ch.UpstreamLB, SessionId: ch.SessionID})
	c.logErr(fmt.Sprintf("deregister from %s/lb/%s", ch.Upstream, ch.UpstreamLB), err)
}

// GetChainGraph answers the upstream chains from reservation lbId on,
// asking each upstream in turn; cycleDetected says the walk came back to
// a node in visited.
func (c *CP) GetChainGraph(ctx context.Context, req *pb.GetChainGraphRequest) (*pb.GetChainGraphReply, error) {
	r, err := c.reservation(ctx, req.LbId, pb.PermissionType_READ_ONLY)
	if err != nil {
		return nil, err
	}
	me := c.nodeID(req.LbId)
	if slices.Contains(req.Visited, me) {
		return &pb.GetChainGraphReply{CycleDetected: true}, nil
	}
	chains, err := c.store.Chains(r.ID)
	if err != nil {
		return nil, storeErr(err)
	}
	rep := &pb.GetChainGraphReply{}
	visited := append(slices.Clone(req.Visited), me)
	for _, ch := range chains {
		rep.Edges = append(rep.Edges, &pb.ChainGraphEdge{UpstreamLbId: ch.UpstreamLB, UpstreamDataIpv4: ch.Data4,
			UpstreamDataIpv6: ch.Data6, DownstreamLbId: req.LbId, DownstreamDataIpv4: c.addrs.data4,
			DownstreamDataIpv6: c.addrs.data6, ChainId: strconv.FormatInt(ch.ID, 10)})
		g, err := c.upstreamGraph(ctx, ch, visited)
		if err != nil {
			c.logErr("chain graph upstream", err)
			continue
		}
		if g.CycleDetected {
			rep.CycleDetected = true
			return rep, nil
		}
		rep.Edges = append(rep.Edges, g.Edges...)
	}
	return rep, nil
}

func (c *CP) upstreamGraph(ctx context.Context, ch Chain, visited []string) (*pb.GetChainGraphReply, error) {
	up, err := dialUpstream(ch.Upstream, ch.TLS, ch.UpstreamTok)
	if err != nil {
		return nil, err
	}
	defer up.conn.Close()
	uctx, cancel := up.ctx(ctx)
	defer cancel()
	return up.lb.GetChainGraph(uctx, &pb.GetChainGraphRequest{LbId: ch.UpstreamLB, Visited: visited})
}

// aggregate is a reservation's state as its chains report it upstream,
// as udplbd2: ready if any session is, fill and control signal averaged
// over the sessions with a state, counters summed.
func (c *CP) aggregate(id int64) *pb.SendStateRequest {
	st := &pb.SendStateRequest{Timestamp: timestamppb.New(c.cfg.Now())}
	var n float32
	for _, x := range c.store.Sessions(id) {
		s := x.State
		if s == nil {
			continue
		}
		n++
		st.IsReady = st.IsReady || s.Ready
		st.FillPercent += s.Fill
		st.ControlSignal += s.Control
		st.TotalEventsRecv += s.EventsRecv
		st.TotalEventsReassembled += s.Reassembled
		st.TotalEventsReassemblyErr += s.ReassemblyErr
		st.TotalEventsDequeued += s.Dequeued
		st.TotalEventEnqueueErr += s.EnqueueErr
		st.TotalBytesRecv += s.Bytes
		st.TotalPacketsRecv += s.Packets
	}
	if n > 0 {
		st.FillPercent /= n
		st.ControlSignal /= n
	}
	return st
}

// reportUpstream sends every chained reservation's aggregate state
// upstream each chainEvery until ctx ends, keeping a connection per
// chain. Chains of reservations gone are deregistered and forgotten.
func (c *CP) reportUpstream(ctx context.Context) {
	conns := map[int64]*upstream{}
	defer func() {
		for _, u := range conns {
			u.conn.Close()
		}
	}()
	t := time.NewTicker(chainEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		chains, err := c.store.Chains(0)
		if err != nil {
			c.logErr("list upstream chains", err)
			continue
		}
		live := map[int64]bool{}
		for _, ch := range chains {
			if r, ok := c.store.Reservation(ch.Reservation); !ok || r.Expired(c.cfg.Now()) {
				c.unchain(ch)
				continue
			}
			live[ch.ID] = true
			u := conns[ch.ID]
			if u == nil {
				if u, err = dialUpstream(ch.Upstream, ch.TLS, ch.SessionTok); err != nil {
					c.logErr("connect upstream", err)
					continue
				}
				conns[ch.ID] = u
			}
			st := c.aggregate(ch.Reservation)
			st.LbId, st.SessionId = ch.UpstreamLB, ch.SessionID
			uctx, cancel := u.ctx(ctx)
			_, err := u.lb.SendState(uctx, st)
			cancel()
			if err != nil && ctx.Err() == nil {
				c.logErr(fmt.Sprintf("send state to %s/lb/%s", ch.Upstream, ch.UpstreamLB), err)
			}
		}
		for id, u := range conns {
			if !live[id] {
				u.conn.Close()
				delete(conns, id)
			}
		}
	}
}
