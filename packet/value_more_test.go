package packet

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

func bigOf(v Value) *big.Int {
	b := new(big.Int).SetUint64(v.Hi)
	return b.Lsh(b, 64).Or(b, new(big.Int).SetUint64(v.Lo))
}

func TestParseValue(t *testing.T) {
	max128 := "340282366920938463463374607431768211455"
	tests := []struct {
		in   string
		want Value
		err  string
	}{
		{in: "0", want: V(0)},
		{in: "64", want: V(64)},
		{in: "0x00aabbccddee", want: V(0xaabbccddee)},
		{in: "0XFF", want: V(255)},
		{in: "0xfe800000000000000000000000000002", want: Value{Hi: 0xfe80 << 48, Lo: 2}},
		{in: "0x" + strings.Repeat("0", 40) + "1", want: V(1)}, // leading zeros are free
		{in: max128, want: Mask(128)},
		{in: "18446744073709551616", want: Value{Hi: 1}},
		{in: "0x1" + strings.Repeat("0", 32), err: "wider than 128 bits"},
		{in: "340282366920938463463374607431768211456", err: "wider than 128 bits"},
		{in: max128 + "0", err: "wider than 128 bits"},
		{in: "", err: "not a number"},
		{in: "0x", err: "not a number"},
		{in: "-1", err: "not a number"},
		{in: "1e3", err: "not a number"},
		{in: "0x1g", err: "not a number"},
		{in: "10.1.2.3", err: "not a number"},
	}
	for _, tc := range tests {
		got, err := ParseValue(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseValue(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseValue(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	// Random values through math/big's printing.
	r := rand.New(rand.NewPCG(31, 32))
	for range 2000 {
		v := Value{r.Uint64() >> r.IntN(64), r.Uint64()}
		for _, s := range []string{bigOf(v).String(), "0x" + bigOf(v).Text(16)} {
			if got, err := ParseValue(s); err != nil || got != v {
				t.Fatalf("ParseValue(%q) = %v, %v; want %v", s, got, err, v)
			}
		}
	}
}

func TestBitLenAndMasks(t *testing.T) {
	for w := 0; w <= 128; w++ {
		if got := Mask(w).BitLen(); got != w {
			t.Errorf("Mask(%d).BitLen() = %d", w, got)
		}
		if w > 0 && (!Mask(w).Fits(w) || Mask(w).Fits(w-1)) {
			t.Errorf("Mask(%d).Fits wrong", w)
		}
		for n := -1; n <= w+1; n++ {
			// Oracle: the top n of w bits, by big arithmetic.
			k := max(0, min(n, w))
			want := new(big.Int).Lsh(big.NewInt(1), uint(w))
			want.Sub(want, new(big.Int).Lsh(big.NewInt(1), uint(w-k)))
			if got := bigOf(PrefixMask(w, n)); got.Cmp(want) != 0 {
				t.Fatalf("PrefixMask(%d, %d) = %x; want %x", w, n, got, want)
			}
		}
	}
}

func TestAppendHex(t *testing.T) {
	tests := []struct {
		v      Value
		digits int
		want   string
	}{
		{V(0), 0, "0x0"},
		{V(0xa), 3, "0x00a"},
		{V(0x112233445566), 12, "0x112233445566"},
		{V(0x1ff), 1, "0x1ff"},
		{Value{Hi: 0xfe80 << 48, Lo: 3}, 32, "0xfe800000000000000000000000000003"},
	}
	for _, tc := range tests {
		if got := string(tc.v.appendHex(nil, tc.digits)); got != tc.want {
			t.Errorf("%v.appendHex(%d) = %s; want %s", tc.v, tc.digits, got, tc.want)
		}
	}
	r := rand.New(rand.NewPCG(33, 34))
	for range 1000 {
		v := Value{r.Uint64() >> r.IntN(64), r.Uint64() >> r.IntN(64)}
		if got, want := string(v.appendHex(nil, 0)), fmt.Sprintf("0x%s", bigOf(v).Text(16)); got != want {
			t.Fatalf("appendHex = %s; want %s", got, want)
		}
	}
}

// TestPopCount: popcount(e) counts the ones of its operand's 128 bits,
// bit by bit here (Bit), and trailing ones as popcount(x & ~(x + 1)).
func TestPopCount(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	vals := []Value{{}, Mask(1), Mask(63), Mask(64), Mask(65), Mask(128), {Hi: 1 << 63}}
	for range 200 {
		vals = append(vals, Value{Hi: rnd.Uint64() >> rnd.UintN(64), Lo: rnd.Uint64() >> rnd.UintN(64)})
	}
	x := &Expr{Kind: EParam, Width: 128}
	count := &Expr{Kind: EPopCount, Width: 8, A: x}
	trailing := &Expr{Kind: EPopCount, Width: 8, A: &Expr{Kind: EBitAnd, Width: 128, A: x,
		B: &Expr{Kind: EBitNot, Width: 128, A: &Expr{Kind: EAdd, Width: 128, A: x,
			B: &Expr{Kind: EConst, Width: 1, Const: V(1)}}}}}
	for _, v := range vals {
		ones, run := 0, 0
		for i := range 128 {
			if v.Bit(i) {
				ones++
			}
		}
		for run < 128 && v.Bit(run) {
			run++
		}
		got, ok := count.Eval(nil, []Value{v})
		if !ok || got != V(uint64(ones)) {
			t.Errorf("popcount(%v) = %v, want %d", v, got, ones)
		}
		if got, _ := trailing.Eval(nil, []Value{v}); got != V(uint64(run)) {
			t.Errorf("trailing ones of %v = %v, want %d", v, got, run)
		}
	}
}
