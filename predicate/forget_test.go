package predicate_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/packet"
	. "github.com/dragonet-go/nsc/predicate"
)

func TestForget(t *testing.T) {
	v := packet.V
	ttl := Field{"ipv4.ttl", 8}
	tests := []struct {
		name      string
		p, want   func(s *Space) Pred
		wantPrint string
	}{
		{"field", func(s *Space) Pred {
			return s.Eq(ttl, v(1)).And(s.Eq(proto, v(17))).ForgetField(ttl)
		}, func(s *Space) Pred { return s.Eq(proto, v(17)) }, "ipv4.proto == 17"},
		{"field in every term", func(s *Space) Pred {
			return s.Eq(ttl, v(1)).Or(s.Cmp(ttl, ">", v(200))).ForgetField(ttl)
		}, func(s *Space) Pred { return s.True() }, "true"},
		{"unsatisfiable stays unsatisfiable", func(s *Space) Pred {
			return s.Eq(ttl, v(1)).And(s.Eq(ttl, v(2))).ForgetField(ttl)
		}, func(s *Space) Pred { return s.False() }, "false"},
		{"only the named field", func(s *Space) Pred {
			a, b := s.Eq(ttl, v(1)), s.Eq(proto, v(6))
			return a.And(b).Or(a.Not().And(b.Not())).ForgetField(proto)
		}, func(s *Space) Pred { return s.True() }, "true"},
		{"two fields, either order", func(s *Space) Pred {
			p := s.Eq(ttl, v(1)).And(s.Eq(proto, v(6))).Or(s.Symbol("z"))
			return p.ForgetField(ttl).ForgetField(proto).Or(p.ForgetField(proto).ForgetField(ttl))
		}, func(s *Space) Pred { return s.True() }, "true"},
		{"128-bit field", func(s *Space) Pred {
			return s.Prefix(src6, packet.Value{Hi: 0xfe80 << 48}, 10).And(s.Valid("ipv6")).ForgetField(src6)
		}, func(s *Space) Pred { return s.Valid("ipv6") }, "valid(ipv6)"},
		{"validity", func(s *Space) Pred {
			return s.Valid("vlan").And(s.Symbol("a")).Or(s.Valid("vlan").Not().And(s.Symbol("b"))).ForgetValid("vlan")
		}, func(s *Space) Pred { return s.Symbol("a").Or(s.Symbol("b")) }, "OR\n  a\n  b"},
		{"symbol", func(s *Space) Pred {
			ok := s.Symbol("csum_ok(udp)")
			return ok.Not().And(s.Valid("udp")).ForgetSymbol("csum_ok(udp)")
		}, func(s *Space) Pred { return s.Valid("udp") }, "valid(udp)"},
		{"symbol and validity of one name are different inputs", func(s *Space) Pred {
			return s.Symbol("valid(udp)").And(s.Valid("udp")).ForgetSymbol("valid(udp)")
		}, func(s *Space) Pred { return s.Valid("udp") }, "valid(udp)"},
		{"field never used", func(s *Space) Pred {
			return s.Eq(proto, v(17)).ForgetField(Field{"nowhere", 3})
		}, func(s *Space) Pred { return s.Eq(proto, v(17)) }, "ipv4.proto == 17"},
		{"field used elsewhere", func(s *Space) Pred {
			s.Eq(ttl, v(3))
			return s.Eq(proto, v(17)).ForgetField(ttl)
		}, func(s *Space) Pred { return s.Eq(proto, v(17)) }, "ipv4.proto == 17"},
		{"header and symbol never used", func(s *Space) Pred {
			return s.Eq(proto, v(17)).ForgetValid("nowhere").ForgetSymbol("nothing")
		}, func(s *Space) Pred { return s.Eq(proto, v(17)) }, "ipv4.proto == 17"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSpace()
			got, want := tc.p(s), tc.want(s)
			if !Equivalent(got, want) {
				t.Errorf("got %s, want %s", got, want)
			}
			if diff := cmp.Diff(tc.wantPrint, got.Format("")); diff != "" {
				t.Errorf("Format (-want +got):\n%s", diff)
			}
			if err := s.Err(); err != nil {
				t.Errorf("Err = %v", err)
			}
		})
	}
}

// TestForgetLevelSets checks that quantifying different variable sets of
// one BDD gives different results (exists is memoised on both).
func TestForgetLevelSets(t *testing.T) {
	s := NewSpace()
	a, b := Field{"a", 4}, Field{"b", 4}
	p := s.Eq(a, packet.V(1)).And(s.Eq(b, packet.V(2)))
	pa, pb := p.ForgetField(a), p.ForgetField(b)
	if !Equivalent(pa, s.Eq(b, packet.V(2))) || !Equivalent(pb, s.Eq(a, packet.V(1))) {
		t.Errorf("∃a = %s, ∃b = %s", pa, pb)
	}
	if !p.ForgetField(a).ForgetField(b).IsTrue() || !Equivalent(pa.ForgetField(a), pa) {
		t.Error("repeated forgets")
	}
}

func TestForgetMisuse(t *testing.T) {
	tests := []struct {
		name    string
		p       func(s *Space, p Pred) Pred
		wantErr string
	}{
		{"empty field name", func(s *Space, p Pred) Pred { return p.ForgetField(Field{"", 8}) }, "empty name"},
		{"width 0", func(s *Space, p Pred) Pred { return p.ForgetField(Field{"f", 0}) }, "width 0"},
		{"width 129", func(s *Space, p Pred) Pred { return p.ForgetField(Field{"f", 129}) }, "width 129"},
		{"width clash", func(s *Space, p Pred) Pred { return p.ForgetField(Field{"ipv4.proto", 16}) }, "width 8 and 16"},
		{"empty header", func(s *Space, p Pred) Pred { return p.ForgetValid("") }, "empty header"},
		{"empty symbol", func(s *Space, p Pred) Pred { return p.ForgetSymbol("") }, "empty name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSpace()
			p := tc.p(s, s.Eq(proto, packet.V(17)).Or(s.Symbol("a")))
			if !p.IsFalse() {
				t.Errorf("got %s, want false", p)
			}
			if err := s.Err(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Err = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
	var z Pred
	if !z.ForgetField(proto).IsFalse() || !z.ForgetValid("udp").IsFalse() || !z.ForgetSymbol("a").IsFalse() {
		t.Error("forget on the zero Pred")
	}
}
