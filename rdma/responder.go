package rdma

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/rdma/naaackfast"
	"github.com/dragonet-go/nsc/rdma/naafast"
)

// Region is memory registered for RDMA WRITEs: its R_Key, the virtual
// address requesters name its first byte by, and the bytes.
type Region struct {
	RKey uint32
	Base uint64
	Mem  []byte
}

// QP is a queue pair the connection manager set up: the responder's QP
// number, the PSN it expects first, the requester's QP.
type QP struct{ QPN, IPSN, Peer uint32 }

// Completion is what the responder tells its application: the last packet
// of a message carried an immediate (a WRITE with Immediate: NAAICE's
// function code, or a result's status), or a SEND arrived (an MRSP
// message).
type Completion struct {
	QPN  uint32
	Imm  uint32
	Send bool
	Msg  []byte // the SEND's payload
}

// Responder runs the generated NAA responder (models/rdma/naa.nsc) and its
// ACK maker on frames, and does what the model leaves to its runtime:
// writing placed payloads into the regions, and saying what completed.
// A Responder is for one goroutine.
type Responder struct {
	resp    *naafast.Pipeline
	ack     *naaackfast.Pipeline
	regions map[uint32]*Region
	memory  int32 // the responder's sink indices
	buf     []byte
	abuf    []byte
}

// NewResponder makes a responder for the queue pairs and regions (at most
// 256 and 32, the model's table sizes).
func NewResponder(qps []QP, regions []*Region) (*Responder, error) {
	var script strings.Builder
	for _, q := range qps {
		fmt.Fprintf(&script, "table_add connections connected %#x => %#x %#x\n", q.QPN, q.IPSN, q.Peer)
	}
	r := &Responder{regions: map[uint32]*Region{}, memory: -1}
	for _, g := range regions {
		fmt.Fprintf(&script, "table_add regions region %#x => %#x %#x\n", g.RKey, g.Base, len(g.Mem))
		r.regions[g.RKey] = g
	}
	ts, err := packet.LoadTables(naafast.Schema, "responder", strings.NewReader(script.String()))
	if err != nil {
		return nil, err
	}
	if r.resp, err = naafast.New(ts); err != nil {
		return nil, err
	}
	if r.ack, err = naaackfast.New(nil); err != nil {
		return nil, err
	}
	for i, n := range naafast.SinkNames {
		if n == "RxMemory" {
			r.memory = int32(i)
		}
	}
	return r, nil
}

// Placement header offsets (models/rdma/naa.nsc, header placement).
const (
	plOffset, plLength, plImm, plQPN, plFlags, plPoff = 4, 12, 16, 20, 23, 24
	flagData, flagAck, flagImm, flagSend              = 0x80, 0x40, 0x20, 0x10
)

// Handle runs one frame: the reply frame to send (nil for none; valid
// until the next call) and what completed, if anything.
func (r *Responder) Handle(frame []byte) (reply []byte, c *Completion) {
	r.buf = grow(r.buf, len(frame))
	copy(r.buf[packet.Headroom:], frame)
	res := r.resp.Process(r.buf, packet.Headroom, len(frame))
	if res.Sink < 0 {
		return nil, nil
	}
	out := res.Data
	flags := out[plFlags]
	qpn := binary.BigEndian.Uint32(out[plQPN-1:]) & 0xffffff
	if flags&flagData != 0 {
		n := int(binary.BigEndian.Uint32(out[plLength:]))
		from := PlacementLen + int(binary.BigEndian.Uint16(out[plPoff:]))
		payload := out[from : from+n]
		if flags&flagSend != 0 {
			c = &Completion{QPN: qpn, Send: true, Msg: append([]byte(nil), payload...)}
		} else if g := r.regions[binary.BigEndian.Uint32(out)]; g != nil {
			off := binary.BigEndian.Uint64(out[plOffset:])
			copy(g.Mem[off:off+uint64(n)], payload) // within the region: the model checked its bounds
		}
	}
	if flags&flagImm != 0 {
		c = &Completion{QPN: qpn, Imm: binary.BigEndian.Uint32(out[plImm:])}
	}
	if res.Sink == r.memory && flags&flagAck == 0 {
		return nil, c
	}
	r.abuf = grow(r.abuf, len(out))
	copy(r.abuf[packet.Headroom:], out)
	if a := r.ack.Process(r.abuf, packet.Headroom, len(out)); a.Sink >= 0 {
		reply = a.Data
	}
	return reply, c
}

// grow returns b with room for a frame of n bytes and headroom on both
// sides.
func grow(b []byte, n int) []byte {
	if need := 2*packet.Headroom + n; cap(b) < need {
		return make([]byte, need)
	}
	return b[:cap(b)]
}

// Serve answers RoCEv2 datagrams on conn until it is closed: each one as
// the frame Wrap makes of it (self is conn's end), replies sent back to
// where the request came from, completions handed to done.
func (r *Responder) Serve(conn net.PacketConn, self Endpoint, done func(Completion)) error {
	buf := make([]byte, 65536)
	var frame []byte
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			return err
		}
		ua, ok := from.(*net.UDPAddr)
		if !ok {
			continue
		}
		frame = Wrap(frame[:0], Endpoint{IP: ua.IP, Port: uint16(ua.Port)}, self, buf[:n])
		reply, c := r.Handle(frame)
		if reply != nil {
			if _, err := conn.WriteTo(Unwrap(reply), from); err != nil {
				return err
			}
		}
		if c != nil && done != nil {
			done(*c)
		}
	}
}
