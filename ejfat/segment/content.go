package segment

import (
	"bytes"
	"encoding/binary"
)

// Fill writes the synthetic content of event (number, dataID) into b: a
// pseudo-random stream (splitmix64 of the word index) seeded by both, so a
// receiver can check an event it never saw with Verify, and events differ
// from each other and from zeros.
func Fill(b []byte, number uint64, dataID uint16) { fillAt(b, seed(number, dataID), 0) }

// Verify returns the offset of the first byte of b that is not the
// synthetic content of event (number, dataID), or -1 if none.
func Verify(b []byte, number uint64, dataID uint16) int {
	var chunk [512]byte
	s := seed(number, dataID)
	for off := 0; off < len(b); off += len(chunk) {
		want := chunk[:min(len(chunk), len(b)-off)]
		fillAt(want, s, uint64(off/8))
		if !bytes.Equal(b[off:off+len(want)], want) {
			for i := range want {
				if b[off+i] != want[i] {
					return off + i
				}
			}
		}
	}
	return -1
}

func seed(number uint64, dataID uint16) uint64 {
	return number*0x9e3779b97f4a7c15 ^ uint64(dataID)<<48 ^ 0x5ca1ab1e
}

// fillAt writes the stream from word w on (b starts at byte 8w). Four
// words a round: their mixes do not depend on each other, and the CPU
// overlaps their multiplications.
func fillAt(b []byte, s, w uint64) {
	x := s + w
	for ; len(b) >= 32; b, x = b[32:], x+4 {
		q := (*[32]byte)(b)
		binary.LittleEndian.PutUint64(q[0:], mix(x))
		binary.LittleEndian.PutUint64(q[8:], mix(x+1))
		binary.LittleEndian.PutUint64(q[16:], mix(x+2))
		binary.LittleEndian.PutUint64(q[24:], mix(x+3))
	}
	for ; len(b) >= 8; b, x = b[8:], x+1 {
		binary.LittleEndian.PutUint64(b, mix(x))
	}
	if len(b) > 0 {
		var last [8]byte
		binary.LittleEndian.PutUint64(last[:], mix(x))
		copy(b, last[:])
	}
}

// mix is splitmix64's output function of x·γ.
func mix(x uint64) uint64 {
	z := x * 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
