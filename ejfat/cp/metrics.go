package cp

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func lbLabel(id int64) string { return strconv.FormatInt(id, 10) }

// metrics are the CP's Prometheus metrics: counters of what happened, and
// gauges read from the store at each scrape (so a freed LB's or a deleted
// session's series simply disappear).
type metrics struct {
	reg         *prometheus.Registry
	epochs      *prometheus.CounterVec
	syncSamples *prometheus.CounterVec
	syncDropped *prometheus.CounterVec
	rejected    *prometheus.CounterVec
}

func newMetrics(c *CP) *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nsc_cp", Name: name, Help: help}, labels)
	}
	m := &metrics{
		reg:         prometheus.NewRegistry(),
		epochs:      counter("epochs_total", "Epochs started, per LB.", "lb"),
		syncSamples: counter("sync_samples_total", "Sync messages stored, per LB.", "lb"),
		syncDropped: counter("sync_dropped_total", "Sync datagrams dropped, per LB instance and reason.", "instance", "reason"),
		rejected:    counter("rejected_calls_total", "gRPC calls that failed, per method and status code.", "method", "code"),
	}
	m.reg.MustRegister(m.epochs, m.syncSamples, m.syncDropped, m.rejected, stateCollector{c})
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// stateCollector reports the store's current state as gauges.
type stateCollector struct{ c *CP }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("nsc_cp_"+name, help, labels, nil)
}

var (
	lbEpoch    = desc("lb_epoch", "The LB's current epoch number.", "lb", "instance")
	lbPlane    = desc("lb_dataplane_epoch", "The newest epoch the LB's data plane holds (0: none, or no data plane); it lags lb_epoch while an epoch is being programmed.", "lb", "instance")
	lbSessions = desc("lb_sessions", "Sessions registered on the LB.", "lb", "instance")
	lbReady    = desc("lb_ready_sessions", "Sessions ready (recent SendState with isReady).", "lb", "instance")
	sessGauges = []struct {
		d   *prometheus.Desc
		get func(Session, []int64) float64
	}{
		{desc("session_slots", "Calendar slots of the session in the current epoch.", "lb", "session", "name"),
			func(x Session, cal []int64) float64 { return float64(slotCount(cal, x.ID)) }},
		{desc("session_fill_percent", "The session's last reported queue fill (0..1).", "lb", "session", "name"),
			stateGauge(func(s *State) float64 { return float64(s.Fill) })},
		{desc("session_control_signal", "The session's last reported control signal.", "lb", "session", "name"),
			stateGauge(func(s *State) float64 { return float64(s.Control) })},
		{desc("session_events_received", "Events the session reported received.", "lb", "session", "name"),
			stateGauge(func(s *State) float64 { return float64(s.EventsRecv) })},
		{desc("session_events_reassembled", "Events the session reported reassembled.", "lb", "session", "name"),
			stateGauge(func(s *State) float64 { return float64(s.Reassembled) })},
		{desc("session_events_reassembly_errors", "Reassembly errors the session reported.", "lb", "session", "name"),
			stateGauge(func(s *State) float64 { return float64(s.ReassemblyErr) })},
		{desc("session_events_dequeued", "Events the session's application dequeued.", "lb", "session", "name"),
			stateGauge(func(s *State) float64 { return float64(s.Dequeued) })},
		{desc("session_events_enqueue_errors", "Events the session could not enqueue.", "lb", "session", "name"),
			stateGauge(func(s *State) float64 { return float64(s.EnqueueErr) })},
		{desc("session_bytes_received", "Bytes the session reported received.", "lb", "session", "name"),
			stateGauge(func(s *State) float64 { return float64(s.Bytes) })},
		{desc("session_packets_received", "Packets the session reported received.", "lb", "session", "name"),
			stateGauge(func(s *State) float64 { return float64(s.Packets) })},
	}
)

// stateGauge reads a gauge from a session's latest state (0 before one).
func stateGauge(f func(*State) float64) func(Session, []int64) float64 {
	return func(x Session, _ []int64) float64 {
		if x.State == nil {
			return 0
		}
		return f(x.State)
	}
}

// slotCount is how many slots of cal session id holds.
func slotCount(cal []int64, id int64) int {
	n := 0
	for _, s := range cal {
		if s == id {
			n++
		}
	}
	return n
}

// Describe implements prometheus.Collector.
func (sc stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lbEpoch
	ch <- lbPlane
	ch <- lbSessions
	ch <- lbReady
	for _, g := range sessGauges {
		ch <- g.d
	}
}

// Collect implements prometheus.Collector.
func (sc stateCollector) Collect(ch chan<- prometheus.Metric) {
	c := sc.c
	now := c.cfg.Now()
	for _, r := range c.store.Reservations() {
		lb, inst := lbLabel(r.ID), strconv.Itoa(r.Instance)
		var cal []int64
		var epoch uint64
		if es := c.store.Epochs(r.ID); len(es) > 0 {
			cal, epoch = es[len(es)-1].Calendar, es[len(es)-1].Number
		}
		sessions := c.store.Sessions(r.ID)
		ready := 0
		for _, x := range sessions {
			if c.ready(x, now) {
				ready++
			}
			for _, g := range sessGauges {
				ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, g.get(x, cal), lb, lbLabel(x.ID), x.Name)
			}
		}
		ch <- prometheus.MustNewConstMetric(lbEpoch, prometheus.GaugeValue, float64(epoch), lb, inst)
		ch <- prometheus.MustNewConstMetric(lbPlane, prometheus.GaugeValue, float64(c.prog.held(r.Instance, r.ID)), lb, inst)
		ch <- prometheus.MustNewConstMetric(lbSessions, prometheus.GaugeValue, float64(len(sessions)), lb, inst)
		ch <- prometheus.MustNewConstMetric(lbReady, prometheus.GaugeValue, float64(ready), lb, inst)
	}
}
