package predicate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/packet"
	. "github.com/dragonet-go/nsc/predicate"
)

var ihl = Field{"ipv4.ihl", 4}

func TestFormat(t *testing.T) {
	v := packet.V
	tests := []struct {
		name string
		p    func(s *Space) Pred
		want string
	}{
		{"dragonet TxSwOut", func(s *Space) Pred {
			q, p, c := s.Symbol("pred(TxQueue,out)"), s.Symbol("pred(prot,p)"), s.Symbol("pred(TxPsetCtx,o)")
			return q.And(p.Not()).Or(c.And(q, p))
		}, `X:
OR
  AND
    pred(TxQueue,out)
    not(pred(prot,p))
  AND
    pred(TxPsetCtx,o)
    pred(TxQueue,out)
    pred(prot,p)`},
		{"single literal", func(s *Space) Pred { return s.Symbol("a") }, "X:\na"},
		{"single negated literal", func(s *Space) Pred { return s.Valid("udp").Not() }, "X:\nnot(valid(udp))"},
		{"single term", func(s *Space) Pred { return s.Symbol("b").And(s.Symbol("a").Not()) }, "X:\nAND\n  not(a)\n  b"},
		{"true", func(s *Space) Pred { return s.True() }, "X:\ntrue"},
		{"false", func(s *Space) Pred { return s.False() }, "X:\nfalse"},
		{"tautology over a field", func(s *Space) Pred { return s.Eq(proto, v(17)).Or(s.Cmp(proto, "!=", v(17))) }, "X:\ntrue"},
		{"contradiction over a field", func(s *Space) Pred { return s.Eq(proto, v(17)).And(s.Eq(proto, v(6))) }, "X:\nfalse"},
		{"implied negative literal pruned", func(s *Space) Pred {
			return s.Eq(proto, v(17)).And(s.Eq(proto, v(6)).Not())
		}, "X:\nipv4.proto == 17"},
		{"implied positive literal pruned", func(s *Space) Pred {
			return s.Cmp(dport, ">=", v(16384)).And(s.Masked(dport, v(0x4000), v(0xc000)))
		}, "X:\nudp.dport in 0x4000/0xc000"},
		{"unsatisfiable term dropped", func(s *Space) Pred {
			return s.Eq(proto, v(17)).And(s.Eq(proto, v(6))).Or(s.Symbol("s"))
		}, "X:\ns"},
		{"same atom twice is one atom", func(s *Space) Pred {
			return s.Eq(proto, v(17)).Or(s.Cmp(proto, "==", v(17)))
		}, "X:\nipv4.proto == 17"},
		{"atom texts", func(s *Space) Pred {
			return s.And(s.Range(Field{"lb.tick", 64}, v(10), v(20)), s.Prefix(dst, v(0x0a0000ff), 8),
				s.Cmp(dport, "<=", v(65535)), s.Valid("udp"))
		}, "X:\nAND\n  ipv4.dst in 0xa000000/8\n  lb.tick in [10, 20]\n  valid(udp)"},
		{"terms by length then text", func(s *Space) Pred {
			sym := s.Symbol
			return sym("y").And(sym("x"), sym("w")).Or(sym("d").And(sym("c")), sym("z"), sym("b").And(sym("a")))
		}, `X:
OR
  z
  AND
    a
    b
  AND
    c
    d
  AND
    w
    x
    y`},
		{"negated == prints !=", func(s *Space) Pred { return s.Eq(ihl, v(3)).Not() }, "X:\nipv4.ihl != 3"},
		{"negated != prints ==", func(s *Space) Pred { return s.Cmp(ihl, "!=", v(3)).Not() }, "X:\nipv4.ihl == 3"},
		{"negated < prints >=", func(s *Space) Pred { return s.Cmp(ihl, "<", v(5)).Not() }, "X:\nipv4.ihl >= 5"},
		{"negated <= prints >", func(s *Space) Pred { return s.Cmp(ihl, "<=", v(5)).Not() }, "X:\nipv4.ihl > 5"},
		{"negated > prints <=", func(s *Space) Pred { return s.Cmp(ihl, ">", v(5)).Not() }, "X:\nipv4.ihl <= 5"},
		{"negated >= prints <", func(s *Space) Pred { return s.Cmp(ihl, ">=", v(5)).Not() }, "X:\nipv4.ihl < 5"},
		{"negated comparisons in a term", func(s *Space) Pred {
			return s.Cmp(ihl, "<=", v(5)).Not().And(s.Eq(ihl, v(9)).Not(), s.Valid("ipv4"))
		}, "X:\nAND\n  ipv4.ihl != 9\n  ipv4.ihl > 5\n  valid(ipv4)"},
		{"negated ranges, masks, prefixes, validity keep not", func(s *Space) Pred {
			return s.And(s.Range(x, v(10), v(20)).Not(), s.Masked(dport, v(0x4000), v(0xc000)).Not(),
				s.Prefix(dst, v(0x0a000000), 8).Not(), s.Valid("udp").Not())
		}, `X:
AND
  not(ipv4.dst in 0xa000000/8)
  not(udp.dport in 0x4000/0xc000)
  not(valid(udp))
  not(x in [10, 20])`},
		{"dragonet TxSwOut over a field", func(s *Space) Pred {
			q, p, c := s.Symbol("pred(TxQueue,out)"), s.Eq(Field{"net.prot", 8}, v(2)), s.Symbol("pred(TxPsetCtx,out)")
			return q.And(p.Not()).Or(c.And(q, p))
		}, `X:
OR
  AND
    net.prot != 2
    pred(TxQueue,out)
  AND
    net.prot == 2
    pred(TxPsetCtx,out)
    pred(TxQueue,out)`},
		{"forget: contradictory term on the field", func(s *Space) Pred {
			return s.Eq(x, v(1)).And(s.Eq(x, v(2))).Or(s.Symbol("s")).ForgetField(x)
		}, "X:\ns"},
		{"forget: unrealisable combination of the field's atoms", func(s *Space) Pred {
			// The atoms of x are not independent booleans: x < 5 and x > 10
			// never both hold, so ∃x keeps only what x == 7 leaves.
			lt, gt, eq := s.Cmp(x, "<", v(5)), s.Cmp(x, ">", v(10)), s.Eq(x, v(7))
			a, b := s.Symbol("a"), s.Symbol("b")
			return lt.And(gt).Or(eq.And(a), lt.Not().And(gt.Not(), eq.Not(), b)).ForgetField(x)
		}, "X:\nOR\n  a\n  b"},
		{"forget keeps other fields", func(s *Space) Pred {
			ttl := Field{"ipv4.ttl", 8}
			p := s.Eq(ttl, v(1)).And(s.Eq(proto, v(17))).Or(s.Eq(ttl, v(2)).And(s.Eq(proto, v(6))))
			return p.ForgetField(ttl).And(s.Eq(ttl, v(64))) // set ipv4.ttl = 64
		}, `X:
OR
  AND
    ipv4.proto == 17
    ipv4.ttl == 64
  AND
    ipv4.proto == 6
    ipv4.ttl == 64`},
		{"push", func(s *Space) Pred {
			p := s.Valid("vlan").Not().And(s.Symbol("pred(Tx,out)"))
			return p.ForgetValid("vlan").And(s.Valid("vlan"))
		}, "X:\nAND\n  pred(Tx,out)\n  valid(vlan)"},
		{"checksum compute", func(s *Space) Pred {
			ok := s.Symbol("csum_ok(udp)")
			p := ok.Not().And(s.Valid("udp")).Or(ok.And(s.Eq(dport, v(53))))
			return p.ForgetSymbol("csum_ok(udp)").And(ok)
		}, `X:
OR
  AND
    csum_ok(udp)
    udp.dport == 53
  AND
    csum_ok(udp)
    valid(udp)`},
		{"negations from path order dropped", func(s *Space) Pred {
			a, b, c := s.Symbol("a"), s.Symbol("b"), s.Symbol("c")
			return c.Or(b.And(a.Not()), a.And(b, c.Not()))
		}, "X:\nOR\n  b\n  c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSpace()
			got := tc.p(s).Format("X")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Format (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatNoName(t *testing.T) {
	s := NewSpace()
	if diff := cmp.Diff("OR\n  a\n  b", s.Symbol("a").Or(s.Symbol("b")).Format("")); diff != "" {
		t.Errorf("Format (-want +got):\n%s", diff)
	}
}

func TestDNFAndString(t *testing.T) {
	s := NewSpace()
	q, p := s.Symbol("q"), s.Symbol("p")
	pred := q.And(p.Not()).Or(s.Eq(proto, packet.V(6)))
	wantDNF := [][]Literal{
		{{Atom: "ipv4.proto == 6"}},
		{{Atom: "p", Neg: true}, {Atom: "q"}},
	}
	if diff := cmp.Diff(wantDNF, pred.DNF()); diff != "" {
		t.Errorf("DNF (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("ipv4.proto == 6 or (not(p) and q)", pred.String()); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]Literal{{}}, s.True().DNF()); diff != "" {
		t.Errorf("DNF(true) (-want +got):\n%s", diff)
	}
	if got := s.False().DNF(); got != nil {
		t.Errorf("DNF(false) = %v, want no terms", got)
	}
}

func TestStringOfHugeDNF(t *testing.T) {
	s := NewSpace()
	p := s.True()
	for i := range 20 {
		p = p.And(s.Symbol(fmt.Sprintf("a%d", i)).Or(s.Symbol(fmt.Sprintf("b%d", i))))
	}
	want := "<predicate over 40 atoms, DNF from 256+ paths>"
	if diff := cmp.Diff(want, p.String()); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
	small := s.True()
	for i := range 8 { // 2^8 = 256 paths: still printed
		small = small.And(s.Symbol(fmt.Sprintf("a%d", i)).Or(s.Symbol(fmt.Sprintf("b%d", i))))
	}
	if got := small.String(); strings.HasPrefix(got, "<") || strings.Count(got, " or ") != 255 {
		t.Errorf("String of a 256-term DNF = %.80q…", got)
	}
}
