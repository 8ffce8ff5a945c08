package main

import (
	"cmp"
	"encoding/json"
	"io"
	"slices"
	"time"

	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/ejfat/reasm"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/sim"
	"github.com/dragonet-go/nsc/verify"
)

// The --json output of the commands that count: one JSON object on
// stdout, with the same numbers as the text. Field names are stable and
// documented in docs/json.md; add fields, never rename them.

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// countersJSON is nsc sim's and nsc run's result.
type countersJSON struct {
	Packets    int               `json:"packets"`
	Sinks      []sinkJSON        `json:"sinks"`
	Counts     map[string]uint64 `json:"counts"`
	Drops      []dropJSON        `json:"drops"`
	InProgress map[string]int    `json:"in_progress,omitempty"`
}

type sinkJSON struct {
	Node    string `json:"node"`
	Packets uint64 `json:"packets"`
	File    string `json:"file,omitempty"`
}

type dropJSON struct {
	Node    string `json:"node"`
	Reason  string `json:"reason"`
	Packets uint64 `json:"packets"`
}

func countersOf(in int, c sim.Counters, paths map[string]string) countersJSON {
	j := countersJSON{Packets: in, Sinks: []sinkJSON{}, Counts: c.Counts, Drops: []dropJSON{}}
	for _, k := range sortedKeys(c.Sinks) {
		j.Sinks = append(j.Sinks, sinkJSON{k, c.Sinks[k], paths[k]})
	}
	for _, k := range c.DropKeys() {
		j.Drops = append(j.Drops, dropJSON{k.Node, k.Reason, c.Drops[k]})
	}
	return j
}

// verifyJSON is nsc verify's result.
type verifyJSON struct {
	LPG        string      `json:"lpg"`
	PRG        string      `json:"prg"`
	Packets    int         `json:"packets"`
	Classes    int         `json:"classes"`
	Claimed    int         `json:"claimed"`
	Sequences  int         `json:"sequences"`
	Random     int         `json:"random"`
	Mismatches int         `json:"mismatches"`
	Hosted     *int        `json:"hosted,omitempty"` // a split: frames handed to the host
	Claims     []claimJSON `json:"claims"`
	// Unreached: the LPG nodes some run never reached, with why.
	Unreached    []unreachedJSON `json:"unreached"`
	MismatchPcap string          `json:"mismatch_pcap,omitempty"`
	// The first mismatches, as the text shows them.
	Diffs []string `json:"diffs,omitempty"`
}

type unreachedJSON struct {
	Node string `json:"node"`
	Why  string `json:"why"`
}

type claimJSON struct {
	Claim      string `json:"claim"`
	Node       string `json:"node"`
	Untested   string `json:"untested,omitempty"`
	Packets    int    `json:"packets"`
	Reached    int    `json:"reached"`
	Mismatches int    `json:"mismatches"`
}

// verifyJSONOut prints verify's result as JSON; packets that differ fail
// the command as in the text form.
func verifyJSONOut(e *env, em *embed.Embedding, res *verify.Result, claimed int, bad string) error {
	pcap := ""
	var failed error
	if len(res.Mismatches) > 0 {
		if pcap, failed = verifyFailed(em, res, bad); pcap == "" {
			return failed // the pcap could not be written
		}
	}
	j := verifyJSON{LPG: em.LPG.Name, PRG: em.PRG.Name, Packets: res.Cases, Classes: res.Classes, Claimed: claimed,
		Sequences: res.Sequences, Random: res.Cases - res.Classes - claimed - res.Sequences,
		Mismatches: len(res.Mismatches), Claims: []claimJSON{}, Unreached: []unreachedJSON{}, MismatchPcap: pcap}
	for _, u := range res.Unreached {
		j.Unreached = append(j.Unreached, unreachedJSON{u.Node, u.Why})
	}
	if em.Device != nil {
		j.Hosted = &res.Hosted
	}
	for _, c := range res.Claims {
		j.Claims = append(j.Claims, claimJSON{c.Claim.Name(), c.Claim.Node, c.Claim.Untested, c.Packets, c.Reached, c.Mismatches})
	}
	for i, m := range res.Mismatches {
		if i == 5 {
			break
		}
		j.Diffs = append(j.Diffs, m.String())
	}
	if err := printJSON(e.stdout, j); err != nil {
		return err
	}
	return failed
}

// sendJSON is nsc send's summary; the rates only when it sent.
type sendJSON struct {
	Events          uint64   `json:"events"`
	Segments        uint64   `json:"segments"`
	Bytes           uint64   `json:"bytes"`
	Seconds         float64  `json:"seconds"`
	EventsPerSecond *float64 `json:"events_per_second,omitempty"`
	Gbps            *float64 `json:"gbps,omitempty"`
	Pcap            string   `json:"pcap,omitempty"`
	Refused         uint64   `json:"refused"` // ICMP port unreachable
}

func (s *sender) summaryJSON(d time.Duration, pcap string, refused uint64) sendJSON {
	j := sendJSON{Events: s.events.Load(), Segments: s.segments.Load(), Bytes: s.bytes.Load(), Seconds: d.Seconds(), Pcap: pcap, Refused: refused}
	if pcap == "" {
		eps, g := float64(j.Events)/d.Seconds(), gbps(j.Bytes, d)
		j.EventsPerSecond, j.Gbps = &eps, &g
	}
	return j
}

// recvJSON is nsc recv's final counters (spec §4.6) and delivery.
type recvJSON struct {
	Received        uint64            `json:"received"`
	Reassembled     uint64            `json:"reassembled"`
	Errors          uint64            `json:"errors"`
	TimedOut        uint64            `json:"timed_out"`
	Evicted         uint64            `json:"evicted"`
	Dequeued        uint64            `json:"dequeued"`
	EnqueueErrors   uint64            `json:"enqueue_errors"`
	Packets         uint64            `json:"packets"`
	Bytes           uint64            `json:"bytes"`
	LBHeaders       uint64            `json:"lb_headers"`
	Skipped         uint64            `json:"skipped"`
	Drops           map[string]uint64 `json:"drops"` // segments, by reason
	Delivered       uint64            `json:"delivered"`
	DeliveredBytes  uint64            `json:"delivered_bytes"`
	Seconds         float64           `json:"seconds"`
	EventsPerSecond float64           `json:"events_per_second"`
	Gbps            float64           `json:"gbps"`
	Verified        *uint64           `json:"verified,omitempty"` // with --verify
	Bad             *uint64           `json:"bad,omitempty"`
}

func (o *recvOpts) recvJSONOf(s reasm.Stats, lbHeaders, skips uint64, d *delivery) recvJSON {
	j := recvJSON{Received: s.Received, Reassembled: s.Reassembled, Errors: s.Errors(), TimedOut: s.TimedOut,
		Evicted: s.Evicted, Dequeued: s.Dequeued, EnqueueErrors: s.EnqueueErrors, Packets: s.Packets, Bytes: s.Bytes,
		LBHeaders: lbHeaders, Skipped: skips, Drops: map[string]uint64{},
		Delivered: d.events.Load(), DeliveredBytes: d.bytes.Load()}
	for i, n := range s.Segments {
		if why := reasm.Reason(i); n > 0 && why != reasm.Placed && why != reasm.Completed {
			j.Drops[why.String()] = n
		}
	}
	if took := d.window(); took > 0 {
		j.Seconds, j.EventsPerSecond, j.Gbps = took.Seconds(), float64(j.Delivered)/took.Seconds(), gbps(j.DeliveredBytes, took)
	}
	if o.verify {
		v, b := d.verified.Load(), d.bad.Load()
		j.Verified, j.Bad = &v, &b
	}
	return j
}

// lbJSON is nsc lb's final counters.
type lbJSON struct {
	Received         uint64     `json:"received"`
	Forwarded        uint64     `json:"forwarded"`
	Dropped          uint64     `json:"dropped"`
	Oversize         uint64     `json:"oversize"`
	SendErrors       uint64     `json:"send_errors"`
	Seconds          float64    `json:"seconds"`
	PacketsPerSecond float64    `json:"packets_per_second"` // forwarded
	Drops            []dropJSON `json:"drops"`
}

func lbJSONOf(fwd *lbnet.LB, d time.Duration) lbJSON {
	s := fwd.Stats()
	j := lbJSON{s.Received, s.Forwarded, s.Dropped, s.Oversize, s.SendErrors, d.Seconds(), float64(s.Forwarded) / d.Seconds(), []dropJSON{}}
	drops := fwd.Drops()
	for k, n := range drops {
		j.Drops = append(j.Drops, dropJSON{k.Node, k.Reason, n})
	}
	slices.SortFunc(j.Drops, func(a, b dropJSON) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Reason, b.Reason))
	})
	return j
}
