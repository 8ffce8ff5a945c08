package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/dragonet-go/nsc/ejfat/cp/client"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
)

// runLBCtl speaks the control plane's API as E2SAR's lbadm does:
// reserve, free, status, overview, register, deregister, send-state and
// token, each one call with the token given.
func runLBCtl(e *env, args []string) error {
	fs := newFlags("lbctl", e)
	addr := fs.String("cp", "127.0.0.1:18008", "the control plane's gRPC address")
	token := fs.String("token", "", "the bearer token (else --token-file, else $NSC_TOKEN)")
	tokenFile := fs.String("token-file", "", "a file holding the bearer token")
	ca := fs.String("tls-ca", "", "CA certificate of a control plane serving TLS")
	until := fs.Duration("until", 0, "reserve: how long the reservation lasts (0: the CP's default, a year)")
	var senders, perms multiFlag
	fs.Var(&senders, "sender", "reserve: a sender address allowed through the LB (repeat)")
	fs.Var(&perms, "perm", "token: a permission TYPE:ID:PERMISSION, e.g. RESERVATION:1:UPDATE (repeat; LOAD_BALANCER names an LB instance)")
	name := fs.String("name", "", "register: the receiver's name")
	ip := fs.String("ip", "", "register: the receiver's address")
	port := fs.Uint("port", 0, "register: the receiver's first UDP port")
	portRange := fs.Uint("port-range", 0, "register: k, for 2^k ports")
	weight := fs.Float64("weight", 1, "register: the receiver's weight")
	minFactor := fs.Float64("min-factor", 0, "register: the least share, as a factor of the even share")
	maxFactor := fs.Float64("max-factor", 0, "register: the largest share, as a factor of the even share (0: no maximum)")
	keepLB := fs.Bool("keep-lb-header", false, "register: the receiver gets the LB header")
	fill := fs.Float64("fill", 0, "send-state: the receiver's queue fill, 0..1")
	control := fs.Float64("control", 0, "send-state: the receiver's control signal")
	ready := fs.Bool("ready", true, "send-state: the receiver takes events")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("want reserve, free, status, overview, register, deregister, send-state or token")
	}
	tok, err := lbctlToken(*token, *tokenFile)
	if err != nil {
		return err
	}
	want := func(n int, what string) error {
		if len(pos) != n+1 {
			return usagef("%s takes %s", pos[0], what)
		}
		return nil
	}
	c, err := client.Dial(*addr, tok, *ca)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch pos[0] {
	case "reserve":
		if err := want(1, "NAME"); err != nil {
			return err
		}
		var t time.Time
		if *until > 0 {
			t = time.Now().Add(*until)
		}
		r, err := c.Reserve(ctx, pos[1], t, senders)
		if err != nil {
			return err
		}
		return printMessage(e, r)
	case "free":
		if err := want(1, "LB"); err != nil {
			return err
		}
		return c.Free(ctx, pos[1])
	case "status":
		if err := want(1, "LB"); err != nil {
			return err
		}
		r, err := c.Status(ctx, pos[1])
		if err != nil {
			return err
		}
		return printMessage(e, r)
	case "overview":
		if err := want(0, "nothing"); err != nil {
			return err
		}
		r, err := c.Overview(ctx)
		if err != nil {
			return err
		}
		return printMessage(e, r)
	case "register":
		if err := want(1, "LB (and --name, --ip, --port)"); err != nil {
			return err
		}
		if *portRange > 14 {
			return usagef("--port-range %d: k is 0 to 14", *portRange)
		}
		r, err := c.Register(ctx, &pb.RegisterRequest{LbId: pos[1], Name: *name, IpAddress: *ip, UdpPort: uint32(*port),
			PortRange: pb.PortRange(*portRange), Weight: float32(*weight), MinFactor: float32(*minFactor),
			MaxFactor: float32(*maxFactor), KeepLbHeader: *keepLB})
		if err != nil {
			return err
		}
		return printMessage(e, r)
	case "deregister":
		if err := want(2, "LB SESSION"); err != nil {
			return err
		}
		return c.Deregister(ctx, pos[1], pos[2])
	case "send-state":
		if err := want(2, "LB SESSION"); err != nil {
			return err
		}
		return c.SendState(ctx, &pb.SendStateRequest{LbId: pos[1], SessionId: pos[2], FillPercent: float32(*fill),
			ControlSignal: float32(*control), IsReady: *ready})
	case "token":
		if err := want(1, "NAME (and --perm TYPE:ID:PERMISSION…)"); err != nil {
			return err
		}
		ps, err := parsePerms(perms)
		if err != nil {
			return err
		}
		t, err := c.CreateToken(ctx, pos[1], ps)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, t)
		return nil
	}
	return usagef("unknown lbctl command %q (have reserve, free, status, overview, register, deregister, send-state, token)", pos[0])
}

// lbctlToken is the token from the flag, the file or $NSC_TOKEN.
func lbctlToken(token, file string) (string, error) {
	switch {
	case token != "":
		return token, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	}
	if t := os.Getenv("NSC_TOKEN"); t != "" {
		return t, nil
	}
	return "", usagef("no token: give --token, --token-file or $NSC_TOKEN")
}

// parsePerms reads TYPE:ID:PERMISSION triples (names as the API spells
// them; ID may be empty for ALL).
func parsePerms(ss []string) ([]*pb.TokenPermission, error) {
	var out []*pb.TokenPermission
	for _, s := range ss {
		parts := strings.Split(s, ":")
		if len(parts) != 3 {
			return nil, usagef("--perm %q: want TYPE:ID:PERMISSION", s)
		}
		rt, ok := pb.ResourceType_value[parts[0]]
		if !ok {
			return nil, usagef("--perm %q: resource type %s is none of ALL, LOAD_BALANCER, RESERVATION, SESSION", s, parts[0])
		}
		pt, ok := pb.PermissionType_value[parts[2]]
		if !ok {
			return nil, usagef("--perm %q: permission %s is none of READ_ONLY, REGISTER, RESERVE, UPDATE", s, parts[2])
		}
		out = append(out, &pb.TokenPermission{ResourceType: pb.ResourceType(rt), ResourceId: parts[1], Permission: pb.PermissionType(pt)})
	}
	return out, nil
}

// printMessage prints a reply as indented JSON (protojson: the API's own
// field names).
func printMessage(e *env, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, string(b))
	return nil
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }
