package rdma

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/rdma/irnfast"
	"github.com/dragonet-go/nsc/rdma/irnxdphost"
	"github.com/dragonet-go/nsc/rdma/naaackfast"
	"github.com/dragonet-go/nsc/rdma/naafast"
	"github.com/dragonet-go/nsc/rdma/naaxdphost"
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

// generated is a generated responder and the schema of its tables.
type generated struct {
	schema *packet.Schema
	new    func([]*table.Table) (fastpath.Pipeline, error)
}

var (
	goBackN = generated{naafast.Schema, func(ts []*table.Table) (fastpath.Pipeline, error) { return naafast.New(ts) }}
	irn     = generated{irnfast.Schema, func(ts []*table.Table) (fastpath.Pipeline, error) { return irnfast.New(ts) }}
	// xdpHosts are the host parts of the responders split between
	// RDMAXDP's program and the host (models/rdma/xdp.nsc), by model,
	// with the graph the program runs.
	xdpHosts = map[string]struct {
		graph string
		gen   generated
	}{
		"naa": {"NAAResponder@RDMAXDP", generated{naaxdphost.Schema, func(ts []*table.Table) (fastpath.Pipeline, error) { return naaxdphost.New(ts) }}},
		"irn": {"IRNResponder@RDMAXDP", generated{irnxdphost.Schema, func(ts []*table.Table) (fastpath.Pipeline, error) { return irnxdphost.New(ts) }}},
	}
)

// NewResponder makes a go-back-N responder for the queue pairs and regions
// (at most 256 and 32, the model's table sizes).
func NewResponder(qps []QP, regions []*Region) (*Responder, error) {
	return newResponderFor(goBackN, qps, regions)
}

// NewIRNResponder makes an IRN responder (selective repeat, a RETH in
// every WRITE packet, Packet.IRN) for the queue pairs and regions.
func NewIRNResponder(qps []QP, regions []*Region) (*Responder, error) {
	return newResponderFor(irn, qps, regions)
}

func newResponderFor(g generated, qps []QP, regions []*Region) (*Responder, error) {
	var script strings.Builder
	for _, q := range qps {
		fmt.Fprintf(&script, "table_add connections connected %#x => %#x %#x\n", q.QPN, q.IPSN, q.Peer)
	}
	for _, r := range regions {
		fmt.Fprintf(&script, "table_add regions region %#x => %#x %#x\n", r.RKey, r.Base, len(r.Mem))
	}
	ts, err := table.Load(g.schema, "responder", strings.NewReader(script.String()))
	if err != nil {
		return nil, err
	}
	return newResponder(g, ts, regions)
}

// XDPHost makes the host part of responder model ("naa", go-back-N, or
// "irn") split between RDMAXDP's XDP program and the host: it runs the
// whole responder on every frame the program passes, which reaches it
// unchanged. graph is what the program says it runs (xdprun.Meta.Graph).
// The table script (name for errors; nil for none) sets up the queue
// pairs and the regions; each region gets zeroed memory of its length.
func XDPHost(model, graph, name string, script io.Reader) (*Responder, error) {
	h, ok := xdpHosts[model]
	if !ok {
		return nil, fmt.Errorf("no responder %q (have %q)", model, slices.Sorted(maps.Keys(xdpHosts)))
	}
	if graph != h.graph {
		return nil, fmt.Errorf("the host part of responder %s runs with a program of graph %s, not %s", model, h.graph, graph)
	}
	ts, err := table.Load(h.gen.schema, name, script)
	if err != nil {
		return nil, err
	}
	i, _ := h.gen.schema.Table("regions")
	var regions []*Region
	for _, e := range ts[i].Entries() {
		g := &Region{RKey: uint32(e.Keys[0].Value.Lo), Base: e.Params[0].Lo}
		if n := e.Params[1]; n.Hi != 0 || n.Lo > MaxRegionSize {
			return nil, fmt.Errorf("%s:%d: region %#x of %v bytes: at most %d", name, e.Line, g.RKey, n, MaxRegionSize)
		}
		g.Mem = make([]byte, e.Params[1].Lo)
		regions = append(regions, g)
	}
	return newResponder(h.gen, ts, regions)
}

func newResponder(g generated, ts []*table.Table, regions []*Region) (*Responder, error) {
	r := &Responder{schema: g.schema, regions: map[uint32]*Region{}, memory: -1}
	for _, g := range regions {
		r.regions[g.RKey] = g
	}
	var err error
	if r.resp, err = g.new(ts); err != nil {
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

// Regions are the responder's regions, by R_Key.
func (r *Responder) Regions() []*Region {
	return slices.SortedFunc(maps.Values(r.regions), func(a, b *Region) int { return cmp.Compare(a.RKey, b.RKey) })
}

// Pipeline is the generated responder the Responder runs, for its
// counters.
func (r *Responder) Pipeline() fastpath.Pipeline { return r.resp }

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
