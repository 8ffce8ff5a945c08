// Package client speaks the EJFAT control plane's gRPC API (udplbd2's
// loadbalancer.LoadBalancer, as nsc cp serves it) with a bearer token:
// what E2SAR's lbadm does, for nsc lbctl and for senders and receivers
// that register and report state.
package client

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
)

// Client is a connection to a control plane and the token it calls with.
type Client struct {
	LB    pb.LoadBalancerClient
	conn  *grpc.ClientConn
	token string
}

// Dial connects to addr (host:port), in plaintext, or over TLS when ca is
// a CA certificate file ("": plaintext), calling with token.
func Dial(addr, token, ca string) (*Client, error) {
	creds := insecure.NewCredentials()
	if ca != "" {
		c, err := credentials.NewClientTLSFromFile(ca, "")
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		creds = c
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, err
	}
	return &Client{LB: pb.NewLoadBalancerClient(conn), conn: conn, token: token}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Ctx is ctx carrying the client's token.
func (c *Client) Ctx(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
}

// WithToken is a client on the same connection calling with another
// token (a reservation's or a session's).
func (c *Client) WithToken(token string) *Client {
	return &Client{LB: c.LB, conn: c.conn, token: token}
}

// Reserve reserves an LB instance named name for senders until until
// (zero: none given, which the CP takes as a year).
func (c *Client) Reserve(ctx context.Context, name string, until time.Time, senders []string) (*pb.ReserveLoadBalancerReply, error) {
	req := &pb.ReserveLoadBalancerRequest{Name: name, SenderAddresses: senders}
	if !until.IsZero() {
		req.Until = timestamppb.New(until)
	}
	return c.LB.ReserveLoadBalancer(c.Ctx(ctx), req)
}

// Free frees reservation lb.
func (c *Client) Free(ctx context.Context, lb string) error {
	_, err := c.LB.FreeLoadBalancer(c.Ctx(ctx), &pb.FreeLoadBalancerRequest{LbId: lb})
	return err
}

// Status is reservation lb's status.
func (c *Client) Status(ctx context.Context, lb string) (*pb.LoadBalancerStatusReply, error) {
	return c.LB.LoadBalancerStatus(c.Ctx(ctx), &pb.LoadBalancerStatusRequest{LbId: lb})
}

// Overview is every reservation with its status.
func (c *Client) Overview(ctx context.Context) (*pb.OverviewReply, error) {
	return c.LB.Overview(c.Ctx(ctx), &pb.OverviewRequest{})
}

// Register registers a receiver with reservation lb.
func (c *Client) Register(ctx context.Context, req *pb.RegisterRequest) (*pb.RegisterReply, error) {
	return c.LB.Register(c.Ctx(ctx), req)
}

// Deregister ends session of reservation lb.
func (c *Client) Deregister(ctx context.Context, lb, session string) error {
	_, err := c.LB.Deregister(c.Ctx(ctx), &pb.DeregisterRequest{LbId: lb, SessionId: session})
	return err
}

// SendState reports a receiver's state (its time set to now when unset).
func (c *Client) SendState(ctx context.Context, req *pb.SendStateRequest) error {
	if req.Timestamp == nil {
		req.Timestamp = timestamppb.Now()
	}
	_, err := c.LB.SendState(c.Ctx(ctx), req)
	return err
}

// CreateToken makes a child token with the permissions given.
func (c *Client) CreateToken(ctx context.Context, name string, perms []*pb.TokenPermission) (string, error) {
	r, err := c.LB.CreateToken(c.Ctx(ctx), &pb.CreateTokenRequest{Name: name, Permissions: perms})
	if err != nil {
		return "", err
	}
	return r.Token, nil
}
