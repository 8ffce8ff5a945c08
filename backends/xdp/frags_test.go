package xdp_test

import (
	"math/rand/v2"
	"testing"

	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// TestFragsAgainstInterpreter: frames longer than a page, which the
// kernel hands the program as a linear head and fragments, against the
// interpreter. OpsTx pushes three headers in front of random payloads and
// computes their checksums over the whole frame: payloads of every length
// around the head's end (3,520 bytes in BPF_PROG_TEST_RUN), of 1,518 and
// 9,018 bytes, and of random lengths up to MaxFrame, so the sums run into
// the fragments with every remainder. The UDP/IPv4 stack verifies the
// UDP checksum of its corpus grown to 1,518 and 9,018 bytes and to mixed
// lengths (difftest.Grow), and of frames derived from them. Each runs
// twice: with the kernel's head and with a head of 128 bytes.
func TestFragsAgainstInterpreter(t *testing.T) {
	// The kernel's head (3,520 bytes), and one of 128 bytes, past every
	// header here, so that every sum starts in the head and runs into
	// the fragments (xdprun.Runner.Head).
	heads := []int{0, 128}
	rnd := rand.New(rand.NewPCG(25, 25))
	random := func(n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rnd.UintN(256))
		}
		return p
	}
	t.Run("OpsTx", func(t *testing.T) {
		m := loadOps(t)
		g, _ := m.Graph("OpsTx")
		r, mach := pair(t, m, g, "")
		var payloads [][]byte
		for n := 3400; n < 3700; n++ {
			payloads = append(payloads, random(n))
		}
		for _, n := range []int{1518, 4096, 9018, xdp.MaxFrame} {
			payloads = append(payloads, random(n))
		}
		for range 200 {
			payloads = append(payloads, random(14+rnd.IntN(xdp.MaxFrame-14+1)))
		}
		for _, r.Head = range heads {
			where := xdptest.Compare(t, r, mach, payloads)
			if where["sink TxQueue"] != len(payloads) {
				t.Errorf("head %d: not every payload was sent: %v", r.Head, where)
			}
		}
	})
	t.Run("UDPIPv4", func(t *testing.T) {
		m := testutil.Model(t, "inet/udp.nsc")
		g, _ := m.Graph("UDPIPv4")
		r, mach := pair(t, m, g, "")
		var frames [][]byte
		for _, f := range testutil.UDPCorpus(t) {
			frames = append(frames, difftest.Grow(f, 1518), difftest.Grow(f, 9018), difftest.Grow(f, 60+rnd.IntN(9018-60+1)))
		}
		frames = append(frames, difftest.Mutate(frames, 3000, 25)...)
		for _, r.Head = range heads {
			where := xdptest.Compare(t, r, mach, frames)
			if len(where) < 3 {
				t.Errorf("head %d: the frames exercise too little: %v", r.Head, where)
			}
			t.Logf("head %d: %d frames: %v", r.Head, len(frames), where)
		}
	})
}
