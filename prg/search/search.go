// Package search picks the configuration of a PRG's five-tuple filter list
// (a list<filter5,N> C-node, see package prg) that suits an LPG best.
//
// The LPG's receive threads are given as flows: the packets one thread
// takes (a UDP port of a member's port range, say). A configuration steers
// each flow to a queue port of the C-node or leaves it to port miss. Each
// configuration is embedded (package embed) and costed:
//
//	cost = Σ over flows f of  software(f) + demux(f)
//
//	software(f): the LPG nodes f's packets still run in software, on the
//	             queue (Rx sink) where that is most (BDD reachability of
//	             each LPG copy for f's packets);
//	demux(f):    the flows that share one of f's queues, plus one if other
//	             traffic (packets of no flow) does, plus the queues beyond
//	             the first that f's packets are spread over: each is a
//	             software test per packet to tell f's packets from the rest.
//
// Lower is better; among equal costs fewer filters, then fewer queues,
// then the first in enumeration order win, so the search is deterministic.
// Queues are interchangeable, so only assignments that open queues in
// order are tried (flow 1 to q1 before any flow to q2). Up to
// MaxExhaustive such assignments are all tried; beyond, a greedy pass
// gives each flow in turn the choice that costs least given the earlier
// flows' (later flows left unfiltered meanwhile).
package search

import (
	"fmt"
	"slices"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/prg"
)

// MaxExhaustive is the largest number of assignments tried one by one.
const MaxExhaustive = 256

// Flow is the class of packets one receive thread of the LPG takes, and
// the filter that would tell them (its Priority and Port are set by the
// search).
type Flow struct {
	Name   string
	Cond   *packet.Expr
	Filter prg.Filter
}

// PortFlows are the flows of n consecutive UDP ports from first, one
// receive thread each (a member's port range, ejfat-reassembly.md §1), over
// IPv4 or IPv6.
func PortFlows(s *packet.Schema, ipv6 bool, first, n int) ([]Flow, error) {
	if first < 0 || n < 1 || first+n > 1<<16 {
		return nil, fmt.Errorf("ports %d to %d are not UDP ports", first, first+n-1)
	}
	var out []Flow
	for i := range n {
		p := uint16(first + i)
		f := prg.Filter{Proto: "udp", DPort: &p}
		cond, err := f.Cond(s)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("udp port %d", p)
		if ipv6 {
			if cond, err = overIPv6(s, p); err != nil {
				return nil, err
			}
			name += " over IPv6"
		}
		out = append(out, Flow{Name: name, Cond: cond, Filter: f})
	}
	return out, nil
}

// overIPv6 is valid(ipv6) && valid(udp) && udp.dport == p.
func overIPv6(s *packet.Schema, p uint16) (*packet.Expr, error) {
	v6, ok6 := s.Header("ipv6")
	udp, okU := s.Header("udp")
	if !ok6 || !okU {
		return nil, fmt.Errorf("the model has no header ipv6 or udp")
	}
	valid := func(h *packet.HeaderSpec) *packet.Expr {
		return &packet.Expr{Kind: packet.EValid, Width: 1, Header: h.ID, Text: "valid(" + h.Name + ")"}
	}
	i := slices.IndexFunc(udp.Fields, func(f packet.FieldSpec) bool { return f.Name == "dport" })
	if i < 0 {
		return nil, fmt.Errorf("header udp has no field dport")
	}
	ref := &packet.Expr{Kind: packet.EField, Width: 16, Field: packet.FieldRef{Header: udp.ID, Field: i}, Text: "udp.dport"}
	eq := &packet.Expr{Kind: packet.EEq, Width: 1, A: ref, B: &packet.Expr{Kind: packet.EConst, Width: 16, Const: packet.V(uint64(p)), Text: fmt.Sprint(p)}, Text: fmt.Sprintf("udp.dport == %d", p)}
	// Not also IPv4: the predicates treat valid(ipv4) and valid(ipv6) as
	// independent atoms.
	v4, _ := s.Header("ipv4")
	only := valid(v6)
	if v4 != nil {
		not4 := &packet.Expr{Kind: packet.ENot, Width: 1, A: valid(v4), Text: "!valid(ipv4)"}
		only = &packet.Expr{Kind: packet.EAnd, Width: 1, A: only, B: not4, Text: "valid(ipv6) && !valid(ipv4)"}
	}
	both := &packet.Expr{Kind: packet.EAnd, Width: 1, A: only, B: valid(udp), Text: only.Text + " && valid(udp)"}
	return &packet.Expr{Kind: packet.EAnd, Width: 1, A: both, B: eq, Text: both.Text + " && " + eq.Text}, nil
}
