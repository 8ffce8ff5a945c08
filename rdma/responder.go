package rdma

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/rdma/irnfast"
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

// Responder runs a generated NAA responder (go-back-N,
// models/rdma/naa.nsc, or IRN, models/rdma/irn.nsc) and its ACK maker on
// frames, and does what the models leave to their runtime: writing placed
// payloads into the regions, and saying what completed, once every packet
// before it has arrived. A Responder is for one goroutine.
type Responder struct {
	schema  *packet.Schema
	resp    fastpath.Pipeline
	ack     *naaackfast.Pipeline
	regions map[uint32]*Region
	memory  int32 // the responder's sink index of placements
	pending []imm // immediates of messages not yet complete
	done    []Completion
	buf     []byte
	abuf    []byte
}

// imm is a message's immediate, waiting for the packets before it.
type imm struct{ qpn, psn, imm uint32 }

// NewResponder makes a go-back-N responder for the queue pairs and regions
// (at most 256 and 32, the model's table sizes).
func NewResponder(qps []QP, regions []*Region) (*Responder, error) {
	return newResponder(naafast.Schema, func(ts []*table.Table) (fastpath.Pipeline, error) { return naafast.New(ts) }, qps, regions)
}

// NewIRNResponder makes an IRN responder (selective repeat, a RETH in
// every WRITE packet, Packet.IRN) for the queue pairs and regions.
func NewIRNResponder(qps []QP, regions []*Region) (*Responder, error) {
	return newResponder(irnfast.Schema, func(ts []*table.Table) (fastpath.Pipeline, error) { return irnfast.New(ts) }, qps, regions)
}

func newResponder(s *packet.Schema, mk func([]*table.Table) (fastpath.Pipeline, error), qps []QP, regions []*Region) (*Responder, error) {
	var script strings.Builder
	for _, q := range qps {
		fmt.Fprintf(&script, "table_add connections connected %#x => %#x %#x\n", q.QPN, q.IPSN, q.Peer)
	}
	r := &Responder{schema: s, regions: map[uint32]*Region{}, memory: -1}
	for _, g := range regions {
		fmt.Fprintf(&script, "table_add regions region %#x => %#x %#x\n", g.RKey, g.Base, len(g.Mem))
		r.regions[g.RKey] = g
	}
	ts, err := table.Load(s, "responder", strings.NewReader(script.String()))
	if err != nil {
		return nil, err
	}
	if r.resp, err = mk(ts); err != nil {
		return nil, err
	}
	if r.ack, err = naaackfast.New(nil); err != nil {
		return nil, err
	}
	for i := range int32(2) { // RxMemory and RxReply
		if r.resp.SinkName(int(i)) == "RxMemory" {
			r.memory = i
		}
	}
	return r, nil
}

// Register adds region g to the responder's (MRSP's part): on its
// goroutine, between frames.
func (r *Responder) Register(g *Region) error {
	line := fmt.Sprintf("table_add regions region %#x => %#x %#x\n", g.RKey, g.Base, len(g.Mem))
	es, err := packet.ParseEntries("register", strings.NewReader(line), r.schema.TableSpec)
	if err != nil {
		return err
	}
	i, _ := r.schema.Table("regions")
	if err := r.resp.Tables()[i].Insert(es[0].Entry); err != nil {
		return err
	}
	r.regions[g.RKey] = g
	return nil
}

// Placement header offsets (models/rdma/rc.nsc, header placement).
const (
	plOffset, plLength, plImm, plQPN, plFlags, plPoff = 4, 12, 16, 20, 23, 24
	plSyndrome, plPSN, plRPSN                         = 26, 27, 82
	flagData, flagAck, flagImm, flagSend, flagTaken   = 0x80, 0x40, 0x20, 0x10, 0x04
)

// Handle runs one frame: the reply frame to send (nil for none; valid
// until the next call) and what completed (valid until the next call).
func (r *Responder) Handle(frame []byte) (reply []byte, done []Completion) {
	r.done = r.done[:0]
	r.buf = grow(r.buf, len(frame))
	copy(r.buf[packet.Headroom:], frame)
	res := r.resp.Process(r.buf, packet.Headroom, len(frame))
	if res.Sink < 0 {
		return nil, nil
	}
	out := res.Data
	flags := out[plFlags]
	qpn := u24(out[plQPN:])
	if flags&flagData != 0 {
		n := int(binary.BigEndian.Uint32(out[plLength:]))
		from := PlacementLen + int(binary.BigEndian.Uint16(out[plPoff:]))
		payload := out[from : from+n]
		if flags&flagSend != 0 {
			r.done = append(r.done, Completion{QPN: qpn, Send: true, Msg: append([]byte(nil), payload...)})
		} else if g := r.regions[binary.BigEndian.Uint32(out)]; g != nil {
			off := binary.BigEndian.Uint64(out[plOffset:])
			copy(g.Mem[off:off+uint64(n)], payload) // within the region: the model checked its bounds
		}
	}
	if flags&(flagImm|flagTaken) == flagImm|flagTaken {
		r.pending = append(r.pending, imm{qpn, u24(out[plRPSN:]), binary.BigEndian.Uint32(out[plImm:])})
	}
	if flags&flagAck != 0 {
		r.complete(qpn, out[plSyndrome], u24(out[plPSN:]))
	}
	if res.Sink == r.memory && flags&flagAck == 0 {
		return nil, r.done
	}
	r.abuf = grow(r.abuf, len(out))
	copy(r.abuf[packet.Headroom:], out)
	if a := r.ack.Process(r.abuf, packet.Headroom, len(out)); a.Sink >= 0 {
		reply = a.Data
	}
	return reply, r.done
}

// u24 reads a 24-bit big-endian field (a QP number, a PSN).
func u24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

// complete reports the immediates of QP qpn that an ACK of PSN psn (or a
// NAK that expects it) says have every packet before them: in PSN order,
// as their messages completed.
func (r *Responder) complete(qpn uint32, syndrome uint8, psn uint32) {
	switch syndrome {
	case 0:
		psn = (psn + 1) & psnMask
	case NAKSequence:
	default:
		return
	}
	behind := func(p imm) uint32 { return (psn - p.psn - 1) & psnMask } // < 2^23: p.psn is before psn
	slices.SortFunc(r.pending, func(a, b imm) int { return cmp.Compare(behind(b), behind(a)) })
	kept := r.pending[:0]
	for _, p := range r.pending {
		if p.qpn == qpn && behind(p) < 1<<23 {
			r.done = append(r.done, Completion{QPN: qpn, Imm: p.imm})
		} else {
			kept = append(kept, p)
		}
	}
	r.pending = kept
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
		reply, cs := r.Handle(frame)
		if reply != nil {
			if _, err := conn.WriteTo(Unwrap(reply), from); err != nil {
				return err
			}
		}
		for _, c := range cs {
			if done != nil {
				done(c)
			}
		}
	}
}
