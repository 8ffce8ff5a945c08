package predicate_test

import (
	"fmt"
	"testing"

	"github.com/dragonet-go/nsc/packet"
	. "github.com/dragonet-go/nsc/predicate"
)

// pairs returns 20 pairs of atoms (40 atoms): even pairs are two field
// atoms sharing one field, odd pairs a symbol and a validity, and the first
// and last pairs also share ipv4.proto.
func pairs(s *Space) (a, b []Pred) {
	proto := Field{"ipv4.proto", 8}
	for i := range 20 {
		f := Field{fmt.Sprintf("f%d", i), 12}
		switch {
		case i == 0:
			a = append(a, s.Eq(proto, packet.V(17)))
			b = append(b, s.Range(f, packet.V(100), packet.V(200)))
		case i == 19:
			a = append(a, s.Masked(f, packet.V(0x400), packet.V(0xc00)))
			b = append(b, s.Cmp(proto, "!=", packet.V(6)))
		case i%2 == 0:
			a = append(a, s.Eq(f, packet.V(uint64(i))))
			b = append(b, s.Range(f, packet.V(1000), packet.V(2000)))
		default:
			a = append(a, s.Symbol(fmt.Sprintf("pred(N%d,out)", i)))
			b = append(b, s.Valid(fmt.Sprintf("h%d", i)))
		}
	}
	return a, b
}

// BenchmarkEquivalent40Atoms builds ∧ᵢ(aᵢ ∨ bᵢ), whose DNF has 2^20 > 10^6
// terms, and two differently built equivalents, then compares them.
func BenchmarkEquivalent40Atoms(b *testing.B) {
	for b.Loop() {
		s := NewSpace()
		as, bs := pairs(s)
		cnf := s.True()
		for i := range as {
			cnf = cnf.And(as[i].Or(bs[i]))
		}
		// ¬∨ᵢ(¬aᵢ ∧ ¬bᵢ)
		var clauses []Pred
		for i := range as {
			clauses = append(clauses, as[i].Not().And(bs[i].Not()))
		}
		demorgan := s.Or(clauses...).Not()
		// grouped in pairs of clauses, from the last pair down
		regrouped := s.True()
		for i := len(as) - 2; i >= 0; i -= 2 {
			regrouped = s.And(as[i].Or(bs[i]).And(as[i+1].Or(bs[i+1])), regrouped)
		}
		if !Equivalent(cnf, demorgan) || !Equivalent(demorgan, regrouped) || !Implies(regrouped, cnf) {
			b.Fatal("equivalent formulas compared unequal")
		}
		if Equivalent(cnf, cnf.And(as[3])) {
			b.Fatal("different formulas compared equal")
		}
	}
}

// BenchmarkPortChain propagates predicates along an Rx path as the embedder
// does: a queue filter, then test nodes (ethertype, ipv4 validity, protocol,
// 32 socket port ranges), each true port carrying the atom and each false
// port its negation, checking every port for satisfiability and the socket
// ports against the queue filter, and finally that the ports partition the
// queue's packets.
func BenchmarkPortChain(b *testing.B) {
	for b.Loop() {
		s := NewSpace()
		queue, ports := rxPorts(s)
		for i, t := range ports[3 : len(ports)-1] {
			lo := 0x3f00 + uint64(i)*32 // the first ports fall outside the queue filter
			if Satisfiable(t) != (lo+15 >= 0x4000) {
				b.Fatalf("socket %d: satisfiable = %v", i, Satisfiable(t))
			}
			if Satisfiable(t) && !Implies(t, queue) {
				b.Fatal("socket port outside queue filter")
			}
		}
		if !Equivalent(s.Or(ports...), queue) {
			b.Fatal("ports do not partition the queue")
		}
	}
}

// rxPorts builds a receive path's port predicates: not IPv4, IPv4 header
// invalid, not UDP, 32 sockets by UDP port range, and no socket.
func rxPorts(s *Space) (queue Pred, ports []Pred) {
	etype := Field{"eth.type", 16}
	proto := Field{"ipv4.proto", 8}
	dport := Field{"udp.dport", 16}
	queue = s.Symbol("pred(RxQueue,q1)").And(s.Masked(dport, packet.V(0x4000), packet.V(0xc000)))
	isIP := s.Eq(etype, packet.V(0x0800))
	ip, notIP := queue.And(isIP), queue.And(isIP.Not())
	ok := ip.And(s.Valid("ipv4"))
	udpT := s.Eq(proto, packet.V(17))
	udp, other := ok.And(udpT), ok.And(udpT.Not())
	ports = []Pred{notIP, ip.And(s.Valid("ipv4").Not()), other}
	rest := udp
	for i := range 32 {
		lo := 0x3f00 + uint64(i)*32
		sock := s.Range(dport, packet.V(lo), packet.V(lo+15))
		ports = append(ports, rest.And(sock))
		rest = rest.And(sock.Not())
	}
	return queue, append(ports, rest)
}

// BenchmarkForgetChain runs 30 "set field = value" transformers in a row,
// (∃f. P) ∧ f == v, over ∧ᵢ(aᵢ ∨ bᵢ) of pairs: 12 of the fields are those
// of its 40 atoms (proto, f0, f2, …, f18, f19), interleaved with 18 fields it
// does not read. The result keeps the 9 symbol/validity pairs and the 30
// equalities.
func BenchmarkForgetChain(b *testing.B) { benchmarkForgetChain(b, false) }

// BenchmarkForgetChainDNF is BenchmarkForgetChain, then the DNF of the
// result (512 terms of 39 literals), and for comparison the DNF of the same
// predicate built without Forget.
func BenchmarkForgetChainDNF(b *testing.B) { benchmarkForgetChain(b, true) }

func benchmarkForgetChain(b *testing.B, dnf bool) {
	var fields []Field
	read := []Field{{"ipv4.proto", 8}}
	for i := 0; i < 20; i += 2 {
		read = append(read, Field{fmt.Sprintf("f%d", i), 12})
	}
	read = append(read, Field{"f19", 12})
	for i := range 30 {
		if i%5 < 2 && len(read) > 0 || i >= 18 && len(read) > 0 {
			fields, read = append(fields, read[0]), read[1:]
		} else {
			fields = append(fields, Field{fmt.Sprintf("set%d", i), 16})
		}
	}
	for b.Loop() {
		s := NewSpace()
		as, bs := pairs(s)
		p := s.True()
		for i := range as {
			p = p.And(as[i].Or(bs[i]))
		}
		want := s.True()
		for i := 1; i < 19; i += 2 {
			want = want.And(as[i].Or(bs[i]))
		}
		for i, f := range fields {
			eq := s.Eq(f, packet.V(uint64(i)))
			p = p.ForgetField(f).And(eq)
			want = want.And(eq)
		}
		if !Equivalent(p, want) {
			b.Fatalf("after the sets: %s", p)
		}
		if !dnf {
			continue
		}
		if n := len(p.DNF()); n != 512 {
			b.Fatalf("DNF has %d terms, want 512", n)
		}
	}
}

// BenchmarkForgetPorts builds the 35 ports of BenchmarkPortChain, then
// sends each through "set udp.dport = 53", "checksum compute udp" and
// "push vlan", and prints the result.
func BenchmarkForgetPorts(b *testing.B) {
	dport := Field{"udp.dport", 16}
	for b.Loop() {
		s := NewSpace()
		_, ports := rxPorts(s)
		set, csum, vlan := s.Eq(dport, packet.V(53)), s.Symbol("csum_ok(udp)"), s.Valid("vlan")
		all := s.False()
		for _, p := range ports {
			p = p.ForgetField(dport).And(set).ForgetSymbol("csum_ok(udp)").And(csum).ForgetValid("vlan").And(vlan)
			if Satisfiable(p) && len(p.Format("")) == 0 {
				b.Fatal("empty print")
			}
			all = all.Or(p)
		}
		want := s.Symbol("pred(RxQueue,q1)").And(set, csum, vlan)
		if !Equivalent(all, want) {
			b.Fatalf("ports after the transformers: %s", all)
		}
	}
}
