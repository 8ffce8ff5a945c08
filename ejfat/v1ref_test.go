package ejfat

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// v1ref is an oracle for the 2021 v1 pipeline, written for the tests
// straight from seed 000's P4 program (parser, MatchActionImpl, deparser)
// and independent of nsc: it works on the frame's bytes with its own
// tables and its own checksum arithmetic (the P4's cksum_sub/cksum_add with
// one 17-bit fold each).
type v1ref struct {
	filter   []v1FilterEntry
	epochs   []v1Epoch
	calendar map[[2]uint32]uint16 // (epoch, slot) -> member id
	members  map[[2]uint16]v1Member
}

type v1FilterEntry struct {
	mac   string // "00:aa:bb:cc:dd:ee"
	etype uint16
	ip    [16]byte
}

type v1Epoch struct {
	tick     uint64
	plen     int
	priority int // the lowest wins; among equal ones, the first
	epoch    uint32
}

type v1Member struct {
	etype, id uint16
	v6        bool // do_ipv6_member_rewrite, else do_ipv4_member_rewrite
	mac       [6]byte
	ip        []byte // 4 or 16 bytes
	port      uint16
}

// Outcomes of v1ref.run, named as the model's drop reasons.
const (
	v1EndEmit     = "emit"
	v1EndRunt     = "runt frame"
	v1EndFilter   = "dst_filter miss"
	v1EndEpoch    = "epoch_assign miss"
	v1EndCalendar = "calendar miss"
	v1EndMember   = "member miss"
	v1EndMismatch = "member rewrite mismatch"
)

// script renders the tables as a table_add script for the model.
func (r *v1ref) script() string {
	var b strings.Builder
	for _, f := range r.filter {
		fmt.Fprintf(&b, "table_add dst_filter_table NoAction 0x%s 0x%04x 0x%x =>\n",
			strings.ReplaceAll(f.mac, ":", ""), f.etype, f.ip[:])
	}
	for _, e := range r.epochs {
		fmt.Fprintf(&b, "table_add epoch_assign_table do_assign_epoch 0x%016x/%d => 0x%08x %d\n", e.tick, e.plen, e.epoch, e.priority)
	}
	for k, m := range r.calendar {
		fmt.Fprintf(&b, "table_add load_balance_calendar_table do_assign_member 0x%08x 0x%03x => 0x%04x\n", k[0], k[1], m)
	}
	for _, m := range r.members {
		act := "do_ipv4_member_rewrite"
		if m.v6 {
			act = "do_ipv6_member_rewrite"
		}
		fmt.Fprintf(&b, "table_add member_info_lookup_table %s 0x%04x 0x%04x => 0x%x 0x%x 0x%04x\n", act, m.etype, m.id, m.mac[:], m.ip, m.port)
	}
	return b.String()
}

func (r *v1ref) addMember(m v1Member) {
	if r.members == nil {
		r.members = map[[2]uint16]v1Member{}
	}
	r.members[[2]uint16{m.etype, m.id}] = m
}

// seed000Ref is seed 000's control-plane script as oracle tables.
func seed000Ref() *v1ref {
	r := &v1ref{calendar: map[[2]uint32]uint16{{0, 0x00a}: 0, {1, 0x014}: 0}}
	r.filter = []v1FilterEntry{
		{"00:aa:bb:cc:dd:ee", 0x0800, v1IP16("0000000000000000000000000a010203")},
		{"00:aa:bb:cc:dd:ee", 0x86dd, v1IP16("fe800000000000000000000000000002")},
	}
	r.epochs = []v1Epoch{
		{tick: 0, plen: 0, priority: 64, epoch: 0},
		{tick: 0x10, plen: 60, priority: 5, epoch: 1},
	}
	mac := [6]byte{0x11, 0x22, 0x33, 0x44, 0x55, 0x66}
	r.addMember(v1Member{etype: 0x0800, id: 0, mac: mac, ip: []byte{0xaa, 0xbb, 0xcc, 0xdd}, port: 0x4556})
	v6 := v1IP16("fe800000000000000000000000000003")
	r.addMember(v1Member{etype: 0x86dd, id: 0, v6: true, mac: mac, ip: v6[:], port: 0x4556})
	return r
}

func v1IP16(h string) [16]byte {
	var a [16]byte
	for i := range a {
		fmt.Sscanf(h[2*i:2*i+2], "%02x", &a[i])
	}
	return a
}

// P4's checksum helpers, bit for bit.
func v1CksumAdd(c *uint16, a uint16) {
	sum := uint32(*c) + uint32(a) // bit<17>
	sum = sum&0xffff + sum>>16
	*c = uint16(sum)
}
func v1CksumSub(c *uint16, a uint16)         { v1CksumAdd(c, a^0xffff) }
func v1CksumSwap(c *uint16, old, new uint16) { v1CksumSub(c, old); v1CksumAdd(c, new) }

// run processes one frame as v1 does: the frame it transmits (nil for a
// drop) and the outcome.
func (r *v1ref) run(in []byte) ([]byte, string) {
	// ParserImpl. Offsets of valid headers, -1 when not extracted.
	ipv4, ipv6, udp, lb := -1, -1, -1, -1
	if len(in) < 14 {
		return nil, v1EndRunt // ethernet invalid: undefined in P4
	}
	etype := binary.BigEndian.Uint16(in[12:])
	switch etype {
	case 0x0800:
		if len(in) >= 34 {
			ipv4 = 14
			ver, ihl := in[14]>>4, int(in[14]&0xf)
			if ver == 4 && ihl >= 5 { // verify, then the options
				end := 34 + (ihl-5)*4
				if len(in) >= end && in[23] == 17 {
					udp = end
				}
			}
		}
	case 0x86dd:
		if len(in) >= 54 {
			ipv6 = 14
			if in[14]>>4 == 6 && in[20] == 17 {
				udp = 54
			}
		}
	}
	if udp >= 0 && len(in) < udp+8 {
		udp = -1
	}
	if udp >= 0 && binary.BigEndian.Uint16(in[udp+2:]) == 0x4c42 && len(in) >= udp+8+12 {
		lb = udp + 8 // magic and version verified after the extract: valid either way
	}

	// MatchActionImpl: DstFilter.
	var ipdst [16]byte
	switch {
	case ipv4 >= 0:
		copy(ipdst[12:], in[ipv4+16:ipv4+20])
	case ipv6 >= 0:
		copy(ipdst[:], in[ipv6+24:ipv6+40])
	}
	dmac := fmt.Sprintf("%x", in[0:6])
	hit := false
	for _, f := range r.filter {
		if strings.ReplaceAll(f.mac, ":", "") == dmac && f.etype == etype && f.ip == ipdst {
			hit = true
		}
	}
	if !hit {
		return nil, v1EndFilter
	}
	if lb < 0 {
		return append([]byte(nil), in...), v1EndEmit // returned, nothing drops it
	}

	// EpochAssign: the lowest priority among the matching prefixes.
	tick := binary.BigEndian.Uint64(in[lb+4:])
	best := -1
	for i, e := range r.epochs {
		if e.plen > 0 && tick>>(64-e.plen) != e.tick>>(64-e.plen) {
			continue
		}
		if best < 0 || e.priority < r.epochs[best].priority {
			best = i
		}
	}
	if best < 0 {
		return nil, v1EndEpoch
	}
	epoch := r.epochs[best].epoch

	// LoadBalanceCalendar.
	member, ok := r.calendar[[2]uint32{epoch, uint32(tick & 0x1ff)}]
	if !ok {
		return nil, v1EndCalendar
	}

	// MemberInfoLookup.
	m, ok := r.members[[2]uint16{etype, member}]
	if !ok {
		return nil, v1EndMember
	}
	if (!m.v6 && ipv4 < 0) || (m.v6 && ipv6 < 0) {
		return nil, v1EndMismatch // the action would read an invalid header
	}
	out := append([]byte(nil), in...)
	var ckd uint16
	be := binary.BigEndian
	if !m.v6 {
		old, new := out[ipv4+16:ipv4+20], m.ip
		v1CksumSwap(&ckd, be.Uint16(old), be.Uint16(new))
		v1CksumSwap(&ckd, be.Uint16(old[2:]), be.Uint16(new[2:]))
		tl := be.Uint16(out[ipv4+2:])
		v1CksumSwap(&ckd, tl, tl-12)
		hc := be.Uint16(out[ipv4+10:]) ^ 0xffff
		v1CksumAdd(&hc, ckd)
		be.PutUint16(out[ipv4+10:], hc^0xffff)
		copy(out[0:6], m.mac[:])
		copy(old, new)
		be.PutUint16(out[ipv4+2:], tl-12)
	} else {
		old, new := out[ipv6+24:ipv6+40], m.ip
		for i := 8; i < 16; i += 2 { // dstAddr[63:0] only
			v1CksumSwap(&ckd, be.Uint16(old[i:]), be.Uint16(new[i:]))
		}
		pl := be.Uint16(out[ipv6+4:])
		v1CksumSwap(&ckd, pl, pl-12)
		copy(out[0:6], m.mac[:])
		copy(old, new)
		be.PutUint16(out[ipv6+4:], pl-12)
	}
	// UpdateUDPChecksum.
	ul := be.Uint16(out[udp+4:])
	v1CksumSwap(&ckd, be.Uint16(out[udp+2:]), m.port)
	v1CksumSwap(&ckd, ul, ul-12)
	for i := 0; i < 12; i += 2 {
		v1CksumSub(&ckd, be.Uint16(out[lb+i:]))
	}
	uc := be.Uint16(out[udp+6:]) ^ 0xffff
	v1CksumAdd(&uc, ckd)
	be.PutUint16(out[udp+6:], uc^0xffff)
	be.PutUint16(out[udp+2:], m.port)
	be.PutUint16(out[udp+4:], ul-12)

	// DeparserImpl: ethernet, ipv4, ipv4_opt, ipv6, udp, then the rest;
	// never the LB header.
	return append(out[:lb], out[lb+12:]...), v1EndEmit
}
