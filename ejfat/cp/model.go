// Package cp is nsc's EJFAT control plane: the loadbalancer.LoadBalancer
// gRPC service (wire-compatible with udplbd2, so E2SAR senders and receivers
// work against it unchanged), its SQLite store, tokens and permissions, the
// per-instance sync UDP servers, Prometheus metrics and a read-only
// dashboard. The calendars and epoch boundaries come from an Epocher.
package cp

import (
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/pb"
)

// Slots is the calendar size of every LB instance (slotResolution).
const Slots = 512

// Reservation is a reserved LB instance. Its ID is the lbId; IDs are never
// reused, so tokens for a freed reservation grant nothing on a later one.
type Reservation struct {
	ID       int64
	Instance int // which of the CP's LB instances (fpgaLbId)
	Name     string
	Strategy string // dynamic, static or explicit
	IPFamily pb.IpFamily
	Created  time.Time
	Until    time.Time // zero: no expiry
	Senders  []string  // sorted
	Token    int64     // the token made at reservation
}

// Expired says whether r's reservation has ended at now.
func (r *Reservation) Expired(now time.Time) bool {
	return !r.Until.IsZero() && !now.Before(r.Until)
}

// Session is a registered receiver (a worker).
type Session struct {
	ID           int64
	Reservation  int64
	Name         string
	Weight       float32
	IP           string
	Port         uint32
	PortRange    pb.PortRange
	MinFactor    float32
	MaxFactor    float32 // 0: no maximum
	KeepLBHeader bool
	Demands      []SlotRange
	Created      time.Time
	State        *State // the latest SendState; nil before the first
	Token        int64  // the token made at registration
}

// LastSeen is when the session last reported, or registered.
func (s *Session) LastSeen() time.Time {
	if s.State != nil {
		return s.State.Time
	}
	return s.Created
}

// SlotRange is a run of calendar slots.
type SlotRange struct {
	Index  int32 // -1: the first free one
	Length uint32
}

// State is one SendState sample, timed when the CP received it.
type State struct {
	Time          time.Time
	Reported      time.Time // the receiver's timestamp; zero if it sent none
	Fill          float32
	Control       float32
	Ready         bool
	EventsRecv    int64
	Reassembled   int64
	ReassemblyErr int64
	Dequeued      int64
	EnqueueErr    int64
	Bytes         int64
	Packets       int64
}

// Updated is when the state was taken: the receiver's timestamp, else
// when the CP received it (WorkerStatus.lastUpdated).
func (s *State) Updated() time.Time {
	if s.Reported.IsZero() {
		return s.Time
	}
	return s.Reported
}

// Epoch is one calendar of a reservation, valid from event number Boundary.
type Epoch struct {
	Number   uint64
	Boundary uint64
	Created  time.Time
	Calendar []int64 // Slots session IDs; 0: the slot drops
}

// SyncSample is one sync message from a sender.
type SyncSample struct {
	Time       time.Time // when the CP received it
	Source     uint32
	Event      uint64
	Rate       uint32 // events/s
	SenderTime int64  // the sender's clock, Unix ns
}

// Token is an access token; only its hash is stored.
type Token struct {
	ID      int64
	Name    string
	Parent  int64 // 0: none (the admin token)
	Created time.Time
	Perms   []Permission
}

// Permission is a level on a resource. LOAD_BALANCER and RESERVATION name
// the same thing here: a reservation's ID is its lbId.
type Permission struct {
	Resource pb.ResourceType
	ID       string
	Level    pb.PermissionType
}
