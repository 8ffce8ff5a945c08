package rdma_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/rdma"
	"github.com/dragonet-go/nsc/rdma/irnfast"
	"github.com/dragonet-go/nsc/rdma/naafast"
)

// message is one 1 MiB WRITE into the region as 1,024 packets of 1 KiB
// (First, Middles, Last with Immediate), PSNs from the QP's initial one;
// with irn, each with its RETH.
func message(irn bool) [][]byte {
	const n, mtu = 1024, 1024
	var frames [][]byte
	for i := range n {
		p := write(qpn, rdma.WriteOpcode(i, n, true), ipsn+uint32(i), fill(mtu, byte(i)))
		p.VA, p.RKey, p.DMALen, p.Imm, p.IRN = regionBase, rkey, n*mtu, 1, irn
		if irn {
			p.VA += uint64(i * mtu)
		}
		frames = append(frames, frame(p))
	}
	return frames
}

// BenchmarkResponder: the generated responders per 1 KiB WRITE packet
// (ICRC, PSN, opcode sequence or bitmap, placement header), go-back-N and
// IRN, next to the interpreter and to copying the payload alone, the
// baseline any responder pays. A fresh pipeline (the QP at its initial
// PSN) starts each message.
func BenchmarkResponder(b *testing.B) {
	frames := message(false)
	tables := func(s *packet.Schema) []*table.Table {
		ts, err := table.Load(s, "tables", strings.NewReader(tablesText))
		if err != nil {
			b.Fatal(err)
		}
		return ts
	}
	generated := func(frames [][]byte, mk func() fastpath.Pipeline) func(b *testing.B) {
		return func(b *testing.B) {
			var pl fastpath.Pipeline
			bufs := make([][]byte, len(frames))
			for i, f := range frames {
				bufs[i] = make([]byte, 2*packet.Headroom+len(f))
			}
			perMessage(b, len(frames), func() { pl = mk() }, func(k int) {
				copy(bufs[k][packet.Headroom:], frames[k])
				if r := pl.Process(bufs[k], packet.Headroom, len(frames[k])); r.Sink < 0 {
					b.Fatalf("packet %d dropped at %v", k, pl.DropSite(int(r.Drop)))
				}
			})
		}
	}
	b.Run("generated", generated(frames, func() fastpath.Pipeline { pl, _ := naafast.New(tables(naafast.Schema)); return pl }))
	b.Run("generated-IRN", generated(message(true), func() fastpath.Pipeline { pl, _ := irnfast.New(tables(irnfast.Schema)); return pl }))
	b.Run("interpreter", func(b *testing.B) {
		var r *responder
		perMessage(b, len(frames), func() { r = newResponder(b) }, func(k int) {
			r.mach.Run(bytes.Clone(frames[k]), func(*dataflow.Node, []byte) {})
		})
	})
	b.Run("copy", func(b *testing.B) {
		dst := make([]byte, 1024)
		b.SetBytes(1024)
		b.ReportAllocs()
		for i := range b.N {
			f := frames[i%len(frames)]
			copy(dst, f[len(f)-4-1024:len(f)-4])
		}
	})
}

// perMessage runs packet k of a message of n 1 KiB packets b.N times in
// all, with a fresh responder (start, not timed) at each message's start.
func perMessage(b *testing.B, n int, start func(), packet func(k int)) {
	b.SetBytes(1024)
	b.ReportAllocs()
	for i := range b.N {
		k := i % n
		if k == 0 {
			b.StopTimer()
			start()
			b.StartTimer()
		}
		packet(k)
	}
}
