package lang_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/packet"
)

// A state's amounts, with their units and defaults, and the ports of a
// place that uses it.
func TestStateDeclaration(t *testing.T) {
	m, err := load(map[string]string{"main.nsc": `
header h { id: 16  off: 32  len: 32 }
state a { key { h.id, h.id + 1 } buffer h.len  max 64 KiB  timeout 2s  events 7  bytes 1 MiB }
state b { key { h.id } buffer h.len  timeout 250us }
lpg G {
  node Q { op input parse h  port out -> P }
  node P { op place b at h.off size 3  port placed port complete -> E port duplicate port overlap port late
           port length_mismatch port out_of_bounds port zero_length port too_large }
  node E { op emit }
}`})
	if err != nil {
		t.Fatal(err)
	}
	type amounts struct {
		Name      string
		Keys      int
		Max       uint64
		Timeout   time.Duration
		Events    int
		Bytes     uint64
		LengthSrc string
	}
	var got []amounts
	for _, s := range m.Schema.States {
		got = append(got, amounts{s.Name, len(s.Keys), s.Max, s.Timeout, s.Events, s.Bytes, s.Length.Text})
	}
	want := []amounts{
		{"a", 2, 64 << 10, 2 * time.Second, 7, 1 << 20, "h.len"},
		{"b", 1, 1 << 30, 250 * time.Microsecond, 1024, 4 << 30, "h.len"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	g, _ := m.Graph("G")
	op := g.Node("P").Op
	if op.Kind != packet.OpPlace || op.State != 1 || op.Offset.Text != "h.off" || op.Size.Text != "3" {
		t.Errorf("place op: %+v", op)
	}
	if got := op.Describe(m.Schema); got != "place b at h.off" {
		t.Errorf("Describe: %q", got)
	}
	if diff := cmp.Diff(packet.PlacePorts, op.Ports(m.Schema)); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
}

// The sender's headers have the sizes of specs/ejfat-reassembly.md §2.
func TestEJFATSenderHeaders(t *testing.T) {
	m, err := load(map[string]string{"main.nsc": `include "lib/ejfat-sender.nsc"
include "lib/ejfat.nsc"`})
	if err != nil {
		t.Fatal(err)
	}
	for name, bytes := range map[string]int{"evio6": 8, "lbsync": 28, "re": 20, "lb": 16, "lbv3": 16} {
		h, ok := m.Schema.Header(name)
		if !ok {
			t.Errorf("no header %s", name)
			continue
		}
		last := h.Fields[len(h.Fields)-1]
		if got := (last.Offset + last.Width) / 8; got != bytes {
			t.Errorf("%s is %d bytes, want %d", name, got, bytes)
		}
	}
}
