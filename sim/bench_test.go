package sim_test

import (
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/sim"
)

// BenchmarkInterpreterUDP runs a valid UDP/IPv4 datagram (64 bytes of
// payload) through the UDP/IPv4 LPG: parse, two checksum verifications, a
// demultiplex, delivery to a socket.
func BenchmarkInterpreterUDP(b *testing.B) {
	ip := testutil.IPv4(layers.IPProtocolUDP)
	u := &layers.UDP{SrcPort: 4000, DstPort: 7}
	u.SetNetworkLayerForChecksum(ip)
	frame := testutil.Serialize(b, testutil.Eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload(make([]byte, 64)))
	m, err := sim.New(udpGraph(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	delivered := 0
	emit := func(*dataflow.Node, []byte) { delivered++ }
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		m.Run(frame, emit)
	}
	if delivered == 0 {
		b.Fatal("nothing delivered")
	}
}

// BenchmarkInterpreterReassembly reassembles a 64 KiB event from eight
// 8 KiB segments through models/ejfat/reassembler.nsc, per event, next to
// BenchmarkInterpreterUDP's per-frame cost: the reference the generated
// reassembly is measured against.
func BenchmarkInterpreterReassembly(b *testing.B) {
	r := newRig(b)
	ev := testutil.Event{Src: srcA, Data: make([]byte, 64<<10)}
	var frames [][]byte
	for _, s := range testutil.Segments(ev, 8<<10, 0) {
		f := s.Frame(b)
		binary.BigEndian.PutUint16(f[14+20+6:], 0) // no UDP checksum, so the tick can change
		frames = append(frames, f)
	}
	delivered := 0
	emit := func(*dataflow.Node, []byte) { delivered++ }
	b.ReportAllocs()
	b.SetBytes(int64(len(ev.Data)))
	for i := uint64(0); b.Loop(); i++ {
		for _, f := range frames { // a new event number each time
			binary.BigEndian.PutUint64(f[14+20+8+12:], i)
			r.m.Run(f, emit)
		}
	}
	if delivered != b.N {
		b.Fatalf("%d events delivered, want %d", delivered, b.N)
	}
}
