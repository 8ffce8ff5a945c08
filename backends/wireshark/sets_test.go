package wireshark

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
)

// condSet places a condition on one field as the interpreter's evaluator
// decides it: on the boundaries of every constant and on random values,
// for a 32-bit field (placed symbolically) and a 16-bit one (enumerated).
func TestCondSetAgreesWithEval(t *testing.T) {
	for _, c := range []struct {
		cond string
		ok   bool
	}{
		{"h.x == 1000", true}, {"h.x != 7", true}, {"h.x < 0x10000", true}, {"h.x <= 3", true},
		{"h.x > 0xfffffff0", true}, {"h.x >= 77", true}, {"5 < h.x", true}, {"0xffffffff <= h.x", true},
		{"h.x & 0xffff0000 == 0x12340000", true}, {"h.x & 0xffff0000 != 0x12340000", true},
		{"h.x in 0x1000/20", true}, {"h.x in [10, 20]", true}, {"!(h.x == 3) && h.x < 10", true},
		{"h.x == 1 || h.x == 2", true}, {"h.x < 0", true},
		{"h.x & 0xff == 3", false}, {"h.x + 1 == 3", false},
		{"h.y & 0xc000 == 0x4000", true}, {"h.y * 3 == 9", true}, {"h.y >> 4 == 0x4c4", true}, {"h.y in 0x4c00&&&0xff0f", true},
	} {
		m := testutil.ModelSource(t, "header h { x: 32  y: 16 }\nlpg G {\n node In { op input parse h  port out -> T }\n node T { op test "+c.cond+"  port true  port false }\n}\n")
		g := m.Graphs[0]
		e := g.Node("T").Op.Cond
		fs, _ := reads(e)
		set, ok := condSet(m.Schema, e, fs[0])
		if ok != c.ok {
			t.Errorf("%s: placed %v, want %v", c.cond, ok, c.ok)
			continue
		}
		if ok {
			checkSet(t, m.Schema, g, c.cond, e, fs[0], set)
		}
	}
}

func checkSet(t *testing.T, s *packet.Schema, g *dataflow.Graph, cond string, e *packet.Expr, f packet.FieldRef, set valueSet) {
	t.Helper()
	w := s.FieldSpec(f).Width
	samples := []uint64{0, 1, maxOf(w), maxOf(w) - 1}
	for _, x := range set {
		samples = append(samples, x.lo, x.hi, x.lo-1, x.hi+1)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		samples = append(samples, r.Uint64())
	}
	p := packet.NewPacket(s)
	frame := make([]byte, 6)
	for _, v := range samples {
		v &= maxOf(w)
		if w == 32 {
			binary.BigEndian.PutUint32(frame, uint32(v))
		} else {
			binary.BigEndian.PutUint16(frame[4:], uint16(v))
		}
		p.Reset(frame)
		if !p.Extract(f.Header) {
			t.Fatal("h does not fit")
		}
		got, ok := e.Eval(p, nil)
		in := slices.ContainsFunc(set, func(x span) bool { return x.lo <= v && v <= x.hi })
		if !ok || in == got.IsZero() {
			t.Errorf("%s with %s = %#x: the set says %v, the interpreter %v", cond, s.FieldName(f), v, in, !got.IsZero())
			return
		}
	}
}

// Value sets stay sorted and merged.
func TestValueSet(t *testing.T) {
	a := valueSet{{10, 20}, {0, 3}, {4, 5}, {19, 30}}.normal()
	if want := (valueSet{{0, 5}, {10, 30}}); !slices.Equal(a, want) {
		t.Errorf("normal: %v, want %v", a, want)
	}
	if got, want := a.complement(8), (valueSet{{6, 9}, {31, 255}}); !slices.Equal(got, want) {
		t.Errorf("complement: %v, want %v", got, want)
	}
	if got, want := a.intersect(valueSet{{5, 12}}), (valueSet{{5, 5}, {10, 12}}); !slices.Equal(got, want) {
		t.Errorf("intersect: %v, want %v", got, want)
	}
	if len(fullSet(64).complement(64)) != 0 {
		t.Error("the complement of the full 64-bit set is not empty")
	}
}
