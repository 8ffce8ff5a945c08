package cp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// CreateToken makes a child of the calling token; it may only grant what
// the caller holds.
func (c *CP) CreateToken(ctx context.Context, req *pb.CreateTokenRequest) (*pb.CreateTokenReply, error) {
	if err := validName(req.Name); err != nil {
		return nil, err
	}
	if caller(ctx).ID == 0 {
		return nil, status.Error(codes.NotFound, "Parent token not found")
	}
	perms := make([]Permission, len(req.Permissions))
	for i, p := range req.Permissions {
		if _, ok := pb.ResourceType_name[int32(p.ResourceType)]; !ok {
			return nil, invalid("resourceType %d", p.ResourceType)
		}
		if _, ok := pb.PermissionType_name[int32(p.Permission)]; !ok {
			return nil, invalid("permission %d", p.Permission)
		}
		if p.ResourceType != pb.ResourceType_ALL {
			if _, err := strconv.ParseInt(p.ResourceId, 10, 64); err != nil {
				return nil, invalid("Resource ID required for %s permission: %q is not an id", p.ResourceType, p.ResourceId)
			}
		}
		perms[i] = Permission{Resource: p.ResourceType, ID: p.ResourceId, Level: p.Permission}
		if p.ResourceType == pb.ResourceType_ALL {
			perms[i].ID = ""
		}
		if err := c.require(ctx, perms[i]); err != nil {
			return nil, err
		}
	}
	_, secret, err := c.store.CreateToken(req.Name, caller(ctx).ID, perms, c.cfg.Now())
	if err != nil {
		return nil, storeErr(err)
	}
	return &pb.CreateTokenReply{Token: secret, EjfatUri: c.ejfatURI(ctx, secret, nil)}, nil
}

// target resolves a token selector (id 0: the caller) to the caller itself
// or one of its descendants, or for a caller holding UPDATE on ALL any
// token (as udplbd2); another token is PERMISSION_DENIED.
func (c *CP) target(ctx context.Context, sel *pb.TokenSelector) (Token, error) {
	me := caller(ctx)
	if me.ID == 0 {
		return Token{}, status.Error(codes.NotFound, "Request token not found")
	}
	var t Token
	var ok bool
	switch {
	case sel.GetToken() != "":
		t, ok = c.store.Authenticate(sel.GetToken())
	case sel.GetId() != 0:
		t, ok = c.store.Token(int64(sel.GetId()))
	default:
		t, ok = me, true
	}
	if !ok {
		return Token{}, status.Error(codes.NotFound, "Token not found")
	}
	admin := c.holds(me, Permission{Resource: pb.ResourceType_ALL, Level: pb.PermissionType_UPDATE})
	if !admin && !c.store.IsAncestorOrSelf(me.ID, t.ID) {
		return Token{}, status.Error(codes.PermissionDenied,
			"Token does not have permission: the target is neither the calling token nor one of its descendants")
	}
	return t, nil
}

func details(t Token) *pb.TokenDetails {
	d := &pb.TokenDetails{Name: t.Name, Id: uint32(t.ID), CreatedAt: t.Created.UTC().Format(time.RFC3339)}
	for _, p := range t.Perms {
		d.Permissions = append(d.Permissions, &pb.TokenPermission{ResourceType: p.Resource, ResourceId: p.ID, Permission: p.Level})
	}
	return d
}

// ListTokenPermissions describes a token.
func (c *CP) ListTokenPermissions(ctx context.Context, req *pb.ListTokenPermissionsRequest) (*pb.ListTokenPermissionsReply, error) {
	t, err := c.target(ctx, req.Target)
	if err != nil {
		return nil, err
	}
	return &pb.ListTokenPermissionsReply{Token: details(t)}, nil
}

// ListChildTokens describes a token's descendants, as udplbd2.
func (c *CP) ListChildTokens(ctx context.Context, req *pb.ListChildTokensRequest) (*pb.ListChildTokensReply, error) {
	t, err := c.target(ctx, req.Target)
	if err != nil {
		return nil, err
	}
	rep := &pb.ListChildTokensReply{}
	for _, ch := range c.store.Descendants(t.ID) {
		rep.Tokens = append(rep.Tokens, details(ch))
	}
	return rep, nil
}

// RevokeToken revokes a token and its descendants.
func (c *CP) RevokeToken(ctx context.Context, req *pb.RevokeTokenRequest) (*pb.RevokeTokenReply, error) {
	t, err := c.target(ctx, req.Target)
	if err != nil {
		return nil, err
	}
	return &pb.RevokeTokenReply{}, storeErr(c.store.Revoke(t.ID))
}

// AdminToken returns the admin token kept in file: read when the file
// exists (and must still authenticate), else created with UPDATE on ALL
// and written there (mode 0600). created says which.
func AdminToken(s *Store, file string, now time.Time) (secret string, created bool, err error) {
	b, err := os.ReadFile(file)
	if err == nil {
		secret = strings.TrimSpace(string(b))
		if _, ok := s.Authenticate(secret); !ok {
			return "", false, fmt.Errorf("%s: not a token of this database", file)
		}
		return secret, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	all := Permission{Resource: pb.ResourceType_ALL, Level: pb.PermissionType_UPDATE}
	t, secret, err := s.CreateToken("admin", 0, []Permission{all}, now)
	if err != nil {
		return "", false, err
	}
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		return "", false, errors.Join(err, s.Revoke(t.ID))
	}
	return secret, true, nil
}

// Descendants returns the tokens below id (children, theirs, …), by ID.
func (s *Store) Descendants(id int64) []Token {
	s.mu.RLock()
	defer s.mu.RUnlock()
	below := map[int64]bool{id: true}
	var out []Token
	// Parents have smaller IDs than their children: one pass in ID order
	// finds every descendant.
	for _, tid := range slices.Sorted(maps.Keys(s.tokens)) {
		if t := s.tokens[tid]; tid != id && below[t.Parent] {
			below[tid] = true
			out = append(out, t.copy())
		}
	}
	return out
}
