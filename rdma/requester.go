package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/dragonet-go/nsc/packet"
)

// Requester is the sending side of an RC queue pair over a UDP socket:
// it cuts a buffer into MTU-sized RDMA WRITEs (First, Middle, Last, or
// Only; the last with the immediate if asked), keeps a window of them in
// flight, asks for an ACK every AckEvery packets, and goes back to the
// PSN a NAK names or, after Timeout without progress, to the oldest
// packet not acknowledged (go-back-N). With IRN, every WRITE packet
// carries its own RETH and a NAK has just the packet it names sent again
// (selective repeat), once until a timeout.
type Requester struct {
	Conn     net.PacketConn
	To       net.Addr
	Src, Dst Endpoint // conn's end and To's, for the ICRC's headers
	QPN      uint32   // the responder's QP
	PSN      uint32   // the next packet's
	MTU      int      // payload bytes per packet
	Window   int      // packets in flight
	AckEvery int
	Timeout  time.Duration
	IRN      bool
	// WQESN is IRN's recv_WQE_SN of the next SEND or WRITE with
	// Immediate: the receive WQE it consumes at the responder.
	WQESN uint32
	// Loss makes the link lossy: every Loss-th packet is not sent (0:
	// none), for tests and nsc naa --loss.
	Loss int
	// Resent counts the packets sent again; BadICRC the ACKs dropped for
	// their ICRC.
	Resent, BadICRC int

	frame []byte
	ack   []byte
	sent  int
}

// ErrNoACK is a transfer the responder stopped acknowledging: maxTimeouts
// timeouts in a row without progress.
var ErrNoACK = errors.New("rdma: no ACK")

const maxTimeouts = 100

// ErrNAK is a NAK other than a PSN sequence error: the responder refused
// the request (invalid request, remote access error, …).
var ErrNAK = errors.New("rdma: request NAKed")

// Write moves data to the responder's region rkey at virtual address va;
// with imm, its last packet carries the immediate. It returns once the
// responder acknowledged every packet.
func (q *Requester) Write(data []byte, va uint64, rkey uint32, imm uint32, withImm bool) error {
	return q.transfer(&message{data: data, va: va, rkey: rkey, imm: imm, withImm: withImm})
}

// message is a transfer: a WRITE of data to va in region rkey (its last
// packet with immediate imm if withImm), or a SEND of data; sn is its
// recv_WQE_SN with IRN.
type message struct {
	data          []byte
	va            uint64
	rkey, imm, sn uint32
	withImm, send bool
	first         uint32 // the first packet's PSN
	n             int    // packets
}

// Send sends msg, at most MTU bytes, as a SEND Only (an MRSP message) and
// returns once the responder acknowledged it.
func (q *Requester) Send(msg []byte) error {
	if len(msg) > q.MTU {
		return fmt.Errorf("rdma: a SEND of %d bytes, more than the MTU %d", len(msg), q.MTU)
	}
	return q.transfer(&message{data: msg, send: true})
}

func (q *Requester) transfer(m *message) error {
	m.n, m.first, m.sn = max((len(m.data)+q.MTU-1)/q.MTU, 1), q.PSN, q.WQESN
	n, first := m.n, m.first
	index := func(psn uint32) int { return int((psn - first) & psnMask) }
	reply := make([]byte, 2048)
	base, next, resent, timeouts := 0, 0, -1, 0
	for base < n {
		for ; next < n && next < base+q.Window; next++ {
			if err := q.send(m, next); err != nil {
				return err
			}
		}
		if err := q.Conn.SetReadDeadline(time.Now().Add(q.Timeout)); err != nil {
			return err
		}
		k, _, err := q.Conn.ReadFrom(reply)
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			if timeouts++; timeouts == maxTimeouts {
				return fmt.Errorf("%w: %d timeouts in a row at PSN %#x", ErrNoACK, timeouts, (first+uint32(base))&psnMask)
			}
			q.Resent += next - base
			next, resent = base, -1
			continue
		case err != nil:
			return err
		case k < HeaderLen+AETHLen+4 || reply[0] != Acknowledge:
			continue
		case !q.icrcOK(reply[:k]):
			q.BadICRC++
			continue
		}
		psn := PSN(reply)
		switch syn := reply[HeaderLen]; {
		case syn&0x60 == 0 || syn&0x60 == 0x20: // ACK (or RNR NAK: NAAICE's failed SEND)
			if i := index(psn); i < n && i >= base {
				base, timeouts = i+1, 0
			}
		case syn == NAKSequence && q.IRN:
			if i := index(psn); i < n && i >= base {
				base = i
				if i != resent && i < next {
					if err := q.send(m, i); err != nil {
						return err
					}
					q.Resent++
					resent = i
				}
			}
		case syn == NAKSequence:
			if i := index(psn); i < n && i >= base {
				q.Resent += next - i
				base, next = i, i
			}
		default:
			return fmt.Errorf("%w: syndrome %#x at PSN %#x", ErrNAK, syn, psn)
		}
	}
	q.PSN = (first + uint32(n)) & psnMask
	if m.send || m.withImm {
		q.WQESN = (q.WQESN + 1) & psnMask
	}
	return nil
}

// icrcOK checks an ACK's ICRC over the headers the responder's NAAAck
// framed it in: from Dst's address to Src's, UDP from Src's port (the
// request's) to 4791.
func (q *Requester) icrcOK(datagram []byte) bool {
	to := Endpoint{IP: q.Src.IP}
	q.ack = Wrap(q.ack[:0], Endpoint{IP: q.Dst.IP, Port: q.Src.Port}, to, datagram)
	f := q.ack
	return binary.LittleEndian.Uint32(f[len(f)-packet.ICRCLen:]) == icrc(f, to)
}

// send sends packet i of m.
func (q *Requester) send(m *message, i int) error {
	n := m.n
	lo, hi := i*q.MTU, min((i+1)*q.MTU, len(m.data))
	p := Packet{PKey: DefaultPKey, DQPN: q.QPN, PSN: (m.first + uint32(i)) & psnMask, Payload: m.data[lo:hi],
		VA: m.va, RKey: m.rkey, DMALen: uint32(len(m.data)), Imm: m.imm,
		AckReq: i == n-1 || (i+1)%q.AckEvery == 0, IRN: q.IRN, WQESN: m.sn}
	if q.IRN {
		p.VA += uint64(lo)
	}
	p.Opcode = WriteOpcode(i, n, m.withImm)
	if m.send {
		p.Opcode = SendOnly
	}
	if q.sent++; q.Loss > 0 && q.sent%q.Loss == 0 {
		return nil
	}
	q.frame = AppendFrame(q.frame[:0], q.Src, q.Dst, &p)
	_, err := q.Conn.WriteTo(Unwrap(q.frame), q.To)
	return err
}
