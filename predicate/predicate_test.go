package predicate_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/packet"
	. "github.com/dragonet-go/nsc/predicate"
)

var (
	proto = Field{"ipv4.proto", 8}
	dport = Field{"udp.dport", 16}
	dst   = Field{"ipv4.dst", 32}
	tick  = Field{"lb.tick", 64}
	src6  = Field{"ipv6.src", 128}
	x     = Field{"x", 8}
)

const max64 = ^uint64(0)

func TestSatisfiability(t *testing.T) {
	type want struct{ Sat, True bool }
	unsat, sat, taut := want{false, false}, want{true, false}, want{true, true}
	tests := []struct {
		name string
		p    func(s *Space) Pred
		want want
	}{
		{"proto==17 and proto==6", func(s *Space) Pred { return s.Eq(proto, packet.V(17)).And(s.Eq(proto, packet.V(6))) }, unsat},
		{"proto==17 and proto!=17", func(s *Space) Pred { return s.Eq(proto, packet.V(17)).And(s.Cmp(proto, "!=", packet.V(17))) }, unsat},
		{"proto==17 or proto!=17", func(s *Space) Pred { return s.Eq(proto, packet.V(17)).Or(s.Cmp(proto, "!=", packet.V(17))) }, taut},
		{"proto==17 and dport==17", func(s *Space) Pred { return s.Eq(proto, packet.V(17)).And(s.Eq(dport, packet.V(17))) }, sat},
		{"8-bit field never equals 300", func(s *Space) Pred { return s.Eq(proto, packet.V(300)) }, unsat},
		{"8-bit field always below 300", func(s *Space) Pred { return s.Cmp(proto, "<", packet.V(300)) }, taut},
		{"8-bit field never above 300", func(s *Space) Pred { return s.Cmp(proto, ">", packet.V(300)) }, unsat},
		{"8-bit field <= 255", func(s *Space) Pred { return s.Cmp(proto, "<=", packet.V(255)) }, taut},
		{"8-bit field >= 255", func(s *Space) Pred { return s.Cmp(proto, ">=", packet.V(255)) }, sat},
		{"nothing below 0", func(s *Space) Pred { return s.Cmp(proto, "<", packet.V(0)) }, unsat},
		{"everything >= 0", func(s *Space) Pred { return s.Cmp(proto, ">=", packet.V(0)) }, taut},
		{"empty range", func(s *Space) Pred { return s.Range(x, packet.V(20), packet.V(10)) }, unsat},
		{"x in [5,5] and x!=5", func(s *Space) Pred { return s.Range(x, packet.V(5), packet.V(5)).And(s.Cmp(x, "!=", packet.V(5))) }, unsat},
		{"x in [10,20] and x in [21,30]", func(s *Space) Pred {
			return s.Range(x, packet.V(10), packet.V(20)).And(s.Range(x, packet.V(21), packet.V(30)))
		}, unsat},
		{"x in [10,20] and x in [20,30]", func(s *Space) Pred {
			return s.Range(x, packet.V(10), packet.V(20)).And(s.Range(x, packet.V(20), packet.V(30)))
		}, sat},
		{"mask bit above width must be 0", func(s *Space) Pred { return s.Masked(proto, packet.V(0x100), packet.V(0x100)) }, unsat},
		{"mask bit above width is 0", func(s *Space) Pred { return s.Masked(proto, packet.V(0), packet.V(0x100)) }, taut},
		{"empty mask", func(s *Space) Pred { return s.Masked(proto, packet.V(3), packet.V(0)) }, taut},
		{"prefix of length 0", func(s *Space) Pred { return s.Prefix(dst, packet.V(0x0a000000), 0) }, taut},
		{"64-bit: top half and below 2^63", func(s *Space) Pred {
			return s.Range(tick, packet.V(1<<63), packet.V(max64)).And(s.Cmp(tick, "<", packet.V(1<<63)))
		}, unsat},
		{"64-bit: range and max", func(s *Space) Pred {
			return s.Range(tick, packet.V(max64-1), packet.V(max64)).And(s.Eq(tick, packet.V(max64)))
		}, sat},
		{"128-bit: two different addresses", func(s *Space) Pred {
			return s.Eq(src6, packet.Value{Hi: 1, Lo: 7}).And(s.Eq(src6, packet.Value{Hi: 0, Lo: 7}))
		}, unsat},
		{"128-bit: address outside range", func(s *Space) Pred {
			return s.Eq(src6, packet.Value{Hi: 2}).And(s.Range(src6, packet.Value{Lo: max64}, packet.Value{Hi: 1, Lo: max64}))
		}, unsat},
		{"128-bit: <= all ones", func(s *Space) Pred { return s.Cmp(src6, "<=", packet.Mask(128)) }, taut},
		{"valid and not valid", func(s *Space) Pred { return s.Valid("udp").And(s.Valid("udp").Not()) }, unsat},
		{"symbol", func(s *Space) Pred { return s.Symbol("pred(TxQueue,out)") }, sat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSpace()
			p := tc.p(s)
			got := want{Satisfiable(p), p.IsTrue()}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", p, diff)
			}
			if p.IsFalse() == got.Sat {
				t.Errorf("IsFalse = %v, Satisfiable = %v", p.IsFalse(), got.Sat)
			}
			if err := s.Err(); err != nil {
				t.Errorf("Err = %v", err)
			}
		})
	}
}

func TestImplication(t *testing.T) {
	v := packet.V
	ipv6 := func(hi, lo uint64) packet.Value { return packet.Value{Hi: hi, Lo: lo} }
	type want struct{ AB, BA bool } // a ⇒ b, b ⇒ a
	equiv, fwd, neither := want{true, true}, want{true, false}, want{false, false}
	tests := []struct {
		name string
		a, b func(s *Space) Pred
		want want
	}{
		{"masked implies >=", func(s *Space) Pred { return s.Masked(dport, v(0x4000), v(0xC000)) },
			func(s *Space) Pred { return s.Cmp(dport, ">=", v(16384)) }, fwd},
		{"masked is a range", func(s *Space) Pred { return s.Masked(dport, v(0x4000), v(0xC000)) },
			func(s *Space) Pred { return s.Range(dport, v(0x4000), v(0x7fff)) }, equiv},
		{"masked ignores value bits outside mask", func(s *Space) Pred { return s.Masked(dport, v(0x4abc), v(0xC000)) },
			func(s *Space) Pred { return s.Masked(dport, v(0x4000), v(0xC000)) }, equiv},
		{"prefix is a range", func(s *Space) Pred { return s.Prefix(dst, v(0x0a000000), 8) },
			func(s *Space) Pred { return s.Range(dst, v(0x0a000000), v(0x0affffff)) }, equiv},
		{"longer prefix implies shorter", func(s *Space) Pred { return s.Prefix(dst, v(0x0a010000), 16) },
			func(s *Space) Pred { return s.Prefix(dst, v(0x0a000000), 8) }, fwd},
		{"prefix is masked", func(s *Space) Pred { return s.Prefix(dst, v(0x0a0000ff), 8) },
			func(s *Space) Pred { return s.Masked(dst, v(0x0a000000), v(0xff000000)) }, equiv},
		{"prefix overlapping range", func(s *Space) Pred { return s.Prefix(dst, v(0x0a000000), 8) },
			func(s *Space) Pred { return s.Range(dst, v(0x0a800000), v(0x0b800000)) }, neither},
		{"!= is < or >", func(s *Space) Pred { return s.Cmp(x, "!=", v(5)) },
			func(s *Space) Pred { return s.Cmp(x, "<", v(5)).Or(s.Cmp(x, ">", v(5))) }, equiv},
		{"!= is not ==", func(s *Space) Pred { return s.Cmp(x, "!=", v(5)) },
			func(s *Space) Pred { return s.Eq(x, v(5)).Not() }, equiv},
		{"== implies != other", func(s *Space) Pred { return s.Eq(x, v(5)) },
			func(s *Space) Pred { return s.Cmp(x, "!=", v(6)) }, fwd},
		{">= is not <", func(s *Space) Pred { return s.Cmp(x, ">=", v(77)) },
			func(s *Space) Pred { return s.Cmp(x, "<", v(77)).Not() }, equiv},
		{"> is >= next", func(s *Space) Pred { return s.Cmp(x, ">", v(77)) },
			func(s *Space) Pred { return s.Cmp(x, ">=", v(78)) }, equiv},
		{"point in range", func(s *Space) Pred { return s.Eq(x, v(15)) },
			func(s *Space) Pred { return s.Range(x, v(10), v(20)) }, fwd},
		{"point outside range", func(s *Space) Pred { return s.Eq(x, v(21)) },
			func(s *Space) Pred { return s.Range(x, v(10), v(20)) }, neither},
		{"range is two comparisons", func(s *Space) Pred { return s.Range(x, v(10), v(20)) },
			func(s *Space) Pred { return s.Cmp(x, ">", v(9)).And(s.Cmp(x, "<", v(21))) }, equiv},
		{"range [v,v] is ==", func(s *Space) Pred { return s.Range(x, v(9), v(9)) },
			func(s *Space) Pred { return s.Eq(x, v(9)) }, equiv},
		{"64-bit top half", func(s *Space) Pred { return s.Range(tick, v(1<<63), v(max64)) },
			func(s *Space) Pred { return s.Prefix(tick, v(1<<63), 1) }, equiv},
		{"64-bit range in range", func(s *Space) Pred { return s.Range(tick, v(1<<40), v(1<<50)) },
			func(s *Space) Pred { return s.Range(tick, v(1<<40-1), v(max64-1)) }, fwd},
		{"128-bit range is a /64 prefix", func(s *Space) Pred { return s.Range(src6, ipv6(1, 0), ipv6(1, max64)) },
			func(s *Space) Pred { return s.Prefix(src6, ipv6(1, 12345), 64) }, equiv},
		{"128-bit /64 prefix is masked", func(s *Space) Pred { return s.Prefix(src6, ipv6(1, 0), 64) },
			func(s *Space) Pred { return s.Masked(src6, ipv6(1, 0), ipv6(max64, 0)) }, equiv},
		{"128-bit range across the halves", func(s *Space) Pred { return s.Eq(src6, ipv6(1, 0)) },
			func(s *Space) Pred { return s.Range(src6, ipv6(0, max64-1), ipv6(1, 1)) }, fwd},
		{"128-bit range is two comparisons", func(s *Space) Pred { return s.Range(src6, ipv6(0, max64-1), ipv6(1, 1)) },
			func(s *Space) Pred {
				return s.Cmp(src6, ">=", ipv6(0, max64-1)).And(s.Cmp(src6, "<=", ipv6(1, 1)))
			}, equiv},
		{"128-bit == is full mask", func(s *Space) Pred { return s.Eq(src6, ipv6(0xfe80, 0x1234)) },
			func(s *Space) Pred { return s.Masked(src6, ipv6(0xfe80, 0x1234), packet.Mask(128)) }, equiv},
		{"128-bit == is /128 prefix", func(s *Space) Pred { return s.Eq(src6, ipv6(0xfe80, 0x1234)) },
			func(s *Space) Pred { return s.Prefix(src6, ipv6(0xfe80, 0x1234), 128) }, equiv},
		{"128-bit == neighbours", func(s *Space) Pred { return s.Eq(src6, ipv6(0xfe80, 0x1234)) },
			func(s *Space) Pred { return s.Eq(src6, ipv6(0xfe80, 0x1235)) }, neither},
		{"different fields independent", func(s *Space) Pred { return s.Eq(proto, v(17)) },
			func(s *Space) Pred { return s.Eq(dport, v(17)) }, neither},
		{"symbol vs valid of same name", func(s *Space) Pred { return s.Symbol("valid(udp)") },
			func(s *Space) Pred { return s.Valid("udp") }, neither},
		{"false implies anything", func(s *Space) Pred { return s.False() },
			func(s *Space) Pred { return s.Symbol("a") }, fwd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSpace()
			a, b := tc.a(s), tc.b(s)
			got := want{Implies(a, b), Implies(b, a)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("a=%s b=%s (-want +got):\n%s", a, b, diff)
			}
			if e := Equivalent(a, b); e != (got.AB && got.BA) {
				t.Errorf("Equivalent = %v, implications %+v", e, got)
			}
			if err := s.Err(); err != nil {
				t.Errorf("Err = %v", err)
			}
		})
	}
}

// env is a concrete packet for Pred.Eval.
type env struct {
	fields  map[string]packet.Value
	valid   map[string]bool
	symbols map[string]bool
}

func (e env) FieldValue(name string) packet.Value { return e.fields[name] }
func (e env) HeaderValid(h string) bool           { return e.valid[h] }
func (e env) SymbolValue(name string) bool        { return e.symbols[name] }

func TestEval(t *testing.T) {
	s := NewSpace()
	p := s.Valid("udp").And(s.Eq(proto, packet.V(17)), s.Masked(dport, packet.V(0x4000), packet.V(0xc000)), s.Symbol("q").Not())
	tests := []struct {
		name string
		e    env
		want bool
	}{
		{"match", env{map[string]packet.Value{"ipv4.proto": packet.V(17), "udp.dport": packet.V(0x4321)}, map[string]bool{"udp": true}, nil}, true},
		{"bits above width ignored", env{map[string]packet.Value{"ipv4.proto": packet.V(0x111), "udp.dport": packet.V(0x14321)}, map[string]bool{"udp": true}, nil}, true},
		{"wrong port", env{map[string]packet.Value{"ipv4.proto": packet.V(17), "udp.dport": packet.V(0x8321)}, map[string]bool{"udp": true}, nil}, false},
		{"symbol set", env{map[string]packet.Value{"ipv4.proto": packet.V(17), "udp.dport": packet.V(0x4321)}, map[string]bool{"udp": true}, map[string]bool{"q": true}}, false},
		{"udp invalid", env{map[string]packet.Value{"ipv4.proto": packet.V(17), "udp.dport": packet.V(0x4321)}, nil, nil}, false},
	}
	for _, tc := range tests {
		if got := p.Eval(tc.e); got != tc.want {
			t.Errorf("%s: Eval = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCounterexample(t *testing.T) {
	v := packet.V
	tests := []struct {
		name string
		a, b func(s *Space) Pred
		want string // "" when a implies b
	}{
		{"range not masked", func(s *Space) Pred { return s.Cmp(dport, ">=", v(16384)) },
			func(s *Space) Pred { return s.Masked(dport, v(0x4000), v(0xc000)) }, "udp.dport=0x8000/0x8000"},
		{"masked implies range", func(s *Space) Pred { return s.Masked(dport, v(0x4000), v(0xc000)) },
			func(s *Space) Pred { return s.Cmp(dport, ">=", v(16384)) }, ""},
		{"fields, validity and symbols", func(s *Space) Pred {
			return s.Symbol("pred(TxQueue,out)").Not().And(s.Valid("udp"), s.Eq(proto, v(17)), s.Masked(dport, v(0x4000), v(0xc000)))
		}, func(s *Space) Pred { return s.False() }, "ipv4.proto=17, udp.dport=0x4000/0xc000, valid(udp), not pred(TxQueue,out)"},
		{"everything vs nothing", func(s *Space) Pred { return s.True() },
			func(s *Space) Pred { return s.False() }, "any packet"},
		{"128-bit", func(s *Space) Pred { return s.Prefix(src6, packet.Value{Hi: 0xfe80 << 48}, 10) },
			func(s *Space) Pred { return s.Eq(src6, packet.Value{Hi: 0xfe80 << 48}).Not() },
			"ipv6.src=0xfe800000000000000000000000000000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSpace()
			a, b := tc.a(s), tc.b(s)
			c, ok := Counterexample(a, b)
			if ok != (tc.want != "") {
				t.Fatalf("ok = %v, class %s", ok, c)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tc.want, c.String()); diff != "" {
				t.Errorf("String (-want +got):\n%s", diff)
			}
			if !a.Eval(c) || b.Eval(c) {
				t.Errorf("class %s: a=%v b=%v, want true false", c, a.Eval(c), b.Eval(c))
			}
		})
	}
}

func TestClassAccessors(t *testing.T) {
	s := NewSpace()
	p := s.Symbol("q").Not().And(s.Valid("udp"), s.Eq(proto, packet.V(17)), s.Masked(dport, packet.V(0x4000), packet.V(0xc000)))
	c, ok := Counterexample(p, s.False())
	if !ok {
		t.Fatal("no class")
	}
	wantFields := []FieldClass{
		{Field: proto, Value: packet.V(17), Mask: packet.V(0xff)},
		{Field: dport, Value: packet.V(0x4000), Mask: packet.V(0xc000)},
	}
	if diff := cmp.Diff(wantFields, c.Fields()); diff != "" {
		t.Errorf("Fields (-want +got):\n%s", diff)
	}
	type lit struct{ Value, Constrained bool }
	check := func(name string, f func(string) (bool, bool), want lit) {
		v, k := f(name)
		if diff := cmp.Diff(want, lit{v, k}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	check("udp", c.Valid, lit{true, true})
	check("tcp", c.Valid, lit{false, false})
	check("q", c.Symbol, lit{false, true})
	check("r", c.Symbol, lit{false, false})
}

func TestSample(t *testing.T) {
	small := Field{"small", 3}
	s := NewSpace()
	p := s.Range(small, packet.V(0), packet.V(3)).And(s.Symbol("q").Or(s.Valid("h")))
	seen := map[uint64]int{}
	for i := range 400 {
		rnd := rand.New(rand.NewPCG(uint64(i), 7))
		c, ok := s.Sample(p, rnd)
		if !ok {
			t.Fatal("unsat")
		}
		if !p.Eval(c) {
			t.Fatalf("sample %s does not satisfy p", c)
		}
		fs := c.Fields()
		if len(fs) != 1 || fs[0].Mask != packet.Mask(3) {
			t.Fatalf("sample %s: want small fully fixed", c)
		}
		_, qk := c.Symbol("q")
		_, hk := c.Valid("h")
		if !qk || !hk {
			t.Fatalf("sample %s: want q and valid(h) fixed", c)
		}
		seen[fs[0].Value.Lo]++
	}
	want := []uint64{0, 1, 2, 3}
	var got []uint64
	for v := range uint64(8) {
		if seen[v] > 0 {
			got = append(got, v)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values drawn (-want +got):\n%s", diff)
	}
	for v, n := range seen {
		if n < 50 { // uniform: about 100 each
			t.Errorf("value %d drawn %d times of 400", v, n)
		}
	}
	a, _ := s.Sample(p, rand.New(rand.NewPCG(3, 3)))
	b, _ := s.Sample(p, rand.New(rand.NewPCG(3, 3)))
	if a.String() != b.String() {
		t.Errorf("same seed gave %s and %s", a, b)
	}
	if _, ok := s.Sample(s.False(), nil); ok {
		t.Error("sampled False")
	}
	if c, ok := s.Sample(p, nil); !ok || !p.Eval(c) {
		t.Errorf("nil rnd: %s %v", c, ok)
	}
}

func TestMisuse(t *testing.T) {
	tests := []struct {
		name    string
		p       func(s *Space) Pred
		wantErr string
	}{
		{"width 0", func(s *Space) Pred { return s.Eq(Field{"f", 0}, packet.V(0)) }, "width 0"},
		{"width 129", func(s *Space) Pred { return s.Range(Field{"f", 129}, packet.V(0), packet.V(1)) }, "width 129"},
		{"negative width", func(s *Space) Pred { return s.Masked(Field{"f", -3}, packet.V(0), packet.V(1)) }, "width -3"},
		{"empty field name", func(s *Space) Pred { return s.Prefix(Field{"", 8}, packet.V(0), 1) }, "empty name"},
		{"width clash", func(s *Space) Pred {
			s.Eq(Field{"f", 8}, packet.V(1))
			return s.Eq(Field{"f", 16}, packet.V(1))
		}, "width 8 and 16"},
		{"unknown op", func(s *Space) Pred { return s.Cmp(proto, "=>", packet.V(1)) }, `unknown comparison "=>"`},
		{"prefix too long", func(s *Space) Pred { return s.Prefix(dst, packet.V(0), 33) }, "prefix length 33"},
		{"prefix negative", func(s *Space) Pred { return s.Prefix(dst, packet.V(0), -1) }, "prefix length -1"},
		{"empty symbol", func(s *Space) Pred { return s.Symbol("") }, "empty name"},
		{"empty header", func(s *Space) Pred { return s.Valid("") }, "empty header"},
		{"mixed spaces", func(s *Space) Pred { return s.Symbol("a").Or(NewSpace().Symbol("b")) }, "different Spaces"},
		{"mixed spaces n-ary", func(s *Space) Pred { return s.Or(NewSpace().Symbol("b")) }, "different Spaces"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSpace()
			p := tc.p(s)
			if !p.IsFalse() {
				t.Errorf("got %s, want false", p)
			}
			if err := s.Err(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Err = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}

func TestMixedSpaceQueries(t *testing.T) {
	s1, s2 := NewSpace(), NewSpace()
	a, b := s1.True(), s2.True()
	if Equivalent(a, b) || Implies(a, b) {
		t.Error("predicates of different Spaces compared as related")
	}
	if _, ok := Counterexample(a, b); !ok {
		t.Error("Counterexample across Spaces claimed implication")
	}
	if _, ok := s1.Sample(b, nil); ok {
		t.Error("Sample of a foreign predicate succeeded")
	}
	if s1.Err() == nil || s2.Err() == nil {
		t.Errorf("errors not reported: %v / %v", s1.Err(), s2.Err())
	}
}

func TestZeroPred(t *testing.T) {
	var z Pred
	s := NewSpace()
	a := s.Symbol("a")
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"zero is false", z.IsFalse(), true},
		{"zero unsat", Satisfiable(z), false},
		{"zero and a is false", z.And(a).IsFalse(), true},
		{"zero or a is a", Equivalent(z.Or(a), a), true},
		{"not zero stays zero", z.Not().IsFalse(), true},
		{"zero implies a", Implies(z, a), true},
		{"a does not imply zero", Implies(a, z), false},
		{"zero equivalent zero", Equivalent(z, z), true},
		{"zero and zero", z.And(z).IsFalse(), true},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v", tc.name, tc.got)
		}
	}
	if c, ok := Counterexample(a, z); !ok || !a.Eval(c) {
		t.Errorf("Counterexample(a, zero) = %s, %v", c, ok)
	}
	if s.Err() != nil {
		t.Errorf("Err = %v", s.Err())
	}
	if got := z.Format("Z"); got != "Z:\nfalse" {
		t.Errorf("Format = %q", got)
	}
}
