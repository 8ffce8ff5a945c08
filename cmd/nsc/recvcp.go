package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/dragonet-go/nsc/ejfat/cp/client"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/ejfat/reasm"
)

// cpSession is nsc recv's part of the control plane (spec §5): it
// registers the receive ports with a reservation, sends its state every
// interval — the queue's fill, a PID controller's output on it, the
// counters — and deregisters when the run ends.
type cpSession struct {
	addr, token, tokenFile, lb, name string
	weight, minFactor, maxFactor     float64
	keepLB                           bool
	every                            time.Duration
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
	fs.Float64Var(&c.pid.setPoint, "set-point", 0.5, "--cp: the queue fill the PID steers to")
	fs.Float64Var(&c.pid.kp, "kp", 0, "--cp: the PID's proportional gain (E2SAR's default 0)")
	fs.Float64Var(&c.pid.ki, "ki", 0, "--cp: the PID's integral gain")
	fs.Float64Var(&c.pid.kd, "kd", 0, "--cp: the PID's derivative gain")
}

// start registers the ports from first and sends state until the
// returned function, which deregisters, is called.
func (c *cpSession) start(e *env, first netip.AddrPort, ports int, state func() (reasm.Stats, float64)) (stop func(), err error) {
	if c.lb == "" {
		return nil, usagef("--cp needs --lb (the reservation to register with)")
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
	session := cl.WithToken(reg.Token)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(c.every)
		defer tick.Stop()
		failed := false
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			s, fill := state()
			err := session.SendState(context.Background(), &pb.SendStateRequest{LbId: c.lb, SessionId: reg.SessionId,
				FillPercent: float32(fill), ControlSignal: float32(c.pid.update(fill, c.every.Seconds())), IsReady: true,
				TotalEventsRecv: int64(s.Received), TotalEventsReassembled: int64(s.Reassembled),
				TotalEventsReassemblyErr: int64(s.Errors()), TotalEventsDequeued: int64(s.Dequeued),
				TotalEventEnqueueErr: int64(s.EnqueueErrors), TotalBytesRecv: int64(s.Bytes), TotalPacketsRecv: int64(s.Packets)})
			if err != nil && !failed {
				fmt.Fprintf(e.stderr, "nsc recv: send state: %v (goes on trying)\n", err)
			}
			failed = err != nil
		}
	})
	return func() {
		close(done)
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := session.Deregister(ctx, c.lb, reg.SessionId); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(e.stderr, "nsc recv: deregister: %v\n", err)
		}
		cl.Close()
	}, nil
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
