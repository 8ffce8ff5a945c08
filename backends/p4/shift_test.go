package p4_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// shiftModel shifts fields by 128-bit amounts into narrower fields. The
// interpreter shifts by an amount's low 64 bits; P4 took it whole (a
// shift by 2^64+1 left nothing). Computed narrow (the private rule P4 had)
// or whole (flow.LowPreserving, which P4 now shares with Go and C), the
// result is the interpreter's once the amount is cut as it cuts it.
const shiftModel = `
include "lib/ethernet.nsc"
include "lib/ipv6.nsc"
include "ejfat/p4.nsc"

lpg S {
    node RxQueue { op input  port out -> Eth }
    node Eth { op extract ethernet  port true -> Type  port false -> Bad }
    node Type { op test ethernet.type == 0x86dd  port true -> IPv6  port false -> Bad }
    node IPv6 { op extract ipv6  port true -> Shift  port false -> Bad }
    node Shift {
        op set { ipv6.hop_limit = ipv6.payload_len << ipv6.dst  ipv6.flow = ipv6.tclass << (ipv6.src + 1) }
        port out -> TxQueue
    }
    node Bad { op drop "parse" }
    node TxQueue { op emit }
}`

// TestWideShiftAgainstInterpreter: shifts by amounts past 64 bits (and
// past every width) and small ones, in P4 and in the interpreter.
func TestWideShiftAgainstInterpreter(t *testing.T) {
	m := testutil.ModelSource(t, shiftModel)
	rnd := rand.New(rand.NewPCG(5, 6))
	var frames [][]byte
	for range 400 {
		f := make([]byte, 14+40)
		f[12], f[13] = 0x86, 0xdd
		ip := f[14:]
		for i := range ip {
			ip[i] = byte(rnd.UintN(256))
		}
		ip[0] = 0x60 | ip[0]&0x0f
		for _, addr := range [][]byte{ip[8:24], ip[24:40]} {
			switch rnd.IntN(4) {
			case 0: // a small amount
				clear(addr)
				addr[15] = byte(rnd.IntN(24))
			case 1: // 2^64 + a small amount: wrong if cut to 64 bits
				clear(addr)
				addr[7] = 1
				addr[15] = byte(rnd.IntN(24))
			case 2: // all ones (src + 1 wraps to 0)
				binary.BigEndian.PutUint64(addr, ^uint64(0))
				binary.BigEndian.PutUint64(addr[8:], ^uint64(0))
			}
		}
		frames = append(frames, f)
	}
	for _, arch := range []string{p4.XSA, p4.V1Model} {
		_, _, run, mach := modelMachines(t, m, "S", arch, "")
		if _, ends := compareP4(t, arch, run, mach, frames, true); ends["sent"] != len(frames) {
			t.Errorf("%s: not every frame was sent: %v", arch, ends)
		}
	}
}
