package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/client"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/ejfat/reasm"
)

// cpSession is nsc recv's part of the control plane (spec §5): it
// registers the receive ports with a reservation, sends its state every
// interval — the queue's fill, a PID controller's output on it, the
// counters — and, when the run ends, leaves (a signal: without losing an
// event, see leave) and deregisters.
type cpSession struct {
	addr, token, tokenFile, lb, name string
	weight, minFactor, maxFactor     float64
	keepLB                           bool
	every, drain                     time.Duration
	pid                              pid
}

func (c *cpSession) flags(fs *flag.FlagSet) {
	host, _ := os.Hostname()
	fs.StringVar(&c.addr, "cp", "", "a control plane's gRPC address: register with --lb there and send state")
	fs.StringVar(&c.token, "token", "", "--cp: the reservation's token (else --token-file, else $NSC_TOKEN)")
	fs.StringVar(&c.tokenFile, "token-file", "", "--cp: a file holding the token")
	fs.StringVar(&c.lb, "lb", "", "--cp: the reservation (lbId) to register with")
	fs.StringVar(&c.name, "name", host, "--cp: the receiver's name")
	fs.Float64Var(&c.weight, "weight", 1, "--cp: the receiver's weight")
	fs.Float64Var(&c.minFactor, "min-factor", 0, "--cp: the least share, a factor of the even share")
	fs.Float64Var(&c.maxFactor, "max-factor", 0, "--cp: the largest share, a factor of the even share (0: none)")
	fs.BoolVar(&c.keepLB, "keep-lb-header", false, "--cp: ask for the LB header")
	fs.DurationVar(&c.every, "state-every", 100*time.Millisecond, "--cp: how often to send state")
	fs.DurationVar(&c.drain, "drain", 30*time.Second, "--cp: at SIGINT or SIGTERM, how long at most to go on receiving until no event can still come (a second signal stops at once)")
	fs.Float64Var(&c.pid.setPoint, "set-point", 0.5, "--cp: the queue fill the PID steers to")
	fs.Float64Var(&c.pid.kp, "kp", 0, "--cp: the PID's proportional gain (E2SAR's default 0)")
	fs.Float64Var(&c.pid.ki, "ki", 0, "--cp: the PID's integral gain")
	fs.Float64Var(&c.pid.kd, "kd", 0, "--cp: the PID's derivative gain")
}

// cpLink is a registered session: its state goes to the control plane
// every interval until stop.
type cpLink struct {
	*cpSession
	e        *env
	cl       *client.Client // the --token's: reads the reservation's status
	session  *client.Client // the session's token
	id       string
	state    func() (reasm.Stats, float64)
	notReady atomic.Bool // leaving: SendState says isReady false
	done     chan struct{}
	wg       sync.WaitGroup
}

// start registers the ports from first and sends state until the link's
// stop, which deregisters.
func (c *cpSession) start(e *env, first netip.AddrPort, ports int, state func() (reasm.Stats, float64)) (*cpLink, error) {
	if c.lb == "" {
		return nil, usagef("--cp needs --lb (the reservation to register with)")
	}
	if c.drain <= 0 {
		return nil, usagef("--drain %v: must be positive", c.drain)
	}
	token, err := lbctlToken(c.token, c.tokenFile)
	if err != nil {
		return nil, err
	}
	cl, err := client.Dial(c.addr, token, "")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg, err := cl.Register(ctx, &pb.RegisterRequest{LbId: c.lb, Name: c.name, IpAddress: first.Addr().String(),
		UdpPort: uint32(first.Port()), PortRange: pb.PortRange(bits.TrailingZeros(uint(ports))), Weight: float32(c.weight),
		MinFactor: float32(c.minFactor), MaxFactor: float32(c.maxFactor), KeepLbHeader: c.keepLB})
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("register with %s: %w", c.addr, err)
	}
	fmt.Fprintf(e.stdout, "registered with %s as session %s of %s\n", c.addr, reg.SessionId, c.lb)
	l := &cpLink{cpSession: c, e: e, cl: cl, session: cl.WithToken(reg.Token), id: reg.SessionId, state: state,
		done: make(chan struct{})}
	l.wg.Go(l.sendState)
	return l, nil
}

// sendState sends the state every interval until stop.
func (l *cpLink) sendState() {
	tick := time.NewTicker(l.every)
	defer tick.Stop()
	failed := false
	for {
		select {
		case <-l.done:
			return
		case <-tick.C:
		}
		s, fill := l.state()
		err := l.session.SendState(context.Background(), &pb.SendStateRequest{LbId: l.lb, SessionId: l.id,
			FillPercent: float32(fill), ControlSignal: float32(l.pid.update(fill, l.every.Seconds())), IsReady: !l.notReady.Load(),
			TotalEventsRecv: int64(s.Received), TotalEventsReassembled: int64(s.Reassembled),
			TotalEventsReassemblyErr: int64(s.Errors()), TotalEventsDequeued: int64(s.Dequeued),
			TotalEventEnqueueErr: int64(s.EnqueueErrors), TotalBytesRecv: int64(s.Bytes), TotalPacketsRecv: int64(s.Packets)})
		if err != nil && !failed {
			fmt.Fprintf(l.e.stderr, "nsc recv: send state: %v (goes on trying)\n", err)
		}
		failed = err != nil
	}
}

// stop ends the state reports and deregisters.
func (l *cpLink) stop() {
	close(l.done)
	l.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.session.Deregister(ctx, l.lb, l.id); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(l.e.stderr, "nsc recv: deregister: %v\n", err)
	}
	l.cl.Close()
}

// leave takes the receiver out of the calendars without losing an event:
// it reports not ready (as E2SAR's receivers do), waits until the newest
// epoch gives it no slots, then until the control plane says that epoch
// is in force (no event can still go by an older calendar), then until
// its last events are complete or timed out and no datagram came for one
// state interval. It returns then, after --drain at most, or at once when
// hurry ends; progress goes to stderr. The caller stops receiving and
// then calls stop.
func (l *cpLink) leave(hurry context.Context) {
	v := leaving{id: l.id, start: time.Now(), e: l.e}
	l.notReady.Store(true)
	v.say("reported not ready; receiving until an epoch without this receiver is in force (at most %v; a second signal stops at once)", l.drain)
	deadline := time.NewTimer(l.drain)
	defer deadline.Stop()
	tick := time.NewTicker(l.every)
	defer tick.Stop()
	inForce, failed := false, false
	var packets uint64
	for {
		select {
		case <-l.done: // the run ended otherwise (--duration)
			return
		case <-hurry.Done():
			v.say("stopped by a second signal after %.1fs", time.Since(v.start).Seconds())
			return
		case <-deadline.C:
			v.say("--drain %v passed before the last events were in", l.drain)
			return
		case <-tick.C:
		}
		if !inForce {
			ctx, cancel := context.WithTimeout(hurry, l.every+time.Second)
			st, err := l.cl.Status(ctx, l.lb)
			cancel()
			if err != nil && !failed {
				v.say("status: %v (goes on trying)", err)
			}
			if failed = err != nil; failed || !v.inForce(st) {
				continue
			}
			inForce = true
		}
		s, _ := l.state()
		if s.Received == s.Reassembled+s.Errors() && s.Packets == packets {
			v.say("every event in is complete or timed out after %.1fs", time.Since(v.start).Seconds())
			return
		}
		packets = s.Packets
	}
}

// leaving is a receiver on its way out of the calendars.
type leaving struct {
	id      string // the session
	start   time.Time
	e       *env
	without uint64 // the first epoch without it; 0: none seen yet
}

func (v *leaving) say(format string, args ...any) {
	fmt.Fprintf(v.e.stderr, "nsc recv: leaving: "+format+"\n", args...)
}

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

// pid is a PID controller on the queue's fill against a set point, as
// E2SAR's receivers run it; its output is the control signal.
type pid struct {
	setPoint, kp, ki, kd float64
	integral, last       float64
}

func (p *pid) update(fill, dt float64) float64 {
	err := p.setPoint - fill
	p.integral += err * dt
	d := (err - p.last) / dt
	p.last = err
	return p.kp*err + p.ki*p.integral + p.kd*d
}
