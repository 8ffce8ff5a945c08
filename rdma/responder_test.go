package rdma_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/rdma"
	"github.com/dragonet-go/nsc/sim"
)

// The responder's control-plane state in the tests: QP 0x11 (requester's
// QP 0x22) starting at PSN 0x1000, QP 0x12 starting at 0xfffffe (to wrap),
// and one region, R_Key 0xabcd, of 16 MiB at 0x10000.
const (
	qpn, peer  = 0x11, 0x22
	qpWrap     = 0x12
	ipsn       = 0x1000
	rkey       = 0xabcd
	regionBase = 0x10000
	regionLen  = 0x1000000
	tablesText = `table_add connections connected 0x11 => 0x1000 0x22
table_add connections connected 0x12 => 0xfffffe 0x22
table_add regions region 0xabcd => 0x10000 0x1000000
`
)

// out is what the responder made of one frame: the replies (ACK/NAK
// frames) and the payloads to place (placement header + request).
type out struct {
	replies, placed [][]byte
}

// responder runs the NAA responder model in the interpreter, and NAAAck
// on what it hands out, as the runtime around them does.
type responder struct {
	t         testing.TB
	mach, ack *sim.Machine
}

func newResponder(t testing.TB) *responder { return newResponderOf(t, "rdma/naa.nsc", "NAAResponder") }

// newResponderOf runs responder lpg of model files (go-back-N or IRN;
// several separated by spaces).
func newResponderOf(t testing.TB, files, lpg string) *responder {
	t.Helper()
	m := testutil.Model(t, strings.Fields(files)...)
	g, _ := m.Graph(lpg)
	ts, err := table.Load(m.Schema, "tables", strings.NewReader(tablesText))
	if err != nil {
		t.Fatal(err)
	}
	mach, err := sim.New(g, ts)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Graph("NAAAck")
	ack, err := sim.New(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &responder{t: t, mach: mach, ack: ack}
}

func (r *responder) run(frame []byte) out {
	var o out
	r.mach.Run(bytes.Clone(frame), func(sink *dataflow.Node, data []byte) {
		switch {
		case sink.Name == "RxMemory":
			o.placed = append(o.placed, bytes.Clone(data))
			if data[23]&0x40 == 0 { // no ACK wanted
				return
			}
		case sink.Name != "RxReply":
			r.t.Fatalf("frame left by sink %s", sink.Name)
		}
		r.ack.Run(bytes.Clone(data), func(_ *dataflow.Node, reply []byte) { o.replies = append(o.replies, bytes.Clone(reply)) })
	})
	return o
}

// write is a request on QP q from the host.
func write(q uint32, op uint8, psn uint32, payload []byte) *rdma.Packet {
	return &rdma.Packet{Opcode: op, PKey: rdma.DefaultPKey, DQPN: q, PSN: psn, Payload: payload}
}

func withRETH(p *rdma.Packet, va uint64, key, length uint32) *rdma.Packet {
	p.VA, p.RKey, p.DMALen = va, key, length
	return p
}

func frame(p *rdma.Packet) []byte { return rdma.AppendFrame(nil, host, naa, p) }

func fill(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// reply is an ACK or NAK as the test reads it from the bytes.
type reply struct {
	Syndrome uint8
	PSN, MSN uint32
}

// parseReply checks that f is an Acknowledge from the NAA to the host's QP
// with a right ICRC, IPv4 header checksum and lengths, and reads it.
func parseReply(t *testing.T, f []byte) reply {
	t.Helper()
	ipLen, src, dst := 20, naa.IP.To4(), host.IP.To4()
	if len(f) > 13 && f[12] == 0x86 {
		ipLen, src, dst = 40, naa6.IP, host6.IP
	}
	if len(f) != 14+ipLen+8+12+4+4 {
		t.Fatalf("reply of %d bytes: %x", len(f), f)
	}
	ip, udp, bth := f[14:14+ipLen], f[14+ipLen:22+ipLen], f[22+ipLen:]
	switch {
	case !bytes.Equal(f[:6], host.MAC) || !bytes.Equal(f[6:12], naa.MAC):
		t.Errorf("reply MACs %x", f[:12])
	case !bytes.Equal(ip[ipLen-2*len(src):ipLen-len(src)], src) || !bytes.Equal(ip[ipLen-len(dst):], dst):
		t.Errorf("reply IPs %x", ip)
	case ipLen == 20 && (binary.BigEndian.Uint16(ip[2:]) != 48 || !packet.VerifyIPv4Header(ip)):
		t.Errorf("reply IPv4 length or checksum %x", ip)
	case ipLen == 40 && binary.BigEndian.Uint16(ip[4:]) != 28:
		t.Errorf("reply IPv6 payload length %x", ip[4:6])
	case binary.BigEndian.Uint16(udp[4:]) != 28 || binary.BigEndian.Uint16(udp[:2]) != host.Port:
		t.Errorf("reply UDP %x", udp)
	case binary.BigEndian.Uint16(udp[2:]) != rdma.Port || bth[0] != rdma.Acknowledge:
		t.Errorf("reply port %x opcode %#x", udp[2:4], bth[0])
	case binary.BigEndian.Uint32(bth[4:])&0xffffff != peer:
		t.Errorf("reply to QP %#x", binary.BigEndian.Uint32(bth[4:])&0xffffff)
	case binary.LittleEndian.Uint32(f[len(f)-4:]) != packet.ICRC(f, 14, 22+ipLen, len(f), ipLen == 40):
		t.Errorf("reply ICRC")
	}
	return reply{Syndrome: bth[12], PSN: binary.BigEndian.Uint32(bth[8:]) & 0xffffff, MSN: binary.BigEndian.Uint32(bth[12:]) & 0xffffff}
}

// placement reads what a placement says to write, and where.
type placement struct {
	RKey         uint32
	Offset       uint64
	Imm          uint32
	QPN          uint32
	HasImm, Send bool
	Data         []byte
}

func parsePlacement(m []byte) placement {
	n, poff := binary.BigEndian.Uint32(m[12:]), int(binary.BigEndian.Uint16(m[24:]))
	return placement{RKey: binary.BigEndian.Uint32(m), Offset: binary.BigEndian.Uint64(m[4:]), Imm: binary.BigEndian.Uint32(m[16:]),
		QPN: binary.BigEndian.Uint32(m[20:]) >> 8, HasImm: m[23]&0x20 != 0, Send: m[23]&0x10 != 0,
		Data: m[rdma.PlacementLen+poff : rdma.PlacementLen+poff+int(n)]}
}

// step is one frame sent and what the spec says the responder does.
type step struct {
	frame   []byte
	replies []reply
	placed  *placement
	drop    string // the drop reason when nothing else happens ("" for none expected)
}

func ack(psn, msn uint32) []reply            { return []reply{{0, psn, msn}} }
func nak(syn uint8, psn, msn uint32) []reply { return []reply{{syn, psn, msn}} }

// scenarios are crafted traffic with the outcomes the InfiniBand spec (go-
// back-N RC responder) and NAAICE ask for.
func scenarios() map[string][]step {
	a, b, c := fill(1024, 1), fill(1024, 2), fill(512, 3)
	first := func(psn uint32) []byte {
		return frame(withRETH(write(qpn, rdma.WriteFirst, psn, a), regionBase+0x100, rkey, 2560))
	}
	middle := func(psn uint32) []byte { return frame(write(qpn, rdma.WriteMiddle, psn, b)) }
	last := func(psn uint32) []byte {
		p := write(qpn, rdma.WriteLastImm, psn, c)
		p.Imm = 7
		return frame(p)
	}
	at := func(q uint32, off uint64, data []byte) *placement {
		return &placement{RKey: rkey, Offset: off, QPN: q, Data: data}
	}
	pa, pb := at(qpn, 0x100, a), at(qpn, 0x100+1024, b)
	pc := &placement{RKey: rkey, Offset: 0x100 + 2048, Imm: 7, QPN: qpn, HasImm: true, Data: c}
	only := func(q, psn uint32, va uint64, key uint32, data []byte) []byte {
		return frame(withRETH(write(q, rdma.WriteOnly, psn, data), va, key, uint32(len(data))))
	}
	badICRC := first(ipsn)
	badICRC[len(badICRC)-10] ^= 1
	ackReq := write(qpn, rdma.WriteFirst, ipsn, a)
	ackReq.AckReq = true
	send := write(qpn, rdma.SendOnly, ipsn, []byte("MRSP\x01\x00\x00\x01"))
	v6 := rdma.AppendFrame(nil, host6, naa6, withRETH(write(qpn, rdma.WriteOnly, ipsn, a), regionBase, rkey, 1024))
	empty := frame(withRETH(write(qpn, rdma.WriteOnly, ipsn, nil), regionBase, rkey, 0))
	return map[string][]step{
		"in order": {
			{frame: first(ipsn), placed: pa},
			{frame: middle(ipsn + 1), placed: pb},
			{frame: last(ipsn + 2), replies: ack(ipsn+2, 1), placed: pc},
		},
		"ack requested": {
			{frame: frame(withRETH(ackReq, regionBase, rkey, 2560)), replies: ack(ipsn, 0), placed: at(qpn, 0, a)},
		},
		"zero length": {
			{frame: empty, replies: ack(ipsn, 1)},
		},
		"duplicated": {
			{frame: first(ipsn), placed: pa},
			{frame: first(ipsn), replies: ack(ipsn, 0)},
			{frame: middle(ipsn + 1), placed: pb},
			{frame: last(ipsn + 2), replies: ack(ipsn+2, 1), placed: pc},
			{frame: last(ipsn + 2), replies: ack(ipsn+2, 1)},
		},
		"lost and resent": {
			{frame: first(ipsn), placed: pa},
			{frame: last(ipsn + 2), replies: nak(rdma.NAKSequence, ipsn+1, 0)},
			{frame: last(ipsn + 2), drop: "out of sequence (NAKed)"},
			{frame: middle(ipsn + 1), placed: pb},
			{frame: last(ipsn + 2), replies: ack(ipsn+2, 1), placed: pc},
		},
		"reordered": {
			{frame: first(ipsn), placed: pa},
			{frame: last(ipsn + 2), replies: nak(rdma.NAKSequence, ipsn+1, 0)},
			{frame: middle(ipsn + 1), placed: pb},
			{frame: last(ipsn + 2), replies: ack(ipsn+2, 1), placed: pc},
		},
		"bad ICRC": {
			{frame: badICRC, drop: "bad ICRC"},
			{frame: first(ipsn), placed: pa},
		},
		"bad rkey": {
			{frame: only(qpn, ipsn, regionBase, rkey+1, a), replies: nak(rdma.NAKRemoteAccess, ipsn, 0)},
		},
		"out of bounds": {
			{frame: only(qpn, ipsn, regionBase+regionLen-512, rkey, a), replies: nak(rdma.NAKRemoteAccess, ipsn, 0)},
			{frame: only(qpn, ipsn, regionBase-1, rkey, a), replies: nak(rdma.NAKRemoteAccess, ipsn, 0)},
		},
		"wrong opcode sequence": {
			{frame: middle(ipsn), replies: nak(rdma.NAKInvalidRequest, ipsn, 0)},
			{frame: first(ipsn), placed: pa},
			{frame: first(ipsn + 1), replies: nak(rdma.NAKInvalidRequest, ipsn+1, 0)},
			{frame: frame(write(qpn, rdma.WriteLast, ipsn+1, a)), replies: nak(rdma.NAKInvalidRequest, ipsn+1, 0)},
		},
		"PSN wrap": {
			{frame: frame(withRETH(write(qpWrap, rdma.WriteFirst, 0xfffffe, a), regionBase, rkey, 2048)), placed: at(qpWrap, 0, a)},
			{frame: frame(write(qpWrap, rdma.WriteMiddle, 0xffffff, b)), replies: nak(rdma.NAKInvalidRequest, 0xffffff, 0)},
			{frame: frame(write(qpWrap, rdma.WriteLast, 0xffffff, b)), replies: ack(0xffffff, 1), placed: at(qpWrap, 1024, b)},
			{frame: only(qpWrap, 0, regionBase+4096, rkey, c), replies: ack(0, 2), placed: at(qpWrap, 4096, c)},
			{frame: only(qpWrap, 0xffffff, regionBase, rkey, c), replies: ack(0, 2)},
		},
		"MRSP send": {
			{frame: frame(send), replies: ack(ipsn, 1), placed: &placement{QPN: qpn, Send: true, Data: send.Payload}},
		},
		"unknown QP": {
			{frame: only(0x99, ipsn, regionBase, rkey, a), drop: "unknown QP"},
		},
		"IPv6": {
			{frame: v6, replies: ack(ipsn, 1), placed: &placement{RKey: rkey, QPN: qpn, Data: a}},
		},
	}
}

// TestResponder runs the crafted traffic through the responder in the
// interpreter: replies, whole messages and drops as the spec says.
func TestResponder(t *testing.T) {
	for name, steps := range scenarios() {
		t.Run(name, func(t *testing.T) { checkSteps(t, newResponder(t), steps) })
	}
}

// checkSteps sends each step's frame to r and checks its replies,
// placement and drop.
func checkSteps(t *testing.T, r *responder, steps []step) {
	t.Helper()
	for i, s := range steps {
		o := r.run(s.frame)
		var got []reply
		for _, f := range o.replies {
			got = append(got, parseReply(t, f))
		}
		if !slices.Equal(got, s.replies) {
			t.Errorf("step %d: replies %+v, want %+v", i, got, s.replies)
		}
		switch {
		case s.placed == nil && len(o.placed) > 0:
			t.Errorf("step %d: a placement %x", i, o.placed[0][:24])
		case s.placed != nil && len(o.placed) != 1:
			t.Errorf("step %d: %d placements, want 1", i, len(o.placed))
		case s.placed != nil:
			if p := parsePlacement(o.placed[0]); fmt.Sprintf("%+v", p) != fmt.Sprintf("%+v", *s.placed) {
				t.Errorf("step %d: placement %+v\nwant %+v", i, short(p), short(*s.placed))
			}
		}
		if d, ok := r.mach.LastDrop(); s.drop != "" && (!ok || d.Reason != s.drop) {
			t.Errorf("step %d: last drop %+v (%v), want %q", i, d, ok, s.drop)
		}
	}
}

// short is a placement with a digest of its data, for messages.
func short(p placement) string {
	return fmt.Sprintf("{RKey:%#x Offset:%#x Imm:%d QPN:%#x HasImm:%v Send:%v Data: %d bytes %.8x}", p.RKey, p.Offset, p.Imm, p.QPN, p.HasImm, p.Send, len(p.Data), p.Data)
}
