// Package recvcp is an EJFAT receiver's part of the control plane (spec
// ejfat-reassembly.md §5), as nsc recv --cp runs it: Register registers
// the receive ports with a reservation and sends the receiver's state
// every interval — the queue's fill, a PID controller's output on it, the
// reassembler's counters — until Stop, which deregisters; Leave takes
// the receiver out of the calendars first without losing an event.
//
// What goes in: a control plane's address and a reservation's token, the
// receiver's first port and port range, and a function that reads its
// counters and fill. What comes out: progress and errors through
// Config.Log; a control plane that cannot be reached fails Register, one
// that stops answering later is logged and tried again.
package recvcp

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/client"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/ejfat/reasm"
)

// Config is a receiver's registration and how it reports.
type Config struct {
	Addr, Token, LB, Name        string // the control plane, the reservation's token and id, the receiver's name
	Weight, MinFactor, MaxFactor float64
	KeepLB                       bool          // ask for the LB header
	Every                        time.Duration // between state reports
	Drain                        time.Duration // Leave's longest wait
	PID                          PID
	// Log prints a line of progress or an error (nil: nowhere).
	Log func(format string, args ...any)
}

// Session is a registered receiver: its state goes to the control plane
// every Config.Every until Stop.
type Session struct {
	cfg      Config
	cl       *client.Client // the Config.Token's: reads the reservation's status
	session  *client.Client // the session's token
	id       string
	state    func() (reasm.Stats, float64)
	notReady atomic.Bool // leaving: SendState says isReady false
	done     chan struct{}
	wg       sync.WaitGroup
}

// Register registers the ports first to first+ports-1 (ports a power of
// 2) and sends what state returns (the counters and the queue's fill)
// until Stop.
func Register(cfg Config, first netip.AddrPort, ports int, state func() (reasm.Stats, float64)) (*Session, error) {
	if cfg.Every <= 0 || cfg.Drain <= 0 {
		return nil, fmt.Errorf("recvcp: state interval %v and drain %v must be positive", cfg.Every, cfg.Drain)
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	cl, err := client.Dial(cfg.Addr, cfg.Token, "")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg, err := cl.Register(ctx, &pb.RegisterRequest{LbId: cfg.LB, Name: cfg.Name, IpAddress: first.Addr().String(),
		UdpPort: uint32(first.Port()), PortRange: pb.PortRange(bits.TrailingZeros(uint(ports))), Weight: float32(cfg.Weight),
		MinFactor: float32(cfg.MinFactor), MaxFactor: float32(cfg.MaxFactor), KeepLbHeader: cfg.KeepLB})
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("register with %s: %w", cfg.Addr, err)
	}
	s := &Session{cfg: cfg, cl: cl, session: cl.WithToken(reg.Token), id: reg.SessionId, state: state, done: make(chan struct{})}
	s.wg.Go(s.sendState)
	return s, nil
}

// ID is the session's id at the control plane.
func (s *Session) ID() string { return s.id }

// sendState sends the state every interval until Stop.
func (s *Session) sendState() {
	tick := time.NewTicker(s.cfg.Every)
	defer tick.Stop()
	failed := false
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		st, fill := s.state()
		err := s.session.SendState(context.Background(), &pb.SendStateRequest{LbId: s.cfg.LB, SessionId: s.id,
			FillPercent: float32(fill), ControlSignal: float32(s.cfg.PID.Update(fill, s.cfg.Every.Seconds())), IsReady: !s.notReady.Load(),
			TotalEventsRecv: int64(st.Received), TotalEventsReassembled: int64(st.Reassembled),
			TotalEventsReassemblyErr: int64(st.Errors()), TotalEventsDequeued: int64(st.Dequeued),
			TotalEventEnqueueErr: int64(st.EnqueueErrors), TotalBytesRecv: int64(st.Bytes), TotalPacketsRecv: int64(st.Packets)})
		if err != nil && !failed {
			s.cfg.Log("send state: %v (goes on trying)", err)
		}
		failed = err != nil
	}
}

// Stop ends the state reports and deregisters.
func (s *Session) Stop() {
	close(s.done)
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.session.Deregister(ctx, s.cfg.LB, s.id); err != nil && !errors.Is(err, context.Canceled) {
		s.cfg.Log("deregister: %v", err)
	}
	s.cl.Close()
}

// Leave takes the receiver out of the calendars without losing an event:
// it reports not ready (as E2SAR's receivers do), waits until the newest
// epoch gives it no slots, then until the control plane says that epoch
// is in force (no event can still go by an older calendar), then until
// its last events are complete or timed out and no datagram came for one
// state interval. It returns then, after Config.Drain at most, or at once
// when hurry ends or Stop is called; progress goes to Config.Log. The
// caller stops receiving and then calls Stop.
func (s *Session) Leave(hurry context.Context) {
	v := leaving{id: s.id, start: time.Now(), log: s.cfg.Log}
	s.notReady.Store(true)
	v.say("reported not ready; receiving until an epoch without this receiver is in force (at most %v; a second signal stops at once)", s.cfg.Drain)
	deadline := time.NewTimer(s.cfg.Drain)
	defer deadline.Stop()
	tick := time.NewTicker(s.cfg.Every)
	defer tick.Stop()
	inForce, failed := false, false
	var packets uint64
	for {
		select {
		case <-s.done: // the run ended otherwise
			return
		case <-hurry.Done():
			v.say("stopped by a second signal after %.1fs", time.Since(v.start).Seconds())
			return
		case <-deadline.C:
			v.say("--drain %v passed before the last events were in", s.cfg.Drain)
			return
		case <-tick.C:
		}
		if !inForce {
			ctx, cancel := context.WithTimeout(hurry, s.cfg.Every+time.Second)
			st, err := s.cl.Status(ctx, s.cfg.LB)
			cancel()
			if err != nil && !failed {
				v.say("status: %v (goes on trying)", err)
			}
			if failed = err != nil; failed || !v.inForce(st) {
				continue
			}
			inForce = true
		}
		st, _ := s.state()
		if st.Received == st.Reassembled+st.Errors() && st.Packets == packets {
			v.say("every event in is complete or timed out after %.1fs", time.Since(v.start).Seconds())
			return
		}
		packets = st.Packets
	}
}

// leaving is a receiver on its way out of the calendars.
type leaving struct {
	id      string // the session
	start   time.Time
	log     func(format string, args ...any)
	without uint64 // the first epoch without it; 0: none seen yet
}

func (v *leaving) say(format string, args ...any) { v.log("leaving: "+format, args...) }

// inForce reads a status reply: whether an epoch without this receiver
// is in force, or none ever sent to it.
func (v *leaving) inForce(st *pb.LoadBalancerStatusReply) bool {
	if v.without == 0 {
		slots, ok := slotsOf(st, v.id)
		switch {
		case !ok || st.CurrentEpoch == 0:
			v.say("no epoch sends to this receiver")
			return true
		case slots > 0:
			return false
		}
		v.without = st.CurrentEpoch
		v.say("epoch %d gives this receiver no slots, from event %d", v.without, st.CurrentPredictedEventNumber)
	}
	if st.EpochInForce < v.without {
		return false
	}
	v.say("epoch %d is in force after %.1fs", st.EpochInForce, time.Since(v.start).Seconds())
	return true
}

// slotsOf is how many slots session id holds in the newest epoch of st,
// and whether st lists it.
func slotsOf(st *pb.LoadBalancerStatusReply, id string) (uint32, bool) {
	for _, w := range st.Workers {
		if strconv.FormatInt(w.SessionId, 10) == id {
			return w.SlotsAssigned, true
		}
	}
	return 0, false
}

// PID is a PID controller on the queue's fill against a set point, as
// E2SAR's receivers run it; its output is the control signal.
type PID struct {
	SetPoint, Kp, Ki, Kd float64
	integral, last       float64
}

// Update takes the fill dt seconds after the last and returns the
// control signal.
func (p *PID) Update(fill, dt float64) float64 {
	err := p.SetPoint - fill
	p.integral += err * dt
	d := (err - p.last) / dt
	p.last = err
	return p.Kp*err + p.Ki*p.integral + p.Kd*d
}
