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

// interceptor takes the bearer token of every call and counts the calls
// that fail, by method and code.
func (c *CP) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := c.authenticated(ctx, req, handler)
	if err != nil {
		method := info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]
		c.metrics.rejected.WithLabelValues(method, status.Code(err).String()).Inc()
	}
	return resp, err
}

// authenticated calls handler as the call's token. As udplbd2: a call
// without authorization metadata is UNAUTHENTICATED and one not
// "Bearer <token>" INVALID_ARGUMENT; an unknown token is no error here but
// holds nothing (its ID is 0), so what it asks is PERMISSION_DENIED, or
// NOT_FOUND for the token calls.
func (c *CP) authenticated(ctx context.Context, req any, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return nil, status.Error(codes.Unauthenticated, "Missing authorization token")
	}
	secret, ok := strings.CutPrefix(vals[0], "Bearer ")
	if !ok {
		return nil, status.Error(codes.InvalidArgument, "Invalid token format: missing Bearer prefix")
	}
	tok, _ := c.store.Authenticate(strings.TrimSpace(secret))
	return handler(context.WithValue(ctx, callerKey{}, tok), req)
}

// implies says whether holding level has grants need, as udplbd2:
// UPDATE grants all; RESERVE and REGISTER grant themselves and READ_ONLY.
func implies(has, need pb.PermissionType) bool {
	return has == pb.PermissionType_UPDATE || has == need || need == pb.PermissionType_READ_ONLY
}

// covers says whether holding p grants need. ALL covers every resource; a
// LOAD_BALANCER (an LB instance, its fpgaLbId) its reservations and their
// sessions; a RESERVATION (its lbId) its sessions.
func (c *CP) covers(p, need Permission) bool {
	if !implies(p.Level, need.Level) {
		return false
	}
	if p.Resource == pb.ResourceType_ALL || p.Resource == need.Resource && p.ID == need.ID {
		return true
	}
	res := need.ID
	switch {
	case need.Resource == pb.ResourceType_SESSION && p.Resource != pb.ResourceType_SESSION:
		res = c.lbOf(need.ID)
	case need.Resource != pb.ResourceType_RESERVATION:
		return false
	}
	switch p.Resource {
	case pb.ResourceType_RESERVATION:
		return res != "" && p.ID == res
	case pb.ResourceType_LOAD_BALANCER:
		return res != "" && p.ID == c.instanceOf(res)
	}
	return false
}

// holds says whether tok holds need.
func (c *CP) holds(tok Token, need Permission) bool {
	for _, p := range tok.Perms {
		if c.covers(p, need) {
			return true
		}
	}
	return false
}

// lbOf names a session's reservation ("": none).
func (c *CP) lbOf(session string) string {
	if x, ok := lookup(session, c.store.Session); ok {
		return strconv.FormatInt(x.Reservation, 10)
	}
	return ""
}

// instanceOf names an active reservation's LB instance ("": none).
func (c *CP) instanceOf(lbID string) string {
	if r, ok := lookup(lbID, c.store.Reservation); ok {
		return strconv.Itoa(r.Instance)
	}
	return ""
}

// lookup gets what a decimal id names.
func lookup[T any](id string, get func(int64) (T, bool)) (T, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		var zero T
		return zero, false
	}
	return get(n)
}

// require fails with PERMISSION_DENIED unless the caller holds need.
func (c *CP) require(ctx context.Context, need Permission) error {
	if c.holds(caller(ctx), need) {
		return nil
	}
	what := need.Resource.String()
	if need.Resource != pb.ResourceType_ALL {
		what += " " + need.ID
	}
	return status.Errorf(codes.PermissionDenied, "Permission denied: the token does not hold %s on %s", need.Level, what)
}
