package p4_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/p4/p4sim"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/sim"
)

// TestPayloadAgreement: the P4 PRGs declare payload_bytes 0, and the
// embedder leaves to the host exactly the nodes that the backend refuses
// for want of payload access; the device's part then compiles. (A
// checksum computed over a frame whose IP length the LPG fixed covers
// headers only: both keep lb-2026's NsCsum in the program, TestGolden and
// embed's TestDevicePayload.)
func TestPayloadAgreement(t *testing.T) {
	for _, c := range []struct{ name, body, host string }{
		{"checksum verify", `node Work { op checksum verify udp  port true -> TxQueue  port false -> Bad }`,
			"checksum verify udp reads the payload, which the checksum covers; BMv2 reads none of the payload (limit payload_bytes)"},
		{"checksum compute", `node Work { op checksum compute udp  port out -> TxQueue }`,
			"checksum compute udp reads the payload, which the checksum covers; BMv2 reads none of the payload (limit payload_bytes)"},
		{"frame length", `node Work { op set { udp.length = len(udp) }  port out -> TxQueue }`,
			"len(udp) reads where the frame ends, past its payload; BMv2 reads none of the payload (limit payload_bytes)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := testutil.ModelSource(t, strings.Replace(strings.Replace(refusalModel, "TABLES", "", 1), "BODY", c.body, 1))
			l, _ := m.Graph("L")
			p, _ := m.Graph("BMv2")
			em, err := embed.Embed(l, p)
			if err != nil {
				t.Fatal(err)
			}
			_, whole := p4.Generate(em.Graph, p4.Options{Arch: p4.V1Model, Name: "l", PRG: p.Name, Limits: p.Limits})
			work, _ := em.Placement("Work")
			if !errors.Is(whole, p4.ErrUnsupported) || !strings.Contains(whole.Error(), "node Work: ") {
				t.Errorf("the backend takes node Work on the whole graph: %v", whole)
			}
			if work.Kind != embed.Host || work.Reason != c.host || !strings.Contains(work.Counterexample, "valid(udp)") {
				t.Errorf("Work: %+v", work)
			}
			if em.Device == nil || em.Device.Node("Work") != nil {
				t.Fatal("no device part without Work")
			}
			if _, err := p4.Generate(em.Device, p4.Options{Arch: p4.V1Model, Name: "l", PRG: p.Name, Limits: p.Limits}); err != nil {
				t.Errorf("the device's part: %v", err)
			}
		})
	}
}

// TestPayloadSplit: a UDP echo responder on BMv2, which swaps the ports of
// datagrams to port 7 and computes their checksum over the payload. The
// P4 program (run by the test P4 interpreter) forwards the rest and punts
// the echo requests, unchanged, to the CPU port; the host (nsc's
// interpreter on the embedded graph, as the host part runs it) answers
// them. Together they must do what the interpreter does on the LPG
// embedded in BMv2, frame by frame.
func TestPayloadSplit(t *testing.T) {
	m := testutil.ModelSource(t, strings.Replace(strings.Replace(refusalModel, "TABLES", "", 1), "BODY", `
  node Work { op test udp.dport == 7  port true -> Swap  port false -> Fwd }
  node Swap { op set { udp.dport = udp.sport  udp.sport = 7 }  port out -> Csum }
  node Csum { op checksum compute udp  port out -> TxQueue }
  node Fwd { op count "forwarded"  port out -> TxQueue }`, 1))
	l, _ := m.Graph("L")
	p, _ := m.Graph("BMv2")
	em, err := embed.Embed(l, p)
	if err != nil {
		t.Fatal(err)
	}
	for n, k := range map[string]embed.Kind{"Csum": embed.Host, "Swap": embed.Host, "Work": embed.Program, "Fwd": embed.Program} {
		if pl, _ := em.Placement(n); pl.Kind != k {
			t.Errorf("%s: %+v, want %v", n, pl, k)
		}
	}
	prog, err := p4.Generate(em.Device, p4.Options{Arch: p4.V1Model, Name: "echo", PRG: p.Name, Limits: p.Limits})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := p4sim.Parse(string(prog.Source))
	if err != nil {
		t.Fatal(err)
	}
	dev := p4sim.New(parsed, p4.V1Model, loadP4Tables(t, prog, nil))
	want, err := sim.New(em.Graph, nil)
	if err != nil {
		t.Fatal(err)
	}
	host, err := sim.New(em.Graph, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seeds [][]byte
	for _, dport := range []uint16{7, 9, 53} {
		for _, n := range []int{0, 1, 18, 300} {
			seeds = append(seeds, udpFrame(dport, n))
		}
	}
	where, punted := deviceThenHost(t, dev, want, append(seeds, difftest.Mutate(seeds, 20000, 3)...),
		func(f []byte) difftest.Outcome { return difftest.Interp(host, f) })
	if hc := host.Counters().Nodes["Csum"]; punted < 100 || hc != want.Counters().Nodes["Csum"] || where["sink TxWire"] < 1000 {
		t.Errorf("%d punted, Csum ran %d times on the host and %d in the interpreter; %v", punted, hc, want.Counters().Nodes["Csum"], where)
	}
	t.Logf("%d frames, %d punted to the host: %v", len(seeds)+20000, punted, where)
}

// udpFrame is an Ethernet/IPv4/UDP frame to dport with n bytes of payload.
func udpFrame(dport uint16, n int) []byte {
	f := make([]byte, 14+20+8+n)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+n))
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	u := ip[20:]
	binary.BigEndian.PutUint16(u[0:], 40000)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(8+n))
	for i := range n {
		u[8+i] = byte(i * 7)
	}
	return f
}
