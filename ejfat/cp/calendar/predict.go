package calendar

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Sample is one sync message (ejfat-reassembly.md §2) as the CP got it.
type Sample struct {
	EventNumber uint64 // the latest event number the sender sent
	RateHz      uint32 // the sender's average event rate
	SenderClock int64  // the sender's Unix clock, ns
	Received    int64  // the CP's Unix clock on receipt, ns
}

// Window is how many recent samples of a sender prediction uses.
const Window = 10

// maxDelayCorrection bounds how much earlier than its receipt a sample
// counts as taken (see anchor), so that a sender clock that is garbage
// cannot push a boundary far ahead.
const maxDelayCorrection = 100 * time.Millisecond

// Method is how a sender's event rate is estimated.
type Method uint8

const (
	// Steepest takes the larger of the least-squares slope over the
	// window and the slope of the last interval, the latter scaled up by
	// how much it rose over the interval before: the fit smooths jitter,
	// the last interval sees a rate increase a whole window earlier, and
	// a rate that rose is taken to keep rising for one more interval.
	// It is the default: TestPredictionMethods shows the other two
	// falling behind events already sent when rates change.
	Steepest Method = iota
	// RateElapsed is udplbd2's rate × time since the last sample (to the
	// nanosecond, where udplbd2 truncates to whole seconds).
	RateElapsed
	// LeastSquares is the slope of a least-squares fit of event number
	// against receipt time over the window.
	LeastSquares
)

func (m Method) String() string {
	switch m {
	case Steepest:
		return "steepest"
	case RateElapsed:
		return "rate×elapsed"
	case LeastSquares:
		return "least squares"
	}
	return fmt.Sprintf("method(%d)", uint8(m))
}

// ErrNoSamples: no sender has sent a sync message.
var ErrNoSamples = errors.New("no sync samples")

// Predictor predicts an LB instance's next epoch boundary from its
// senders' sync messages. The zero value predicts with Steepest, no lead
// and no guard. It is not safe for concurrent use.
type Predictor struct {
	Method Method
	// Lead is how long after now the epoch is to start: at least the time
	// the data plane takes to install it (udplbd2: about 800 ms).
	Lead time.Duration
	// Guard adds this much time's worth of events beyond Lead, so that
	// rates rising since the last sample, late or lost sync messages and
	// events in flight still fall before the boundary. It must cover the
	// rise of the rate over a sync period and Lead: with Lead 0.5 s,
	// Guard 1.5 s held for rates ramping up 1.5× a second and jumping
	// by a third (TestPredictionNeverBehind).
	Guard time.Duration
	// Slack is added in ticks: E2SAR's ticks are its clock in µs with
	// random low bits, so a tick sent may run up to 2^bits ahead of the
	// event number its sync message reports.
	Slack uint64

	senders map[string][]Sample
}

// Add records a sender's sample. A sample whose event number or receipt
// time goes back starts the sender's history afresh (a restarted sender).
func (p *Predictor) Add(sender string, s Sample) {
	if p.senders == nil {
		p.senders = map[string][]Sample{}
	}
	h := p.senders[sender]
	if n := len(h); n > 0 && (s.EventNumber < h[n-1].EventNumber || s.Received < h[n-1].Received) {
		h = h[:0]
	}
	if len(h) == Window {
		h = append(h[:0], h[1:]...)
	}
	p.senders[sender] = append(h, s)
}

// Remove forgets a sender.
func (p *Predictor) Remove(sender string) { delete(p.senders, sender) }

// Boundary is the first event number of an epoch that starts Lead after
// now (ns, the CP's clock): above every sender's predicted event number
// then, plus Guard and Slack.
func (p *Predictor) Boundary(now int64) (uint64, error) {
	return p.largest(now+int64(p.Lead+p.Guard), p.Slack+1)
}

// Predicted is the largest event number the senders are predicted to have
// sent by now (LoadBalancerStatusReply's currentPredictedEventNumber).
func (p *Predictor) Predicted(now int64) (uint64, error) {
	return p.largest(now, 0)
}

// largest is the largest over the senders of the event number predicted
// for time at, plus extra, saturating at 2^64−1.
func (p *Predictor) largest(at int64, extra uint64) (uint64, error) {
	if len(p.senders) == 0 {
		return 0, ErrNoSamples
	}
	var b uint64
	for _, h := range p.senders {
		ahead := math.Ceil(p.slope(h) * float64(max(at-anchor(h), 0)))
		sum, c1 := bits.Add64(h[len(h)-1].EventNumber, uint64(ahead), 0)
		sum, c2 := bits.Add64(sum, extra, 0)
		if !(ahead < 1<<63) || c1|c2 != 0 {
			return math.MaxUint64, nil
		}
		b = max(b, sum)
	}
	return b, nil
}

// anchor is when the last sample was taken on the CP's clock: its receipt
// less how much longer it took to arrive than the fastest sample of the
// window (receipt minus sender clock, the clocks' offset plus the delay,
// is smallest for the fastest), at most maxDelayCorrection. It is never
// after the receipt, so the correction only moves a boundary ahead.
func anchor(h []Sample) int64 {
	last := &h[len(h)-1]
	minOff := last.Received - last.SenderClock
	for _, s := range h {
		minOff = min(minOff, s.Received-s.SenderClock)
	}
	late := min(last.Received-last.SenderClock-minOff, int64(maxDelayCorrection))
	return last.Received - max(late, 0)
}

// slope is the sender's estimated events per ns.
func (p *Predictor) slope(h []Sample) float64 {
	rate := float64(h[len(h)-1].RateHz) / 1e9
	fit, ok := leastSquares(h)
	switch {
	case p.Method == RateElapsed && rate > 0, !ok:
		return rate
	case p.Method == Steepest:
		fit = max(fit, rising(h))
	}
	return max(fit, 0)
}

// rising is the slope of the last interval of h, times how much it rose
// over the interval before (at most twice): a rate that is rising is
// taken to keep rising for one more interval.
func rising(h []Sample) float64 {
	n := len(h)
	last := interval(&h[n-2], &h[n-1])
	if n < 3 {
		return last
	}
	if before := interval(&h[n-3], &h[n-2]); before > 0 && last > before {
		return last * min(last/before, 2)
	}
	return last
}

// interval is the slope from sample a to b, 0 if b is not later.
func interval(a, b *Sample) float64 {
	if b.Received <= a.Received {
		return 0
	}
	return float64(b.EventNumber-a.EventNumber) / float64(b.Received-a.Received)
}

// leastSquares fits event number against receipt time over h, relative to
// the first sample so that µs-clock event numbers keep their precision.
func leastSquares(h []Sample) (float64, bool) {
	if len(h) < 2 {
		return 0, false
	}
	var sx, sy, sxx, sxy float64
	for _, s := range h {
		x := float64(s.Received - h[0].Received)
		y := float64(s.EventNumber - h[0].EventNumber)
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	n := float64(len(h))
	d := n*sxx - sx*sx
	if d <= 0 {
		return 0, false
	}
	return (n*sxy - sx*sy) / d, true
}
