package rdma_test

import (
	"bytes"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/rdma"
)

// Function codes of the stand-in kernel: 1 reverses the input.
const (
	fnReverse  = 1
	statusOK   = 0
	statusFail = 0x10 // NAAICE: 0x10–0x7f are application errors
)

// loopback is a host and an NAA on 127.0.0.1, each with a responder (the
// generated model behind rdma.Responder) and a requester on UDP sockets:
// the host writes its input into the NAA's region with the function code
// as the last WRITE's immediate; the NAA runs the function and writes the
// result into the host's region, immediate 0 for success.
type loopback struct {
	host, naa *rdma.Requester
	in, out   *rdma.Region
	done      chan uint32 // the immediates of results the host received
}

func udp(t testing.TB) (net.PacketConn, rdma.Endpoint) {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.(*net.UDPConn).SetReadBuffer(4 << 20); err != nil {
		t.Fatal(err)
	}
	a := c.LocalAddr().(*net.UDPAddr)
	return c, rdma.Endpoint{IP: a.IP.To4(), Port: uint16(a.Port)}
}

func newLoopback(t testing.TB, size int) *loopback {
	hq, hqe := udp(t) // host requester
	hr, hre := udp(t) // host responder (results)
	nq, nqe := udp(t) // NAA requester (results)
	nr, nre := udp(t) // NAA responder (input)
	l := &loopback{in: &rdma.Region{RKey: 0xabcd, Base: 0x10000, Mem: make([]byte, size)},
		out: &rdma.Region{RKey: 0xbeef, Base: 0x20000, Mem: make([]byte, size)}, done: make(chan uint32, 1)}
	requester := func(c net.PacketConn, src, dst rdma.Endpoint, to net.PacketConn, qpn, psn uint32) *rdma.Requester {
		return &rdma.Requester{Conn: c, To: to.LocalAddr(), Src: src, Dst: dst, QPN: qpn, PSN: psn,
			MTU: 4096, Window: 64, AckEvery: 16, Timeout: 20 * time.Millisecond}
	}
	l.host = requester(hq, hqe, nre, nr, 0x11, 0x1000)
	l.naa = requester(nq, nqe, hre, hr, 0x22, 0xfffc00) // an 8 MiB result wraps at 2^24
	naa, err := rdma.NewResponder([]rdma.QP{{QPN: 0x11, IPSN: 0x1000, Peer: 0x21}}, []*rdma.Region{l.in})
	if err != nil {
		t.Fatal(err)
	}
	host, err := rdma.NewResponder([]rdma.QP{{QPN: 0x22, IPSN: 0xfffc00, Peer: 0x12}}, []*rdma.Region{l.out})
	if err != nil {
		t.Fatal(err)
	}
	work, stop := make(chan uint32, 1), make(chan struct{})
	t.Cleanup(func() { close(stop) }) // before the sockets close, which ends Serve
	go naa.Serve(nr, nre, func(c rdma.Completion) {
		select {
		case work <- c.Imm:
		case <-stop:
		}
	})
	go host.Serve(hr, hre, func(c rdma.Completion) {
		select {
		case l.done <- c.Imm:
		case <-stop:
		}
	})
	go func() { // the NAA's kernel: one function call at a time
		for {
			var fn uint32
			select {
			case fn = <-work:
			case <-stop:
				return
			}
			result, status := []byte(nil), uint32(statusFail)
			if fn == fnReverse {
				result, status = slices.Clone(l.in.Mem), statusOK
				slices.Reverse(result)
			}
			err := l.naa.Write(result, l.out.Base, l.out.RKey, status, true)
			select {
			case <-stop: // the test ended while the last ACK was on its way
			default:
				if err != nil {
					t.Error(err)
				}
			}
		}
	}()
	return l
}

// call writes input and the function code and waits for the result's
// immediate.
func (l *loopback) call(t testing.TB, input []byte, fn uint32) uint32 {
	t.Helper()
	if err := l.host.Write(input, l.in.Base, l.in.RKey, fn, true); err != nil {
		t.Fatal(err)
	}
	select {
	case imm := <-l.done:
		return imm
	case <-time.After(20 * time.Second):
		t.Fatal("no result in 20 s")
	}
	return 0
}

// TestLoopback moves 8 MiB to the NAA and back over UDP sockets, each side
// running the generated responder: the result is the input reversed,
// with immediate 0; an unknown function code comes back as 0x10.
func TestLoopback(t *testing.T) {
	const size = 8 << 20
	l := newLoopback(t, size)
	input := fill(size, 5)
	if imm := l.call(t, input, fnReverse); imm != statusOK {
		t.Fatalf("status %#x", imm)
	}
	want := slices.Clone(input)
	slices.Reverse(want)
	if !bytes.Equal(l.out.Mem, want) {
		t.Error("the result region is not the input reversed")
	}
	if imm := l.call(t, input[:4096], 0x99); imm != statusFail {
		t.Errorf("unknown function: status %#x, want %#x", imm, statusFail)
	}
	t.Logf("packets sent again: host %d, NAA %d", l.host.Resent, l.naa.Resent)
}

// BenchmarkLoopback: 64 MiB through the generated responder on loopback
// UDP sockets (4 KiB WRITEs, a window of 64, an ACK asked for every 16),
// one way (write) and as a function call (the input there, the result
// back); next to a plain UDP copy of the same bytes with the same window
// and a credit datagram every 16 (udp-copy).
func BenchmarkLoopback(b *testing.B) {
	const size = 64 << 20
	input := fill(size, 9)
	b.Run("write", func(b *testing.B) {
		l := newLoopback(b, size)
		b.SetBytes(size)
		for range b.N {
			if err := l.host.Write(input, l.in.Base, l.in.RKey, 0, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("call", func(b *testing.B) {
		l := newLoopback(b, size)
		b.SetBytes(2 * size)
		for range b.N {
			if imm := l.call(b, input, fnReverse); imm != statusOK {
				b.Fatalf("status %#x", imm)
			}
		}
	})
	b.Run("udp-copy", func(b *testing.B) {
		tx, _ := udp(b)
		rx, _ := udp(b)
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
	})
}
