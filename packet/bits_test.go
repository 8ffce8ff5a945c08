package packet

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// refGet is the slow oracle: one bit at a time, MSB first.
func refGet(b []byte, off, width int) Value {
	var v Value
	for i := off; i < off+width; i++ {
		v = v.Shl(1)
		v.Lo |= uint64(b[i/8] >> (7 - i%8) & 1)
	}
	return v
}

func refSet(b []byte, off, width int, v Value) {
	for i := 0; i < width; i++ {
		bit := off + i
		if v.Bit(width - 1 - i) {
			b[bit/8] |= 0x80 >> (bit % 8)
		} else {
			b[bit/8] &^= 0x80 >> (bit % 8)
		}
	}
}

func TestGetBitsKnown(t *testing.T) {
	// An IPv4 header: version 4, ihl 5, flags DF, fragment offset 0x123.
	ip := []byte{0x45, 0x00, 0x00, 0x54, 0xab, 0xcd, 0x41, 0x23, 0x40, 0x11, 0, 0,
		10, 1, 2, 3, 0xc0, 0xa8, 0x00, 0x01}
	tests := []struct {
		name       string
		off, width int
		want       Value
	}{
		{"version", 0, 4, V(4)},
		{"ihl", 4, 4, V(5)},
		{"total length", 16, 16, V(0x54)},
		{"flags", 48, 3, V(2)},
		{"fragment offset", 51, 13, V(0x123)},
		{"ttl", 64, 8, V(0x40)},
		{"src", 96, 32, V(0x0a010203)},
		{"dst", 128, 32, V(0xc0a80001)},
		{"src+dst", 96, 64, V(0x0a010203c0a80001)},
		{"48 aligned", 96, 48, V(0x0a010203c0a8)},
		{"ttl..dst 96 bits", 64, 96, Value{Hi: 0x40110000, Lo: 0x0a010203c0a80001}},
		{"whole 128", 0, 128, Value{Hi: 0x45000054abcd4123, Lo: 0x401100000a010203}},
		{"unaligned 128", 4, 128, Value{Hi: 0x5000054abcd41234, Lo: 0x01100000a010203c}},
	}
	for _, tc := range tests {
		got, ok := GetBits(ip, tc.off, tc.width)
		if !ok || got != tc.want {
			t.Errorf("%s: GetBits(%d, %d) = %v, %v; want %v", tc.name, tc.off, tc.width, got, ok, tc.want)
		}
	}
}

func TestBitsOutOfRange(t *testing.T) {
	b := make([]byte, 4)
	tests := []struct {
		name       string
		b          []byte
		off, width int
	}{
		{"nil", nil, 0, 1},
		{"zero width", b, 0, 0},
		{"negative width", b, 0, -3},
		{"too wide", make([]byte, 32), 0, 129},
		{"negative offset", b, -1, 8},
		{"one bit past end", b, 25, 8},
		{"aligned past end", b, 8, 32},
		{"huge offset", b, math.MaxInt, 8},
		{"huge negative", b, math.MinInt, 8},
		{"128 in 15 bytes", make([]byte, 15), 0, 128},
	}
	for _, tc := range tests {
		if v, ok := GetBits(tc.b, tc.off, tc.width); ok {
			t.Errorf("%s: GetBits = %v, true; want false", tc.name, v)
		}
		before := bytes.Clone(tc.b)
		if SetBits(tc.b, tc.off, tc.width, Mask(128)) {
			t.Errorf("%s: SetBits = true; want false", tc.name)
		}
		if !bytes.Equal(before, tc.b) {
			t.Errorf("%s: SetBits wrote %x on failure", tc.name, tc.b)
		}
	}
}

// TestBitsRandom compares with the oracle at random offsets and widths,
// in-range and out, favouring the aligned fast-path widths.
func TestBitsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fast := []int{8, 16, 32, 48, 64, 128}
	for n := 0; n < 200000; n++ {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		width := 1 + r.IntN(128)
		off := r.IntN(len(b)*8 + 16)
		if r.IntN(3) == 0 {
			width, off = fast[r.IntN(len(fast))], r.IntN(len(b)+2)*8
		}
		in := off+width <= len(b)*8
		got, ok := GetBits(b, off, width)
		if ok != in {
			t.Fatalf("GetBits(len %d, %d, %d) ok = %v", len(b), off, width, ok)
		}
		if in && got != refGet(b, off, width) {
			t.Fatalf("GetBits(%x, %d, %d) = %v; want %v", b, off, width, got, refGet(b, off, width))
		}
		// Set random bits, including ones above width that must be ignored.
		v := Value{r.Uint64(), r.Uint64()}
		want := bytes.Clone(b)
		if in {
			refSet(want, off, width, v)
		}
		if ok := SetBits(b, off, width, v); ok != in || !bytes.Equal(b, want) {
			t.Fatalf("SetBits(len %d, %d, %d, %v) = %v, %x; want %x", len(b), off, width, v, ok, b, want)
		}
	}
}

func TestBitsNoAlloc(t *testing.T) {
	b := make([]byte, 64)
	var sink Value
	allocs := testing.AllocsPerRun(100, func() {
		for _, f := range [][2]int{{0, 48}, {96, 32}, {4, 4}, {51, 13}, {3, 128}, {8, 128}, {5, 70}} {
			v, _ := GetBits(b, f[0], f[1])
			SetBits(b, f[0], f[1], v.Add(V(1)))
			sink = sink.Xor(v)
		}
	})
	if allocs != 0 {
		t.Errorf("GetBits/SetBits allocate %v per run", allocs)
	}
	_ = sink
}

func BenchmarkGetBits(b *testing.B) {
	pkt := make([]byte, 64)
	for _, bc := range []struct {
		name       string
		off, width int
	}{
		{"mac48", 0, 48},
		{"ipv4dst32", 240, 32},
		{"ipv6dst128", 304, 128},
		{"ihl4", 116, 4},
		{"frag13", 163, 13},
		{"unaligned64", 13, 64},
		{"unaligned128", 13, 128},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var sink Value
			for b.Loop() {
				v, _ := GetBits(pkt, bc.off, bc.width)
				sink = sink.Xor(v)
			}
			_ = sink
		})
	}
}

func BenchmarkSetBits(b *testing.B) {
	pkt := make([]byte, 64)
	for _, bc := range []struct {
		name       string
		off, width int
	}{
		{"mac48", 0, 48},
		{"frag13", 163, 13},
		{"unaligned128", 13, 128},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			v := Mask(128)
			for b.Loop() {
				SetBits(pkt, bc.off, bc.width, v)
			}
		})
	}
}
