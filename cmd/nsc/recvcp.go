package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/ejfat/recvcp"
)

// cpSession is nsc recv's --cp flags: the receiver registers with the
// control plane and reports its state (ejfat/recvcp).
type cpSession struct {
	recvcp.Config
	tokenFile string
}

func (c *cpSession) flags(fs *flag.FlagSet) {
	host, _ := os.Hostname()
	fs.StringVar(&c.Addr, "cp", "", "a control plane's gRPC address: register with --lb there and send state")
	fs.StringVar(&c.Token, "token", "", "--cp: the reservation's token (else --token-file, else $NSC_TOKEN)")
	fs.StringVar(&c.tokenFile, "token-file", "", "--cp: a file holding the token")
	fs.StringVar(&c.LB, "lb", "", "--cp: the reservation (lbId) to register with")
	fs.StringVar(&c.Name, "name", host, "--cp: the receiver's name")
	fs.Float64Var(&c.Weight, "weight", 1, "--cp: the receiver's weight")
	fs.Float64Var(&c.MinFactor, "min-factor", 0, "--cp: the least share, a factor of the even share")
	fs.Float64Var(&c.MaxFactor, "max-factor", 0, "--cp: the largest share, a factor of the even share (0: none)")
	fs.BoolVar(&c.KeepLB, "keep-lb-header", false, "--cp: ask for the LB header")
	fs.DurationVar(&c.Every, "state-every", 100*time.Millisecond, "--cp: how often to send state")
	fs.DurationVar(&c.Drain, "drain", 30*time.Second, "--cp: at SIGINT or SIGTERM, how long at most to go on receiving until no event can still come (a second signal stops at once)")
	fs.Float64Var(&c.PID.SetPoint, "set-point", 0.5, "--cp: the queue fill the PID steers to")
	fs.Float64Var(&c.PID.Kp, "kp", 0, "--cp: the PID's proportional gain (E2SAR's default 0)")
	fs.Float64Var(&c.PID.Ki, "ki", 0, "--cp: the PID's integral gain")
	fs.Float64Var(&c.PID.Kd, "kd", 0, "--cp: the PID's derivative gain")
}

// start registers the ports from first and sends state until the
// session's Stop, which deregisters.
func (c *cpSession) start(e *env, first netip.AddrPort, ports int, state func() (reasm.Stats, float64)) (*recvcp.Session, error) {
	if c.LB == "" {
		return nil, usagef("--cp needs --lb (the reservation to register with)")
	}
	if c.Drain <= 0 {
		return nil, usagef("--drain %v: must be positive", c.Drain)
	}
	if c.Every <= 0 {
		return nil, usagef("--state-every %v: must be positive", c.Every)
	}
	cfg := c.Config
	var err error
	if cfg.Token, err = lbctlToken(c.Token, c.tokenFile); err != nil {
		return nil, err
	}
	cfg.Log = func(format string, args ...any) { fmt.Fprintf(e.stderr, "nsc recv: "+format+"\n", args...) }
	s, err := recvcp.Register(cfg, first, ports, state)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(e.stdout, "registered with %s as session %s of %s\n", c.Addr, s.ID(), c.LB)
	return s, nil
}
