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
	"github.com/dragonet-go/nsc/rdma"
	"github.com/dragonet-go/nsc/sim"
)

// The responder's control-plane state in the tests: QP 0x11 (requester's
// QP 0x22) starting at PSN 0x1000, QP 0x12 starting at 0xfffffe (to wrap),
// and one region, R_Key 0xabcd, of 64 KiB at 0x10000.
const (
	qpn, peer  = 0x11, 0x22
	qpWrap     = 0x12
	ipsn       = 0x1000
	rkey       = 0xabcd
	regionBase = 0x10000
	regionLen  = 0x10000
	tablesText = `table_add connections connected 0x11 => 0x1000 0x22
table_add connections connected 0x12 => 0xfffffe 0x22
table_add regions region 0xabcd => 0x10000 0x10000
`
)

// out is what the responder made of one frame: the replies (ACK/NAK
// frames) and the whole messages (placement header + bytes), in order.
type out struct {
	replies, messages [][]byte
}

// responder runs the NAA responder model in the interpreter.
type responder struct {
	t    *testing.T
	mach *sim.Machine
}

func newResponder(t *testing.T) *responder {
	t.Helper()
	m := testutil.Model(t, "rdma/naa.nsc")
	g, _ := m.Graph("NAAResponder")
	ts, err := packet.LoadTables(m.Schema, "tables", strings.NewReader(tablesText))
	if err != nil {
		t.Fatal(err)
	}
	mach, err := sim.New(g, ts)
	if err != nil {
		t.Fatal(err)
	}
	return &responder{t: t, mach: mach}
}

func (r *responder) run(frame []byte) out {
	var o out
	r.mach.Run(bytes.Clone(frame), func(sink *dataflow.Node, data []byte) {
		switch sink.Name {
		case "TxOut":
			o.replies = append(o.replies, bytes.Clone(data))
		case "RxMemory":
			o.messages = append(o.messages, bytes.Clone(data))
		default:
			r.t.Fatalf("frame left by sink %s", sink.Name)
		}
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
	if len(f) != 14+20+8+12+4+4 {
		t.Fatalf("reply of %d bytes: %x", len(f), f)
	}
	ip, udp, bth := f[14:34], f[34:42], f[42:]
	switch {
	case !bytes.Equal(f[:6], host.MAC) || !bytes.Equal(f[6:12], naa.MAC):
		t.Errorf("reply MACs %x", f[:12])
	case !bytes.Equal(ip[12:16], naa.IP.To4()) || !bytes.Equal(ip[16:20], host.IP.To4()):
		t.Errorf("reply IPs %x", ip[12:20])
	case binary.BigEndian.Uint16(ip[2:]) != 48 || binary.BigEndian.Uint16(udp[4:]) != 28:
		t.Errorf("reply lengths %x %x", ip[2:4], udp[4:6])
	case !packet.VerifyIPv4Header(ip):
		t.Errorf("reply IPv4 checksum")
	case binary.BigEndian.Uint16(udp[2:]) != rdma.Port || bth[0] != rdma.Acknowledge:
		t.Errorf("reply port %x opcode %#x", udp[2:4], bth[0])
	case binary.BigEndian.Uint32(bth[4:])&0xffffff != peer:
		t.Errorf("reply to QP %#x", binary.BigEndian.Uint32(bth[4:])&0xffffff)
	case binary.LittleEndian.Uint32(f[len(f)-4:]) != packet.ICRC(f, 14, 42, len(f), false):
		t.Errorf("reply ICRC")
	}
	return reply{Syndrome: bth[12], PSN: binary.BigEndian.Uint32(bth[8:]) & 0xffffff, MSN: binary.BigEndian.Uint32(bth[12:]) & 0xffffff}
}

// placement reads a whole message: its header and bytes.
type placement struct {
	RKey         uint32
	Offset       uint64
	Imm          uint32
	QPN          uint32
	HasImm, Send bool
	Data         []byte
}

func parsePlacement(m []byte) placement {
	return placement{RKey: binary.BigEndian.Uint32(m), Offset: binary.BigEndian.Uint64(m[4:]), Imm: binary.BigEndian.Uint32(m[12:]),
		QPN: binary.BigEndian.Uint32(m[16:]) >> 8, HasImm: m[19]&0x80 != 0, Send: m[19]&0x40 != 0, Data: m[20:]}
}

// step is one frame sent and what the spec says the responder does.
type step struct {
	frame   []byte
	replies []reply
	message *placement
	drop    string // the drop reason when nothing else happens ("" for none expected)
}

func ack(psn, msn uint32) []reply            { return []reply{{0, psn, msn}} }
func nak(syn uint8, psn, msn uint32) []reply { return []reply{{syn, psn, msn}} }

// scenarios are crafted traffic with the outcomes the InfiniBand spec (go-
// back-N RC responder) and NAAICE ask for.
func scenarios() map[string][]step {
	a, b, c := fill(1024, 1), fill(1024, 2), fill(512, 3)
	whole := slices.Concat(a, b, c)
	first := func(psn uint32) []byte {
		return frame(withRETH(write(qpn, rdma.WriteFirst, psn, a), regionBase+0x100, rkey, 2560))
	}
	middle := func(psn uint32) []byte { return frame(write(qpn, rdma.WriteMiddle, psn, b)) }
	last := func(psn uint32) []byte {
		p := write(qpn, rdma.WriteLastImm, psn, c)
		p.Imm = 7
		return frame(p)
	}
	placed := &placement{RKey: rkey, Offset: 0x100, Imm: 7, QPN: qpn, HasImm: true, Data: whole}
	only := func(q, psn uint32, va uint64, key uint32, data []byte) []byte {
		return frame(withRETH(write(q, rdma.WriteOnly, psn, data), va, key, uint32(len(data))))
	}
	badICRC := first(ipsn)
	badICRC[len(badICRC)-10] ^= 1
	ackReq := write(qpn, rdma.WriteFirst, ipsn, a)
	ackReq.AckReq = true
	send := write(qpn, rdma.SendOnly, ipsn, []byte("MRSP\x01\x00\x00\x01"))
	v6 := rdma.AppendFrame(nil, host6, naa6, withRETH(write(qpn, rdma.WriteOnly, ipsn, a), regionBase, rkey, 1024))
	return map[string][]step{
		"in order": {
			{frame: first(ipsn), drop: "stored"},
			{frame: middle(ipsn + 1), drop: "stored"},
			{frame: last(ipsn + 2), replies: ack(ipsn+2, 1), message: placed},
		},
		"ack requested": {
			{frame: frame(withRETH(ackReq, regionBase, rkey, 2560)), replies: ack(ipsn, 0), drop: "stored"},
		},
		"duplicated": {
			{frame: first(ipsn), drop: "stored"},
			{frame: first(ipsn), replies: ack(ipsn, 0)},
			{frame: middle(ipsn + 1), drop: "stored"},
			{frame: last(ipsn + 2), replies: ack(ipsn+2, 1), message: placed},
			{frame: last(ipsn + 2), replies: ack(ipsn+2, 1)},
		},
		"lost and resent": {
			{frame: first(ipsn), drop: "stored"},
			{frame: last(ipsn + 2), replies: nak(rdma.NAKSequence, ipsn+1, 0)},
			{frame: last(ipsn + 2), drop: "out of sequence (NAKed)"},
			{frame: middle(ipsn + 1), drop: "stored"},
			{frame: last(ipsn + 2), replies: ack(ipsn+2, 1), message: placed},
		},
		"reordered": {
			{frame: first(ipsn), drop: "stored"},
			{frame: last(ipsn + 2), replies: nak(rdma.NAKSequence, ipsn+1, 0)},
			{frame: middle(ipsn + 1), drop: "stored"},
			{frame: last(ipsn + 2), replies: ack(ipsn+2, 1), message: placed},
		},
		"bad ICRC": {
			{frame: badICRC, drop: "bad ICRC"},
			{frame: first(ipsn), drop: "stored"},
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
			{frame: first(ipsn), drop: "stored"},
			{frame: first(ipsn + 1), replies: nak(rdma.NAKInvalidRequest, ipsn+1, 0)},
			{frame: frame(write(qpn, rdma.WriteLast, ipsn+1, a)), replies: nak(rdma.NAKInvalidRequest, ipsn+1, 0)},
		},
		"PSN wrap": {
			{frame: frame(withRETH(write(qpWrap, rdma.WriteFirst, 0xfffffe, a), regionBase, rkey, 2048)), drop: "stored"},
			{frame: frame(write(qpWrap, rdma.WriteMiddle, 0xffffff, b)), replies: nak(rdma.NAKInvalidRequest, 0xffffff, 0)},
			{frame: frame(write(qpWrap, rdma.WriteLast, 0xffffff, b)), replies: ack(0xffffff, 1),
				message: &placement{RKey: rkey, QPN: qpWrap, Data: slices.Concat(a, b)}},
			{frame: only(qpWrap, 0, regionBase+4096, rkey, c), replies: ack(0, 2),
				message: &placement{RKey: rkey, Offset: 4096, QPN: qpWrap, Data: c}},
			{frame: only(qpWrap, 0xffffff, regionBase, rkey, c), replies: ack(0, 2)},
		},
		"MRSP send": {
			{frame: frame(send), replies: ack(ipsn, 1), message: &placement{QPN: qpn, Send: true, Data: send.Payload}},
		},
		"unknown QP": {
			{frame: only(0x99, ipsn, regionBase, rkey, a), drop: "unknown QP"},
		},
		"IPv6": {
			{frame: v6, message: &placement{RKey: rkey, QPN: qpn, Data: a}},
		},
	}
}

// TestResponder runs the crafted traffic through the responder in the
// interpreter: replies, whole messages and drops as the spec says.
func TestResponder(t *testing.T) {
	for name, steps := range scenarios() {
		t.Run(name, func(t *testing.T) {
			r := newResponder(t)
			for i, s := range steps {
				o := r.run(s.frame)
				var got []reply
				for _, f := range o.replies {
					if name == "IPv6" {
						continue // parseReply reads IPv4 replies
					}
					got = append(got, parseReply(t, f))
				}
				if name != "IPv6" && !slices.Equal(got, s.replies) {
					t.Errorf("step %d: replies %+v, want %+v", i, got, s.replies)
				}
				switch {
				case s.message == nil && len(o.messages) > 0:
					t.Errorf("step %d: a message %x", i, o.messages[0][:20])
				case s.message != nil && len(o.messages) != 1:
					t.Errorf("step %d: %d messages, want 1", i, len(o.messages))
				case s.message != nil:
					if p := parsePlacement(o.messages[0]); fmt.Sprint(p) != fmt.Sprint(*s.message) {
						t.Errorf("step %d: message\n%+v\nwant\n%+v", i, p, *s.message)
					}
				}
				if d, ok := r.mach.LastDrop(); s.drop != "" && (!ok || d.Reason != s.drop) {
					t.Errorf("step %d: last drop %+v (%v), want %q", i, d, ok, s.drop)
				}
			}
		})
	}
}
