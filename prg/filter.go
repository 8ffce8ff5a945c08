package prg

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// Filter is one five-tuple filter (82599 datasheet 7.1.2.5: protocol,
// source and destination IPv4 address, source and destination port, each
// compared or masked out; a priority 1-7, 7 highest; a queue). A nil field
// is not compared.
type Filter struct {
	Proto        string // "udp", "tcp", "sctp"; "" for any
	Src, Dst     *netip.Addr
	SPort, DPort *uint16
	Priority     int
	Port         string // the C-node port (queue) matching packets leave by
}

// protoNumbers are the protocols a five-tuple filter tells apart.
var protoNumbers = map[string]uint64{"tcp": 6, "udp": 17, "sctp": 132}

// FilterFields is the literal form of a filter, for messages.
const FilterFields = "[proto, src, dst, sport, dport, priority, port]"

func (f Filter) String() string {
	addr := func(a *netip.Addr) string {
		if a == nil {
			return "any"
		}
		return a.String()
	}
	port := func(p *uint16) string {
		if p == nil {
			return "any"
		}
		return strconv.Itoa(int(*p))
	}
	proto := f.Proto
	if proto == "" {
		proto = "any"
	}
	return fmt.Sprintf("[%s, %s, %s, %s, %s, %d, %s]", proto, addr(f.Src), addr(f.Dst), port(f.SPort), port(f.DPort), f.Priority, f.Port)
}

// FormatFilters prints a filter list as a configuration literal.
func FormatFilters(fs []Filter) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.String()
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// parseFilter reads one filter literal.
func parseFilter(l *dataflow.Literal) (Filter, error) {
	var f Filter
	if l.Kind != dataflow.LitList || len(l.List) != 7 {
		return f, posErr(l.Pos, "a five-tuple filter is %s", FilterFields)
	}
	it := l.List
	isAny := func(x *dataflow.Literal) bool { return x.Kind == dataflow.LitIdent && x.Text == "any" }
	switch x := it[0]; {
	case isAny(x):
	case x.Kind == dataflow.LitIdent && protoNumbers[x.Text] != 0:
		f.Proto = x.Text
	default:
		return f, posErr(x.Pos, "filter protocol %s: want udp, tcp, sctp or any", x.Text)
	}
	for i, dst := range []**netip.Addr{&f.Src, &f.Dst} {
		x := it[1+i]
		if isAny(x) {
			continue
		}
		a, err := netip.ParseAddr(x.Text)
		if x.Kind != dataflow.LitNumber || err != nil || !a.Is4() {
			return f, posErr(x.Pos, "filter address %s: want an IPv4 address or any (the filters match IPv4 only)", x.Text)
		}
		*dst = &a
	}
	for i, dst := range []**uint16{&f.SPort, &f.DPort} {
		x := it[3+i]
		if isAny(x) {
			continue
		}
		n, err := strconv.ParseUint(x.Text, 0, 16)
		if x.Kind != dataflow.LitNumber || err != nil {
			return f, posErr(x.Pos, "filter port %s: want a number below 65536 or any", x.Text)
		}
		if f.Proto == "" {
			return f, posErr(x.Pos, "filter port %s: a port is compared only with a protocol (udp, tcp, sctp)", x.Text)
		}
		p := uint16(n)
		*dst = &p
	}
	n, err := strconv.Atoi(it[5].Text)
	if it[5].Kind != dataflow.LitNumber || err != nil || n < 1 || n > 7 {
		return f, posErr(it[5].Pos, "filter priority %s: want 1 to 7 (7 wins)", it[5].Text)
	}
	f.Priority = n
	if it[6].Kind != dataflow.LitIdent {
		return f, posErr(it[6].Pos, "filter port %s: want the name of a port of the config node", it[6].Text)
	}
	f.Port = it[6].Text
	return f, nil
}

// Cond is the filter's test on s: an IPv4 packet, then each compared
// field.
func (f Filter) Cond(s *packet.Schema) (*packet.Expr, error) {
	ip, ok := s.Header("ipv4")
	if !ok {
		return nil, fmt.Errorf("the model has no header ipv4 for a five-tuple filter")
	}
	cond := &packet.Expr{Kind: packet.EValid, Width: 1, Header: ip.ID, Text: "valid(ipv4)"}
	and := func(x *packet.Expr) {
		cond = &packet.Expr{Kind: packet.EAnd, Width: 1, A: cond, B: x, Text: cond.Text + " && " + x.Text}
	}
	eq := func(h *packet.HeaderSpec, field string, v uint64, text string) error {
		for i, fs := range h.Fields {
			if fs.Name == field {
				ref := &packet.Expr{Kind: packet.EField, Width: fs.Width, Field: packet.FieldRef{Header: h.ID, Field: i}, Text: h.Name + "." + field}
				c := &packet.Expr{Kind: packet.EConst, Width: fs.Width, Const: packet.V(v), Text: text}
				and(&packet.Expr{Kind: packet.EEq, Width: 1, A: ref, B: c, Text: ref.Text + " == " + text})
				return nil
			}
		}
		return fmt.Errorf("header %s has no field %s for a five-tuple filter", h.Name, field)
	}
	// A packet the parse graph took for IPv4 whose version says otherwise
	// is not IPv4 to the NIC.
	if err := eq(ip, "version", 4, "4"); err != nil {
		return nil, err
	}
	if f.Proto != "" {
		if err := eq(ip, "proto", protoNumbers[f.Proto], strconv.FormatUint(protoNumbers[f.Proto], 10)); err != nil {
			return nil, err
		}
	}
	for _, a := range []struct {
		field string
		addr  *netip.Addr
	}{{"src", f.Src}, {"dst", f.Dst}} {
		if a.addr != nil {
			b := a.addr.As4()
			v := uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
			if err := eq(ip, a.field, v, a.addr.String()); err != nil {
				return nil, err
			}
		}
	}
	if f.SPort == nil && f.DPort == nil {
		return cond, nil
	}
	l4, ok := s.Header(f.Proto)
	if !ok {
		return nil, fmt.Errorf("the model has no header %s for a five-tuple filter on its ports", f.Proto)
	}
	and(&packet.Expr{Kind: packet.EValid, Width: 1, Header: l4.ID, Text: "valid(" + f.Proto + ")"})
	for _, p := range []struct {
		field string
		port  *uint16
	}{{"sport", f.SPort}, {"dport", f.DPort}} {
		if p.port != nil {
			if err := eq(l4, p.field, uint64(*p.port), strconv.Itoa(int(*p.port))); err != nil {
				return nil, err
			}
		}
	}
	return cond, nil
}

func posErr(pos, format string, args ...any) error {
	return &dataflow.Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// Literal is the configuration value of a filter list, as a model or a
// file would write it.
func Literal(fs []Filter) *dataflow.Literal {
	out := &dataflow.Literal{Kind: dataflow.LitList}
	for _, f := range fs {
		fields := strings.Split(strings.Trim(f.String(), "[]"), ", ")
		x := &dataflow.Literal{Kind: dataflow.LitList}
		for _, s := range fields {
			kind := dataflow.LitIdent
			if s[0] >= '0' && s[0] <= '9' {
				kind = dataflow.LitNumber
			}
			x.List = append(x.List, &dataflow.Literal{Kind: kind, Text: s})
		}
		out.List = append(out.List, x)
	}
	return out
}
