package lower_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet"
)

// parseStmt is a statement of an unrolled parse as lower.Parse prints
// it: extract a header, branch on an edge, or end the parse.
type parseStmt struct {
	extract int // a header, or -1
	edge    *packet.ParseEdge
	body    []parseStmt
	done    bool
}

// parseRecorder records an unrolled parse's statements.
type parseRecorder struct {
	stack   []*[]parseStmt
	headers int // ParseHeader calls
}

func (r *parseRecorder) add(s parseStmt) *parseStmt {
	top := r.stack[len(r.stack)-1]
	*top = append(*top, s)
	return &(*top)[len(*top)-1]
}

func (r *parseRecorder) ParseBegin(*lower.ParseGraph) (string, bool) { return "", true }
func (r *parseRecorder) ParseHeader(x *lower.Extract) {
	r.headers++
	r.add(parseStmt{extract: x.H})
}
func (r *parseRecorder) ParseNext(_ int, e *packet.ParseEdge, _ []int) {
	s := r.add(parseStmt{extract: -1, edge: e})
	r.stack = append(r.stack, &s.body)
}
func (r *parseRecorder) EndParseNext()              { r.stack = r.stack[:len(r.stack)-1] }
func (r *parseRecorder) ParseDone()                 { r.add(parseStmt{extract: -1, done: true}) }
func (r *parseRecorder) EndParseHeader(int)         {}
func (r *parseRecorder) ParseEnd(*lower.ParseGraph) {}

// run runs statements on p; ended says a statement ended the parse.
func run(ss []parseStmt, p *packet.Packet) (ok, ended bool) {
	for _, s := range ss {
		switch {
		case s.done:
			return true, true
		case s.extract >= 0:
			if !p.Extract(s.extract) {
				return false, true
			}
		default:
			v, _ := p.Get(packet.FieldRef{Header: s.edge.From, Field: s.edge.Field})
			if v.And(s.edge.Mask) == s.edge.Value.And(s.edge.Mask) {
				if ok, ended := run(s.body, p); ended {
					return ok, true
				}
			}
		}
	}
	return false, false
}

// The unrolled parse takes a frame where the interpreter's parse loop
// does: the same result, the same headers valid at the same offsets, on
// frames through IPv4 options, a header that follows itself and one met
// again, bytes flipped at random.
func TestParseAgainstInterpreter(t *testing.T) {
	m := testutil.ModelSource(t, `include "lib/inet.nsc"
header tlv { kind: 8  len: 8 }
header big { k: 16  w: 128 }
next udp.dport { 5000 -> tlv }
next tlv.kind { 1 -> tlv, 2 -> big }
next big.k { 0x0800 -> ipv4, 17 -> tlv }
lpg L {
  node RxQueue { op input parse ethernet  port out -> TxQueue }
  node TxQueue { op emit }
}`)
	g, _ := m.Graph("L")
	s := g.Schema
	eth, _ := s.Header("ethernet")
	pg := lower.UnrollParse(s, eth.ID)
	r := &parseRecorder{}
	var prog []parseStmt
	r.stack = []*[]parseStmt{&prog}
	lower.Parse(r, s, pg)
	if r.headers != pg.Sites || !pg.Narrow {
		t.Fatalf("%d sites, %d printed, narrow %v", pg.Sites, r.headers, pg.Narrow)
	}
	base := []byte{
		0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, // ethernet
		0x46, 0, 0, 60, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 1, 1, 1, 0, // ipv4, one word of options
		0x30, 0x39, 0x13, 0x88, 0, 8, 0, 0, // udp to 5000
		1, 2, 1, 2, 2, 0, 0, 17, // tlv, tlv, tlv (kind 2: big)
	}
	base = append(base, make([]byte, 40)...)
	rng := rand.New(rand.NewPCG(1, 2))
	want, got := packet.NewPacket(s), packet.NewPacket(s)
	for i := range 5000 {
		f := slices.Clone(base)
		for range i % 4 {
			f[rng.IntN(50)] ^= byte(1 << rng.IntN(8))
		}
		f = f[:len(f)-rng.IntN(len(f)-10)]
		want.Reset(f)
		wok := want.ParseFrame(eth.ID)
		got.Reset(f)
		gok, ended := run(prog, got)
		if !ended || gok != wok || !slices.Equal(got.Hdr, want.Hdr) {
			t.Fatalf("frame %x: unrolled %v (ended %v) %v, interpreter %v %v", f, gok, ended, got.Hdr, wok, want.Hdr)
		}
	}
	wide := testutil.ModelSource(t, `include "lib/inet.nsc"
header big { w: 128 }
next udp.dport { 5000 -> big }
next big.w { 1 -> ipv4 }
lpg L {
  node RxQueue { op input parse ethernet  port out -> TxQueue }
  node TxQueue { op emit }
}`)
	g, _ = wide.Graph("L")
	eth, _ = g.Schema.Header("ethernet")
	if pg := lower.UnrollParse(g.Schema, eth.ID); pg.Narrow {
		t.Errorf("a 128-bit next-header field: narrow")
	}
}

// A lowered extraction's fixed bytes and length, evaluated with the
// fixed part in place, give the header the interpreter extracts: its
// length where it fits, none where it does not (IPv4 with IHL 0 to 15).
func TestExtractAgainstInterpreter(t *testing.T) {
	m := testutil.ModelSource(t, `include "lib/inet.nsc"
lpg L {
  node RxQueue { op input  port out -> TxQueue }
  node TxQueue { op emit }
}`)
	g, _ := m.Graph("L")
	s := g.Schema
	ip, _ := s.Header("ipv4")
	x := lower.LowerExtract(s, ip.ID)
	if x.Meta || x.Length == nil || x.Fixed != 20 {
		t.Fatalf("ipv4: %+v", x)
	}
	want, got := packet.NewPacket(s), packet.NewPacket(s)
	for ihl := range 16 {
		for _, size := range []int{20, 40, 60} {
			f := make([]byte, size)
			f[0] = 0x40 | byte(ihl)
			want.Reset(f)
			ok := want.Extract(ip.ID)
			got.Reset(f)
			got.Hdr[ip.ID] = packet.HeaderState{Off: 0, Len: x.Fixed, Valid: true}
			ext, _ := x.Length.Eval(got, nil)
			fits := x.Fixed+int(ext.Lo) <= size && ext.Hi == 0
			if fits != ok || ok && want.Hdr[ip.ID].Len != x.Fixed+int(ext.Lo) {
				t.Errorf("ihl %d, %d bytes: lowered %d+%d (fits %v), interpreter %v %+v", ihl, size, x.Fixed, ext.Lo, fits, ok, want.Hdr[ip.ID])
			}
		}
	}
}
