package p4sim_test

import (
	"bytes"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/p4/p4sim"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// A frame that leaves with no byte is sent, not dropped: Run tells the
// two apart by nil (nsc fuzz seed 20261202, model 95, read the empty
// frame of a popped Ethernet-only frame as a drop).
func TestEmptyFrameSent(t *testing.T) {
	m := testutil.ModelSource(t, `
include "lib/ethernet.nsc"
include "ejfat/p4.nsc"
lpg L {
    node RxQueue { op input  port out -> Eth }
    node Eth { op extract ethernet  port true -> Type  port false -> Bad }
    node Type { op test ethernet.type == 0x88b5  port true -> Pop  port false -> Bad }
    node Bad { op drop "parse" }
    node Pop { op pop ethernet  port out -> TxQueue }
    node TxQueue { op emit }
}`)
	l, _ := m.Graph("L")
	pg, _ := m.Graph("BMv2")
	em, err := embed.Embed(l, pg)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := p4.Generate(em.Graph, p4.Options{Arch: p4.V1Model, Name: "l", PRG: "BMv2"})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := p4sim.Parse(string(prog.Source))
	if err != nil {
		t.Fatal(err)
	}
	run := p4sim.New(parsed, p4.V1Model, nil)
	eth := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x88, 0xb5}
	for _, c := range []struct {
		frame, want []byte
	}{
		{eth, []byte{}},
		{append(eth, 'x'), []byte("x")},
		{append(eth[:12:12], 0x08, 0x00), nil},
	} {
		got, err := run.Run(c.frame)
		if err != nil || (got == nil) != (c.want == nil) || !bytes.Equal(got, c.want) {
			t.Errorf("frame %x: got %q (nil %v), %v; want %q (nil %v)", c.frame, got, got == nil, err, c.want, c.want == nil)
		}
	}
}
