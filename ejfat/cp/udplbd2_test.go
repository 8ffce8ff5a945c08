package cp_test

// udplbd2's API handler tests (esnet/udplbd2 src/api/tests.rs, fedb1d9),
// one Go test per Rust test of the same name, against a real nsc cp over
// gRPC with the client generated from udplbd2's loadbalancer.proto.
// udplbd2's fixtures become calls: its reservation with two sessions and
// two senders is reserved and registered here; its admin tokens "test" and
// "admin" are root tokens with UPDATE on ALL; db.get_token_id is the id
// ListTokenPermissions reports. Where a Rust test matches on
// Status::to_string (which holds tonic's description of the code) the
// port matches on the same text (tonicString).

import (
	"strings"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// tonicDescriptions are tonic's Code::description texts, which tonic's
// Status Display (the Rust tests' to_string) prints before the message.
var tonicDescriptions = map[codes.Code]string{
	codes.InvalidArgument:    "Client specified an invalid argument",
	codes.NotFound:           "Some requested entity was not found",
	codes.PermissionDenied:   "The caller does not have permission to execute the specified operation",
	codes.ResourceExhausted:  "Some resource has been exhausted",
	codes.FailedPrecondition: "The system is not in a state required for the operation's execution",
	codes.Internal:           "Internal error",
	codes.Unavailable:        "The service is currently unavailable",
	codes.Unauthenticated:    "The request does not have valid authentication credentials",
}

// tonicString is err as tonic's Status::to_string has it.
func tonicString(err error) string {
	s := status.Convert(err)
	return "status: '" + tonicDescriptions[s.Code()] + "', self: \"" + s.Message() + "\""
}

// errContains fails unless err is an error whose tonic text has want.
func errContains(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	if !strings.Contains(tonicString(err), want) {
		t.Errorf("Expected error to contain '%s', got: %s", want, tonicString(err))
	}
}

// messageContains fails unless err's message (Status::message) has want.
func messageContains(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want a message containing %q", want)
	}
	if msg := status.Convert(err).Message(); !strings.Contains(msg, want) {
		t.Errorf("message %q lacks %q", msg, want)
	}
}

// service is create_test_service: a CP with a reservation that has, with
// sessions, udplbd2's two sessions (127.0.0.1:8001, 127.0.0.2:8002), and
// its two senders.
type service struct {
	*testCP
	lc            pb.LoadBalancerClient
	lbID, session string
}

func newService(t *testing.T, cfg cp.Config, sessions bool) *service {
	t.Helper()
	c := startCP(t, cfg)
	s := &service{testCP: c, lc: client(t, c)}
	res, err := s.lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "test-lb",
		SenderAddresses: []string{"192.168.1.10", "192.168.1.11"}, Until: timestamppb.New(time.Now().Add(30 * time.Minute))})
	if err != nil {
		t.Fatal(err)
	}
	s.lbID = res.LbId
	for i, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		if !sessions {
			break
		}
		reg, err := s.lc.Register(as(c.admin), &pb.RegisterRequest{LbId: s.lbID, Name: "test-session-" + string(rune('0'+i)),
			Weight: 1, IpAddress: ip, UdpPort: uint32(8001 + i), PortRange: 0, MinFactor: 0, MaxFactor: 2})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			s.session = reg.SessionId
		}
	}
	return s
}

// createTestService is create_test_service().
func createTestService(t *testing.T) *service { return newService(t, cpConfig(), true) }

// createTestServiceWithConfig is create_test_service_with_config: no
// sessions, and the admin token "test".
func createTestServiceWithConfig(t *testing.T, cfg cp.Config) (*service, string) {
	s := newService(t, cfg, false)
	return s, s.rootToken(t, "test")
}

// rootToken is db.create_admin_token(name): a token with UPDATE on ALL
// and no parent.
func (s *service) rootToken(t *testing.T, name string) string {
	t.Helper()
	_, secret, err := s.store.CreateToken(name, 0,
		[]cp.Permission{{Resource: pb.ResourceType_ALL, Level: pb.PermissionType_UPDATE}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// tokenID is db.get_token_id(token): its id, or 0 when it is unknown.
func (s *service) tokenID(t *testing.T, token string) uint32 {
	t.Helper()
	rep, err := s.lc.ListTokenPermissions(as(token), &pb.ListTokenPermissionsRequest{})
	if status.Code(err) == codes.NotFound {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return rep.Token.Id
}

var invalid = as("invalid")

func byToken(tok string) *pb.TokenSelector {
	return &pb.TokenSelector{TokenSelector: &pb.TokenSelector_Token{Token: tok}}
}

func byID(id uint32) *pb.TokenSelector {
	return &pb.TokenSelector{TokenSelector: &pb.TokenSelector_Id{Id: id}}
}

func TestCreateTokenInvalidParent(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.CreateToken(invalid, &pb.CreateTokenRequest{Name: "test"})
	errContains(t, err, "not found")
}

func TestGetLoadBalancerInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.GetLoadBalancer(invalid, &pb.GetLoadBalancerRequest{LbId: s.lbID})
	errContains(t, err, "permission")
}

func TestLoadBalancerStatusInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.LoadBalancerStatus(invalid, &pb.LoadBalancerStatusRequest{LbId: s.lbID})
	errContains(t, err, "permission")
}

func TestFreeLoadBalancerInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.FreeLoadBalancer(invalid, &pb.FreeLoadBalancerRequest{LbId: s.lbID})
	errContains(t, err, "permission")
}

func TestAddSendersInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.AddSenders(invalid, &pb.AddSendersRequest{LbId: s.lbID})
	errContains(t, err, "permission")
}

func TestRemoveSendersInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.RemoveSenders(invalid, &pb.RemoveSendersRequest{LbId: s.lbID})
	errContains(t, err, "permission")
}

func TestRegisterInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.Register(invalid, &pb.RegisterRequest{LbId: s.lbID, Name: "test", IpAddress: "127.0.0.1", UdpPort: 8000,
		PortRange: 100, Weight: 1, MaxFactor: 1})
	errContains(t, err, "permission")
}

func TestReserveLoadBalancerInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.ReserveLoadBalancer(invalid, &pb.ReserveLoadBalancerRequest{Name: "test"})
	errContains(t, err, "permission")
}

func TestSetSlotDemandsInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.SetSlotDemands(invalid, &pb.SetSlotDemandsRequest{LbId: s.lbID})
	errContains(t, err, "permission")
}

func TestDeregisterInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.Deregister(invalid, &pb.DeregisterRequest{LbId: s.lbID, SessionId: s.session})
	errContains(t, err, "permission")
}

func TestSendStateInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.SendState(invalid, &pb.SendStateRequest{LbId: s.lbID, SessionId: s.session})
	errContains(t, err, "permission")
}

func TestOverviewInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.Overview(invalid, &pb.OverviewRequest{})
	errContains(t, err, "permission")
}

func TestTimeseriesInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.Timeseries(invalid, &pb.TimeseriesRequest{SeriesSelector: []string{"/lb/1/*"}})
	errContains(t, err, "permission")
}

func TestVersionInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.Version(invalid, &pb.VersionRequest{})
	errContains(t, err, "permission")
}

func TestListTokenPermissionsInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.ListTokenPermissions(invalid, &pb.ListTokenPermissionsRequest{Target: byToken("test")})
	errContains(t, err, "not found")
}

func TestListChildTokensInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.ListChildTokens(invalid, &pb.ListChildTokensRequest{Target: byToken("test")})
	errContains(t, err, "not found")
}

func TestRevokeTokenInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.RevokeToken(invalid, &pb.RevokeTokenRequest{Target: byToken("test")})
	errContains(t, err, "not found")
}

// ResetLoadBalancer

func TestResetLoadBalancerInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.ResetLoadBalancer(invalid, &pb.ResetLoadBalancerRequest{LbId: s.lbID, Sync: true, Epochs: true,
		Senders: true, Workers: true})
	errContains(t, err, "permission")
}

func (s *service) status(t *testing.T) *pb.LoadBalancerStatusReply {
	t.Helper()
	st, err := s.lc.LoadBalancerStatus(as(s.admin), &pb.LoadBalancerStatusRequest{LbId: s.lbID})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestResetLoadBalancerClearsSenders(t *testing.T) {
	s := createTestService(t)
	test := s.rootToken(t, "test")
	if n := len(s.status(t).SenderAddresses); n != 2 {
		t.Fatalf("%d senders, want 2", n)
	}
	reply, err := s.lc.ResetLoadBalancer(as(test), &pb.ResetLoadBalancerRequest{LbId: s.lbID, Senders: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reply.Senders || reply.Sync || reply.Epochs || reply.Workers {
		t.Errorf("reply %v, want senders alone", reply)
	}
	if n := len(s.status(t).SenderAddresses); n != 0 {
		t.Errorf("%d senders after the reset", n)
	}
}

func TestResetLoadBalancerClearsWorkers(t *testing.T) {
	s := createTestService(t)
	test := s.rootToken(t, "test")
	if len(s.status(t).Workers) == 0 {
		t.Fatal("no sessions")
	}
	reply, err := s.lc.ResetLoadBalancer(as(test), &pb.ResetLoadBalancerRequest{LbId: s.lbID, Workers: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reply.Workers {
		t.Errorf("reply %v, want workers", reply)
	}
	if n := len(s.status(t).Workers); n != 0 {
		t.Errorf("%d sessions after the reset", n)
	}
}

// ExtendReservation

func TestExtendReservationInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.ExtendReservation(invalid, &pb.ExtendReservationRequest{LbId: s.lbID})
	errContains(t, err, "permission")
}

func TestExtendReservationWithUntil(t *testing.T) {
	s := createTestService(t)
	test := s.rootToken(t, "test")
	target := time.Now().Add(2 * time.Hour)
	reply, err := s.lc.ExtendReservation(as(test), &pb.ExtendReservationRequest{LbId: s.lbID,
		Until: &timestamppb.Timestamp{Seconds: target.Unix()}})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Until == nil {
		t.Fatal("no until in the reply")
	}
	if diff := reply.Until.AsTime().Sub(target).Abs(); diff >= 2*time.Second {
		t.Errorf("Expected expiry close to target, got %v difference", diff)
	}
}

// Token hierarchy

// createChildToken is create_child_token: CreateToken with parent's token.
func (s *service) createChildToken(t *testing.T, parent, name string, perms ...*pb.TokenPermission) string {
	t.Helper()
	rep, err := s.lc.CreateToken(as(parent), &pb.CreateTokenRequest{Name: name, Permissions: perms})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Token
}

func globalRead() *pb.TokenPermission {
	return &pb.TokenPermission{ResourceType: pb.ResourceType_ALL, Permission: pb.PermissionType_READ_ONLY}
}

// family is admin → child → grandchild (→ great-grandchild, depth 3),
// each with global READ_ONLY.
func (s *service) family(t *testing.T, depth int) (admin string, line []string) {
	admin = s.rootToken(t, "admin")
	parent := admin
	for _, name := range []string{"child", "grandchild", "great-grandchild"}[:depth] {
		parent = s.createChildToken(t, parent, name, globalRead())
		line = append(line, parent)
	}
	return admin, line
}

func TestListChildTokensDirectParent(t *testing.T) {
	s := createTestService(t)
	admin, line := s.family(t, 1)
	reply, err := s.lc.ListChildTokens(as(admin), &pb.ListChildTokensRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Tokens) != 1 || reply.Tokens[0].Name != "child" {
		t.Errorf("admin's children %v, want child", reply.Tokens)
	}
	reply, err = s.lc.ListChildTokens(as(line[0]), &pb.ListChildTokensRequest{})
	if err != nil || len(reply.Tokens) != 0 {
		t.Errorf("child's children %v, %v; want none", reply.GetTokens(), err)
	}
}

func TestListChildTokensGrandparentSeesAllDescendants(t *testing.T) {
	s := createTestService(t)
	admin, _ := s.family(t, 2)
	reply, err := s.lc.ListChildTokens(as(admin), &pb.ListChildTokensRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tok := range reply.Tokens {
		names = append(names, tok.Name)
	}
	if len(names) != 2 || !strings.Contains(strings.Join(names, ","), "child") || !strings.Contains(strings.Join(names, ","), "grandchild") {
		t.Errorf("descendants %q, want child and grandchild", names)
	}
}

// unrelated is admin → child, admin → unrelated; it returns child's and
// unrelated's tokens.
func (s *service) unrelated(t *testing.T) (child, unrelated string) {
	admin := s.rootToken(t, "admin")
	return s.createChildToken(t, admin, "child", globalRead()), s.createChildToken(t, admin, "unrelated", globalRead())
}

func TestListChildTokensUnrelatedTokenDenied(t *testing.T) {
	s := createTestService(t)
	child, unrelated := s.unrelated(t)
	_, err := s.lc.ListChildTokens(as(unrelated), &pb.ListChildTokensRequest{Target: byID(s.tokenID(t, child))})
	messageContains(t, err, "permission")
}

func TestListTokenPermissionsParentCanViewDescendant(t *testing.T) {
	s := createTestService(t)
	_, line := s.family(t, 2)
	reply, err := s.lc.ListTokenPermissions(as(line[0]), &pb.ListTokenPermissionsRequest{Target: byID(s.tokenID(t, line[1]))})
	if err != nil || reply.Token.Name != "grandchild" {
		t.Errorf("child views grandchild: %v, %v", reply, err)
	}
}

func TestListTokenPermissionsGrandparentCanViewGrandchild(t *testing.T) {
	// As in udplbd2, the viewer is the mid-level (READ_ONLY) ancestor.
	s := createTestService(t)
	_, line := s.family(t, 2)
	reply, err := s.lc.ListTokenPermissions(as(line[0]), &pb.ListTokenPermissionsRequest{Target: byID(s.tokenID(t, line[1]))})
	if err != nil || reply.Token.Name != "grandchild" {
		t.Errorf("ancestor views grandchild: %v, %v", reply, err)
	}
}

func TestListTokenPermissionsUnrelatedTokenDenied(t *testing.T) {
	s := createTestService(t)
	child, unrelated := s.unrelated(t)
	_, err := s.lc.ListTokenPermissions(as(unrelated), &pb.ListTokenPermissionsRequest{Target: byID(s.tokenID(t, child))})
	messageContains(t, err, "permission")
}

func TestRevokeTokenGrandparentCanRevokeGrandchild(t *testing.T) {
	s := createTestService(t)
	_, line := s.family(t, 2)
	if _, err := s.lc.RevokeToken(as(line[0]), &pb.RevokeTokenRequest{Target: byID(s.tokenID(t, line[1]))}); err != nil {
		t.Fatalf("Parent should be able to revoke child: %v", err)
	}
	if s.tokenID(t, line[1]) != 0 {
		t.Error("Grandchild token should be revoked")
	}
}

func TestRevokeTokenAncestorCanRevokeDeepDescendant(t *testing.T) {
	s := createTestService(t)
	_, line := s.family(t, 3)
	if _, err := s.lc.RevokeToken(as(line[0]), &pb.RevokeTokenRequest{Target: byID(s.tokenID(t, line[2]))}); err != nil {
		t.Fatalf("Ancestor should be able to revoke deep descendant: %v", err)
	}
	if s.tokenID(t, line[2]) != 0 {
		t.Error("Great-grandchild token should be revoked")
	}
}

func TestRevokeTokenUnrelatedTokenDenied(t *testing.T) {
	s := createTestService(t)
	child, unrelated := s.unrelated(t)
	_, err := s.lc.RevokeToken(as(unrelated), &pb.RevokeTokenRequest{Target: byID(s.tokenID(t, child))})
	messageContains(t, err, "permission")
}

func TestRevokeTokenChildCannotRevokeParent(t *testing.T) {
	s := createTestService(t)
	admin, line := s.family(t, 1)
	_, err := s.lc.RevokeToken(as(line[0]), &pb.RevokeTokenRequest{Target: byID(s.tokenID(t, admin))})
	messageContains(t, err, "permission")
}

// ChainLoadBalancer / UnchainLoadBalancer

func chainRequest(lbID, uri string, family pb.IpFamily) *pb.ChainLoadBalancerRequest {
	return &pb.ChainLoadBalancerRequest{LbId: lbID, EjfatUri: uri, IpFamily: family, Weight: 1, MinFactor: 0.5, MaxFactor: 2}
}

func TestChainLoadBalancerInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.ChainLoadBalancer(invalid, chainRequest(s.lbID, "ejfat://token@host:18347/lb/1", pb.IpFamily_IPV4))
	errContains(t, err, "permission")
}

func TestChainLoadBalancerDualStackRejected(t *testing.T) {
	s := createTestService(t)
	test := s.rootToken(t, "test")
	_, err := s.lc.ChainLoadBalancer(as(test), chainRequest(s.lbID, "ejfat://token@host:18347/lb/1", pb.IpFamily_DUAL_STACK))
	messageContains(t, err, "DUAL_STACK")
}

func TestChainLoadBalancerInvalidEjfatUri(t *testing.T) {
	s := createTestService(t)
	test := s.rootToken(t, "test")
	if _, err := s.lc.ChainLoadBalancer(as(test), chainRequest(s.lbID, "not-a-valid-uri", pb.IpFamily_IPV4)); err == nil {
		t.Error("a chain to not-a-valid-uri succeeded")
	}
}

func TestChainLoadBalancerMissingLbIdInUri(t *testing.T) {
	s := createTestService(t)
	test := s.rootToken(t, "test")
	_, err := s.lc.ChainLoadBalancer(as(test), chainRequest(s.lbID, "ejfat://token@host:18347", pb.IpFamily_IPV4))
	messageContains(t, err, "load balancer ID")
}

func TestUnchainLoadBalancerInvalidToken(t *testing.T) {
	s := createTestService(t)
	_, err := s.lc.UnchainLoadBalancer(invalid, &pb.UnchainLoadBalancerRequest{LbId: s.lbID, ChainId: "1"})
	errContains(t, err, "permission")
}

func TestUnchainLoadBalancerWrongReservation(t *testing.T) {
	// udplbd2 writes the chain into its database; here it is made by
	// chaining to an LB on a second CP.
	s := createTestService(t)
	test := s.rootToken(t, "test")
	chainID := chainToUpstream(t, s, test)
	if _, err := s.lc.UnchainLoadBalancer(as(test), &pb.UnchainLoadBalancerRequest{LbId: "99999", ChainId: chainID}); err == nil {
		t.Error("unchaining with another reservation's id succeeded")
	}
}

// chainToUpstream reserves an LB on another CP and chains s's LB to it,
// returning the chain's id.
func chainToUpstream(t *testing.T, s *service, token string) string {
	t.Helper()
	up := startCP(t, cpConfig())
	res, err := client(t, up).ReserveLoadBalancer(as(up.admin), &pb.ReserveLoadBalancerRequest{Name: "upstream"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.lc.ChainLoadBalancer(as(token), chainRequest(s.lbID, res.EjfatUri, pb.IpFamily_IPV4))
	if err != nil {
		t.Fatal(err)
	}
	return rep.ChainId
}

func TestUnchainLoadBalancerNonexistentChain(t *testing.T) {
	s := createTestService(t)
	test := s.rootToken(t, "test")
	_, err := s.lc.UnchainLoadBalancer(as(test), &pb.UnchainLoadBalancerRequest{LbId: s.lbID, ChainId: "99999"})
	messageContains(t, err, "not found")
}

// IP validation

// register registers ip. udplbd2's tests give portRange 100, which is no
// PortRange (udplbd2 stores it as it is; nsc refuses it, INVALID_ARGUMENT):
// these use PORT_RANGE_1.
func register(s *service, token, name, ip string) error {
	_, err := s.lc.Register(as(token), &pb.RegisterRequest{LbId: s.lbID, Name: name, IpAddress: ip, UdpPort: 8000,
		PortRange: pb.PortRange_PORT_RANGE_1, Weight: 1, MaxFactor: 1})
	return err
}

func TestRegisterIpValidationLoopbackDenied(t *testing.T) {
	cfg := cpConfig()
	cfg.DenyLoopback = true
	s, test := createTestServiceWithConfig(t, cfg)
	messageContains(t, register(s, test, "test-session-v4", "127.0.0.1"), "loopback")
	messageContains(t, register(s, test, "test-session-v6", "::1"), "loopback")
}

func TestRegisterIpValidationPrivateDenied(t *testing.T) {
	cfg := cpConfig()
	cfg.DenyPrivate = true
	s, test := createTestServiceWithConfig(t, cfg)
	for _, ip := range []string{"10.0.0.1", "10.255.255.254", "172.16.0.1", "172.31.255.254", "192.168.1.1",
		"192.168.255.254", "100.64.0.1", "100.127.255.254", "169.254.0.1", "169.254.255.254", "192.0.2.1",
		"198.51.100.1", "203.0.113.1", "198.18.0.1", "198.19.255.254", "fc00::1",
		"fdff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", "fe80::1", "febf:ffff:ffff:ffff:ffff:ffff:ffff:fffe", "2001:db8::1"} {
		err := register(s, test, "test-session-"+strings.NewReplacer(":", "-", ".", "-").Replace(ip), ip)
		if err == nil {
			t.Errorf("Registration should fail for %s", ip)
			continue
		}
		messageContains(t, err, "private")
	}
}

// registerAllowed is the Rust tests' check: a refusal may only be about
// the MAC address lookup (udplbd2 looks one up; nsc does not).
func registerAllowed(t *testing.T, s *service, token, ip string) {
	t.Helper()
	err := register(s, token, "test-session-"+strings.NewReplacer(":", "-", ".", "-").Replace(ip), ip)
	if err != nil && !strings.Contains(strings.ToLower(status.Convert(err).Message()), "mac") {
		t.Errorf("Error should be about MAC address lookup, not IP validation, for %s: %v", ip, err)
	}
}

func TestRegisterIpValidationPrivateAllowed(t *testing.T) {
	s, test := createTestServiceWithConfig(t, cpConfig())
	for _, ip := range []string{"10.0.0.1", "172.16.0.1", "192.168.1.100", "fc00::1", "fe80::1"} {
		registerAllowed(t, s, test, ip)
	}
}

func TestRegisterIpValidationPublicAllowed(t *testing.T) {
	cfg := cpConfig()
	cfg.DenyLoopback, cfg.DenyPrivate = true, true
	s, test := createTestServiceWithConfig(t, cfg)
	registerAllowed(t, s, test, "8.8.8.8")
}
