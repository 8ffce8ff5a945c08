package cp

import (
	"context"
	"strconv"
	"strings"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

type callerKey struct{}

// caller is the token a call was authenticated with.
func caller(ctx context.Context) Token {
	t, _ := ctx.Value(callerKey{}).(Token)
	return t
}

// interceptor authenticates every call but Version and counts the calls
// that fail, by method and code.
func (c *CP) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := c.authenticated(ctx, req, info, handler)
	if err != nil {
		method := info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]
		c.metrics.rejected.WithLabelValues(method, status.Code(err).String()).Inc()
	}
	return resp, err
}

func (c *CP) authenticated(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod == pb.LoadBalancer_Version_FullMethodName {
		return handler(ctx, req)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return nil, status.Error(codes.Unauthenticated, "no authorization metadata (want: Bearer <token>)")
	}
	secret, ok := strings.CutPrefix(vals[0], "Bearer ")
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "authorization is not \"Bearer <token>\"")
	}
	tok, ok := c.store.Authenticate(strings.TrimSpace(secret))
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "unknown token")
	}
	return handler(context.WithValue(ctx, callerKey{}, tok), req)
}

// covers says whether holding p grants need. A higher level implies the
// lower ones; ALL covers every resource; an LB (or its reservation, the
// same ID) covers its sessions; lbOf names a session's LB.
func covers(p, need Permission, lbOf func(session string) string) bool {
	if p.Level < need.Level {
		return false
	}
	switch p.Resource {
	case pb.ResourceType_ALL:
		return true
	case pb.ResourceType_LOAD_BALANCER, pb.ResourceType_RESERVATION:
		switch need.Resource {
		case pb.ResourceType_LOAD_BALANCER, pb.ResourceType_RESERVATION:
			return p.ID == need.ID
		case pb.ResourceType_SESSION:
			return p.ID == lbOf(need.ID)
		}
	case pb.ResourceType_SESSION:
		return need.Resource == pb.ResourceType_SESSION && p.ID == need.ID
	}
	return false
}

// holds says whether tok holds need.
func (c *CP) holds(tok Token, need Permission) bool {
	for _, p := range tok.Perms {
		if covers(p, need, c.lbOf) {
			return true
		}
	}
	return false
}

func (c *CP) lbOf(session string) string {
	id, err := strconv.ParseInt(session, 10, 64)
	if err != nil {
		return ""
	}
	x, ok := c.store.Session(id)
	if !ok {
		return ""
	}
	return strconv.FormatInt(x.Reservation, 10)
}

// require fails with PermissionDenied unless the caller holds need.
func (c *CP) require(ctx context.Context, need Permission) error {
	if c.holds(caller(ctx), need) {
		return nil
	}
	what := need.Resource.String()
	if need.Resource != pb.ResourceType_ALL {
		what += " " + need.ID
	}
	return status.Errorf(codes.PermissionDenied, "the token does not hold %s on %s", need.Level, what)
}
