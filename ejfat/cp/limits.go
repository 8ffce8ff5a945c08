package cp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Bounds on what one request may carry, so that what the CP keeps — and
// so every reply and /metrics — stays bounded: names, addresses, ids and
// selectors are short, and lists (sender addresses, slot ranges,
// permissions, selectors) are not long. At the default Limits, the
// Status of an LB filled to every limit is about a tenth of gRPC's
// default 4 MB (TestRepliesBoundedAtLimits), so an Overview of 8 fits.
const (
	MaxString     = 256  // bytes of any string in a request
	MaxList       = 1024 // entries of any repeated field in a request
	MaxSlotRanges = 64   // entries of a list of slot ranges (a session's demands)
)

// Limits bound what clients may make. Zero fields take the defaults.
type Limits struct {
	Sessions         int // sessions per LB; default 512 (a calendar's slots)
	TokenChildren    int // children per token; default 1000
	TokenDescendants int // descendants per token but the admin (a root); default 10,000
	TokenDepth       int // levels below the admin; default 16
	Senders          int // sender addresses per LB; default MaxList
}

// DefaultLimits are the limits a zero Limits takes.
func DefaultLimits() Limits {
	var l Limits
	l.defaults()
	return l
}

func (l *Limits) defaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.Sessions, Slots)
	def(&l.TokenChildren, 1000)
	def(&l.TokenDescendants, 10_000)
	def(&l.TokenDepth, 16)
	def(&l.Senders, MaxList)
}

// ErrLimit is a limit reached; the server answers RESOURCE_EXHAUSTED.
var ErrLimit = errors.New("limit reached")

func limitf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrLimit}, args...)...)
}

// checkRequest is the server's innermost interceptor: it refuses requests
// with strings or lists beyond the bounds, and a Register whose member
// address cannot receive unicast, with INVALID_ARGUMENT before the
// handler runs.
func (c *CP) checkRequest(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok {
		if err := bounded(m.ProtoReflect(), ""); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	if r, ok := req.(*pb.RegisterRequest); ok {
		if err := memberAddr(r.IpAddress); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "ipAddress %q: %v", r.IpAddress, err)
		}
	}
	return handler(ctx, req)
}

// bounded checks m's strings, bytes and lists, and those of the messages
// in it, against MaxString and MaxList; path names the field.
func bounded(m protoreflect.Message, path string) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := path + fd.JSONName()
		switch {
		case fd.IsMap():
			err = fmt.Errorf("%s: a map", name) // no request has one
		case fd.IsList():
			l, most := v.List(), MaxList
			if fd.Message() != nil && fd.Message().Name() == "SlotRange" {
				most = MaxSlotRanges
			}
			if l.Len() > most {
				err = fmt.Errorf("%s: %d entries, at most %d", name, l.Len(), most)
				break
			}
			for i := 0; i < l.Len() && err == nil; i++ {
				err = boundedValue(fd, l.Get(i), fmt.Sprintf("%s[%d]", name, i))
			}
		default:
			err = boundedValue(fd, v, name)
		}
		return err == nil
	})
	return err
}

func boundedValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, name string) error {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if n := len(v.String()); n > MaxString {
			return fmt.Errorf("%s: %d bytes, at most %d", name, n, MaxString)
		}
	case protoreflect.BytesKind:
		if n := len(v.Bytes()); n > MaxString {
			return fmt.Errorf("%s: %d bytes, at most %d", name, n, MaxString)
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return bounded(v.Message(), name+".")
	}
	return nil
}

// memberAddr refuses an address a member cannot receive unicast at: the
// unspecified addresses, broadcast, multicast, and IPv4's "this network"
// (0/8) and reserved (240/4) blocks, also as IPv4-mapped IPv6.
func memberAddr(s string) error {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return err
	}
	a = a.Unmap()
	switch {
	case a.IsUnspecified():
		return errors.New("unspecified")
	case a.IsMulticast():
		return errors.New("multicast")
	case a.Is4() && a.As4()[0] == 0:
		return errors.New(`in 0.0.0.0/8 ("this network")`)
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return errors.New("broadcast")
	case a.Is4() && a.As4()[0] >= 240:
		return errors.New("in 240.0.0.0/4 (reserved)")
	}
	return nil
}

// senderRoom says whether LB id may have addrs as senders too; the
// Store's mu is held.
func (s *Store) senderRoom(id int64, addrs []string) error {
	if n := len(sortedUnique(append(slices.Clone(s.res[id].Senders), addrs...))); n > s.limits.Senders {
		return limitf("LB %d would have %d senders, more than %d", id, n, s.limits.Senders)
	}
	return nil
}
