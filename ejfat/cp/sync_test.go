package cp

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzParseSync checks parseSync against the spec's layout: it accepts
// exactly the 28-byte "LC" version-2 datagrams, and the fields it returns
// re-encode to the same bytes (but the reserved byte 3).
func FuzzParseSync(f *testing.F) {
	f.Add([]byte("LC\x02\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x30\x39\x00\x0f\x42\x40\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, bad := parseSync(b)
		valid := len(b) == 28 && b[0] == 0x4C && b[1] == 0x43 && b[2] == 2
		if valid != (bad == "") {
			t.Fatalf("parseSync(% x) refused %q; valid per spec: %v", b, bad, valid)
		}
		if !valid {
			return
		}
		enc := make([]byte, 28)
		copy(enc, "LC\x02")
		enc[3] = b[3]
		binary.BigEndian.PutUint32(enc[4:], x.Source)
		binary.BigEndian.PutUint64(enc[8:], x.Event)
		binary.BigEndian.PutUint32(enc[16:], x.Rate)
		binary.BigEndian.PutUint64(enc[20:], uint64(x.SenderTime))
		if !bytes.Equal(enc, b) {
			t.Fatalf("parseSync(% x) = %+v, which encodes to % x", b, x, enc)
		}
	})
}
