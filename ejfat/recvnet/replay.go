package recvnet

import (
	"net/netip"
	"time"

	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/packet/frame"
)

// Replay reassembles a capture as a receiver would have received it
// (nsc recv --in): on the capture's clock, with one reassembler.
type Replay struct {
	// Listen and Ports are the receiver's ports: a datagram to another
	// is skipped (an unspecified address: to any address; Listen not
	// valid: every datagram is the receiver's).
	Listen netip.AddrPort
	Ports  int
	// Timeout is how long after the last frame what is incomplete
	// expires (the reassembler's timeout).
	Timeout time.Duration
	// New makes the reassembler on the clock now.
	New func(now func() time.Time) (Reassembler, error)
	// Deliver takes each complete event; it is released when it returns.
	Deliver func(ev *reasm.Event)
	// Began, if set, is called before each datagram goes in.
	Began func()
}

// Replayed is what a replay counted.
type Replayed struct {
	Stats     reasm.Stats
	LBHeaders uint64 // datagrams with an LB header
	Skipped   uint64 // frames with no whole datagram, or one to other ports
}

// Run reassembles the UDP datagrams of frames (Ethernet) in order, the
// clock at each frame's time, then Timeout past the last, when what is
// incomplete expires.
func (p *Replay) Run(frames []pcapio.Frame) (Replayed, error) {
	var now time.Time
	if len(frames) > 0 {
		now = frames[0].CI.Timestamp
	}
	r, err := p.New(func() time.Time { return now })
	if err != nil {
		return Replayed{}, err
	}
	var out Replayed
	for _, f := range frames {
		now = f.CI.Timestamp
		src, dst, payload, ok := frame.ParseUDP(f.Data)
		if !ok || !p.ours(dst) {
			out.Skipped++
			continue
		}
		if p.Began != nil {
			p.Began()
		}
		b, lb := StripLB(payload)
		if lb {
			out.LBHeaders++
		}
		if r.Datagram(src.Addr(), b) == reasm.Completed {
			Drain(r, p.Deliver)
		}
	}
	now = now.Add(p.Timeout) // the capture ends: what is incomplete is lost
	r.Expire()
	out.Stats = r.Stats()
	return out, nil
}

// ours reports whether dst is one of the receiver's ports.
func (p *Replay) ours(dst netip.AddrPort) bool {
	if !p.Listen.IsValid() {
		return true
	}
	port, first := int(dst.Port()), int(p.Listen.Port())
	return (p.Listen.Addr().IsUnspecified() || dst.Addr() == p.Listen.Addr()) && port >= first && port < first+p.Ports
}
