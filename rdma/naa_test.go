package rdma_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/rdma"
)

// Function codes of the stand-in kernels: 1 reverses the input region, 2
// sums its bytes (8 bytes), 3 fails with the first application error, 4
// takes 5 s, 5 answers a byte more than it got.
const (
	fnReverse, fnSum, fnFail, fnSlow, fnBig = 1, 2, 3, 4, 5
)

func kernels() map[uint32]rdma.Kernel {
	return map[uint32]rdma.Kernel{
		fnReverse: func(in []byte) ([]byte, uint32) {
			out := slices.Clone(in)
			slices.Reverse(out)
			return out, rdma.StatusOK
		},
		fnSum: func(in []byte) ([]byte, uint32) {
			var s uint64
			for _, b := range in {
				s += uint64(b)
			}
			return binary.BigEndian.AppendUint64(nil, s), rdma.StatusOK
		},
		fnFail: func([]byte) ([]byte, uint32) { return nil, rdma.StatusAppError },
		fnSlow: func([]byte) ([]byte, uint32) { time.Sleep(5 * time.Second); return nil, rdma.StatusOK },
		fnBig:  func(in []byte) ([]byte, uint32) { return make([]byte, len(in)+1), rdma.StatusOK },
	}
}

// loopback starts a host and an NAA of 2*size bytes of memory whose
// regions are set up: the NAA's input region at FPGA address 0x1000.
func loopback(t testing.TB, size int, irn bool, loss int, timeout time.Duration) (*rdma.Host, *rdma.NAA, rdma.MR) {
	t.Helper()
	h, n, stop, err := rdma.Loopback(rdma.Config{Memory: 2 * size, Kernels: kernels(), Timeout: timeout, IRN: irn, Loss: loss}, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	mrs, err := h.Setup([]uint64{0x1000}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(mrs) != 1 || mrs[0].Addr != 0x1000 || mrs[0].Size != uint32(size) {
		t.Fatalf("MRSP advertised %+v", mrs)
	}
	return h, n, mrs[0]
}

// TestLoopback moves 8 MiB to the NAA and back over UDP sockets, each side
// running a generated responder (go-back-N and IRN, on a clean link and
// one that loses a packet in 500): the regions set up by MRSP, the result
// the input reversed with immediate 0 (its PSNs wrap at 2^24), the sum;
// and each error with NAAICE's code: no kernel (0x01), a kernel timeout
// (0x02, on the first only: its kernels get 2 s), an application error
// (0x10), a result too large for the host's region (0x11).
func TestLoopback(t *testing.T) {
	const size = 8 << 20
	for _, c := range []struct {
		name    string
		irn     bool
		loss    int
		timeout time.Duration
	}{{"go-back-N", false, 0, 2 * time.Second}, {"IRN", true, 0, 0}, {"go-back-N lossy", false, 500, 0}, {"IRN lossy", true, 500, 0}} {
		t.Run(c.name, func(t *testing.T) {
			h, n, in := loopback(t, size, c.irn, c.loss, c.timeout)
			input := fill(size, 5)
			call := func(fn uint32, data []byte) uint32 {
				t.Helper()
				s, err := h.Call(fn, data, in, 20*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			if s := call(fnReverse, input); s != rdma.StatusOK {
				t.Fatalf("status %#x", s)
			}
			want := slices.Clone(input)
			slices.Reverse(want)
			if !bytes.Equal(h.Regions[0].Mem, want) {
				t.Error("the result region is not the input reversed")
			}
			var sum uint64
			for _, b := range input {
				sum += uint64(b)
			}
			if s := call(fnSum, input[:4096]); s != rdma.StatusOK || binary.BigEndian.Uint64(h.Regions[0].Mem) != sum {
				t.Errorf("sum: status %#x, %#x, want %#x", s, h.Regions[0].Mem[:8], sum)
			}
			for fn, want := range map[uint32]uint32{0x99: rdma.StatusNoSocket, fnSlow: rdma.StatusTimeout, fnFail: rdma.StatusAppError, fnBig: rdma.StatusTooLarge} {
				if fn == fnSlow && c.timeout == 0 {
					continue
				}
				if s := call(fn, input[:4096]); s != want {
					t.Errorf("function %#x: status %#x, want %#x", fn, s, want)
				}
			}
			hr, nr := h.Resent(), n.Resent()
			t.Logf("packets sent again: host %d, NAA %d", hr, nr)
			if c.loss > 0 && hr == 0 {
				t.Error("a lossy link and nothing sent again")
			}
			if b := h.BadICRC(); b > 0 {
				t.Errorf("the host dropped %d ACKs for their ICRC", b)
			}
		})
	}
}

// TestMRSPErrors: requests the NAA refuses, each with NAAICE's code.
func TestMRSPErrors(t *testing.T) {
	h, _, stop, err := rdma.Loopback(rdma.Config{Memory: 1 << 20}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, c := range []struct {
		name string
		fpga []uint64
		code uint8
	}{
		{"too many regions", make([]uint64, rdma.MaxRegions+1), rdma.MRSPTooManyRegions},
		{"invalid address", []uint64{1 << 20}, rdma.MRSPInvalidAddress},
		{"not enough memory", []uint64{1<<20 - 100}, rdma.MRSPNoMemory},
	} {
		_, err := h.Setup(c.fpga, 5*time.Second)
		if e, ok := err.(*rdma.MRSPErr); !ok || e.Code != c.code {
			t.Errorf("%s: %v, want MRSP error %#x", c.name, err, c.code)
		}
	}
	if mrs, err := h.Setup([]uint64{0}, 5*time.Second); err != nil || len(mrs) != 1 {
		t.Errorf("a request that fits: %+v, %v", mrs, err)
	}
}

// BenchmarkLoopback: a 64 MiB function call on loopback UDP sockets, each
// side running a generated responder (go-back-N, IRN): the input as four
// 16 MiB messages (three WRITEs and a WRITE with Immediate, 4 KiB packets,
// a window of 64), the result (the input reversed) back as one; next to a
// plain UDP copy of the same bytes, one way, with the same window and a
// credit datagram every 16 (udp-copy). messages/s counts WRITE messages,
// Gbps the bytes moved (both ways for a call).
func BenchmarkLoopback(b *testing.B) {
	const size = 64 << 20
	input := fill(size, 9)
	for _, irn := range []bool{false, true} {
		b.Run(map[bool]string{false: "call-go-back-N", true: "call-IRN"}[irn], func(b *testing.B) {
			h, _, in := loopback(b, size, irn, 0, 0)
			b.SetBytes(2 * size)
			start := time.Now()
			for range b.N {
				if s, err := h.Call(fnReverse, input, in, time.Minute); err != nil || s != rdma.StatusOK {
					b.Fatalf("status %#x, %v", s, err)
				}
			}
			rate(b, start, 5, 2*size)
		})
	}
	b.Run("udp-copy", func(b *testing.B) {
		tx := udp(b)
		rx := udp(b)
		mem := make([]byte, size)
		go func() { // the receiver: copy each datagram in, a credit every 16
			buf := make([]byte, 65536)
			for i := 0; ; i++ {
				n, from, err := rx.ReadFrom(buf)
				if err != nil {
					return
				}
				off := int(buf[0])<<24 | int(buf[1])<<16 | int(buf[2])<<8 | int(buf[3])
				copy(mem[off:], buf[4:n])
				if (i+1)%16 == 0 {
					rx.WriteTo(buf[:1], from)
				}
			}
		}()
		b.SetBytes(size)
		dgram, credit := make([]byte, 4+4096), make([]byte, 16)
		start := time.Now()
		for range b.N {
			inflight := 0
			for off := 0; off < size; off += 4096 {
				if inflight == 64 {
					if _, _, err := tx.ReadFrom(credit); err != nil {
						b.Fatal(err)
					}
					inflight -= 16
				}
				dgram[0], dgram[1], dgram[2], dgram[3] = byte(off>>24), byte(off>>16), byte(off>>8), byte(off)
				copy(dgram[4:], input[off:off+4096])
				if _, err := tx.WriteTo(dgram, rx.LocalAddr()); err != nil {
					b.Fatal(err)
				}
				inflight++
			}
			for ; inflight > 0; inflight -= 16 { // the last credits
				if _, _, err := tx.ReadFrom(credit); err != nil {
					b.Fatal(err)
				}
			}
		}
		rate(b, start, 1, size)
	})
}

// rate reports messages/s and Gbps for b.N operations of msgs messages
// and n bytes each since start.
func rate(b *testing.B, start time.Time, msgs, n int) {
	d := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N*msgs)/d, "messages/s")
	b.ReportMetric(float64(b.N*n)*8/d/1e9, "Gbps")
}

// udp is a loopback socket with the read buffer the NAA's have.
func udp(t testing.TB) net.PacketConn {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.(*net.UDPConn).SetReadBuffer(4 << 20); err != nil {
		t.Fatal(err)
	}
	return c
}
