package backends_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends"
	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// input loads src's LPG L, embedded in PRG prg ("": alone).
func input(t *testing.T, src, prg string) backends.Input {
	t.Helper()
	m := testutil.ModelSource(t, src)
	l, ok := m.Graph("L")
	if !ok {
		t.Fatal("no L")
	}
	if prg == "" {
		return backends.Input{Graph: l}
	}
	p, ok := m.Graph(prg)
	if !ok {
		t.Fatalf("no %s", prg)
	}
	em, err := embed.Embed(l, p)
	if err != nil {
		t.Fatal(err)
	}
	return backends.Input{Graph: em.Graph, PRG: em.PRG}
}

// Two nodes a target cannot express: every backend refuses both, each a
// Refusal with the node, its position and the reason, found by errors.As
// and matching ErrUnsupported.
func TestRefusals(t *testing.T) {
	const spawns = `include "lib/inet.nsc"
lpg L {
  node RxQueue { op input parse ethernet  port out -> A }
  node A { op test valid(ipv4)  port true -> B  spawn true -> TxQueue  port false -> TxQueue }
  node B { op test valid(udp)  port true -> TxQueue  spawn true -> TxQueue  port false -> TxQueue }
  node TxQueue { op emit }
}`
	// XDP frames leave by XDP_TX (an emit) or XDP_PASS (a steer, an emit
	// marked [host]); a sink that is neither has no verdict.
	const sinks = `include "lib/inet.nsc"
lpg L {
  node RxQueue { op input parse ethernet  port out -> A }
  node A { op test valid(ipv4)  port true -> Out1  port false -> Out2 }
  node Out1 [sink] { op nop  port out }
  node Out2 [sink] { op nop  port out }
}`
	// A P4 pipeline has no queues or sockets.
	const steers = `include "lib/inet.nsc"
include "ejfat/p4.nsc"
lpg L {
  node RxQueue { op input  port out -> Eth }
  node Eth { op extract ethernet  port true -> IPv4  port false -> Bad }
  node IPv4 { op extract ipv4  port true -> A  port false -> Bad }
  node A { op test ipv4.ttl == 1  port true -> Q1  port false -> B }
  node B { op test ipv4.ttl == 2  port true -> Q2  port false -> TxQueue }
  node Q1 { op steer queue 1 }
  node Q2 { op steer queue 2 }
  node Bad { op drop "parse" }
  node TxQueue { op emit }
}`
	// Keyed state: XDP and P4 hold none (Go generates it).
	const places = `include "lib/inet.nsc"
state s { key { ipv4.src } buffer ipv4.total_len }
lpg L {
  node RxQueue { op input  port out -> Eth }
  node Eth { op extract ethernet  port true -> IPv4  port false -> Bad }
  node IPv4 { op extract ipv4  port true -> A  port false -> Bad }
  node A { op test ipv4.ttl == 1  port true -> P1  port false -> P2 }
  node P1 { op place s at ipv4.id  port placed -> Bad  port complete -> TxQueue  port duplicate -> Bad  port overlap -> Bad
    port late -> Bad  port length_mismatch -> Bad  port out_of_bounds -> Bad  port zero_length -> Bad  port too_large -> Bad }
  node P2 { op place s at ipv4.frag  port placed -> Bad  port complete -> TxQueue  port duplicate -> Bad  port overlap -> Bad
    port late -> Bad  port length_mismatch -> Bad  port out_of_bounds -> Bad  port zero_length -> Bad  port too_large -> Bad }
  node Bad { op drop "bad" }
  node TxQueue { op emit }
}`
	placeWant := func(target, reason string) []backends.Refusal {
		return []backends.Refusal{
			{Target: target, Node: "P1", Pos: "m.nsc:8:3", Reason: reason},
			{Target: target, Node: "P2", Pos: "m.nsc:10:3", Reason: reason},
		}
	}
	const notGenerated = "place s: keyed state (event buffers the data path creates) is not generated for this target"
	spawnWant := func(target string) []backends.Refusal {
		return []backends.Refusal{
			{Target: target, Node: "A", Pos: "m.nsc:4:3", Reason: "port true has a spawn edge; the generated code runs one task per frame"},
			{Target: target, Node: "B", Pos: "m.nsc:5:3", Reason: "port true has a spawn edge; the generated code runs one task per frame"},
		}
	}
	// The LPG alone, with the XDP PRG's limits.
	xdpSinks := input(t, sinks, "")
	xdpSinks.PRG, _ = testutil.Model(t, "ejfat/xdp.nsc").Graph("XDP")
	xdpPlaces := input(t, places, "")
	xdpPlaces.PRG = xdpSinks.PRG
	noOutput := ": the XDP hook has no output for it (frames leave by an emit, XDP_TX, or by a steer or an emit marked [host], XDP_PASS)"
	for _, c := range []struct {
		name   string
		target backends.Target
		in     backends.Input
		want   []backends.Refusal
	}{
		{"go spawn", golang.Target{}, input(t, spawns, ""), spawnWant("go")},
		{"xdp spawn", xdp.Target{}, input(t, spawns, ""), spawnWant("xdp")},
		{"p4 spawn", p4.Target{Options: p4.Options{Arch: p4.V1Model}}, input(t, spawns, ""), spawnWant("p4 (v1model)")},
		{"xdp place", xdp.Target{}, xdpPlaces, placeWant("xdp", notGenerated)},
		{"p4 place", p4.Target{Options: p4.Options{Arch: p4.V1Model}}, input(t, places, ""),
			placeWant("p4 (v1model)", "place s: a P4 pipeline holds no keyed state that the data path creates (event buffers); reassemble in software")},
		{"xdp sinks", xdp.Target{}, xdpSinks, []backends.Refusal{
			{Target: "xdp", Node: "Out1", Pos: "m.nsc:5:3", Reason: "sink Out1" + noOutput},
			{Target: "xdp", Node: "Out2", Pos: "m.nsc:6:3", Reason: "sink Out2" + noOutput},
		}},
		{"p4 steers", p4.Target{Options: p4.Options{Arch: p4.XSA}}, input(t, steers, "U280"), []backends.Refusal{
			{Target: "p4 (xsa)", Node: "Q1", Pos: "m.nsc:9:3", Reason: "steer queue 1: a P4 pipeline has no queues or sockets to deliver to; emit the frame"},
			{Target: "p4 (xsa)", Node: "Q2", Pos: "m.nsc:10:3", Reason: "steer queue 2: a P4 pipeline has no queues or sockets to deliver to; emit the frame"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			arts, err := c.target.Generate(c.in)
			if err == nil {
				t.Fatalf("generated %d artifacts; want refusals", len(arts))
			}
			if !errors.Is(err, backends.ErrUnsupported) {
				t.Errorf("%v does not match ErrUnsupported", err)
			}
			var first *backends.Refusal
			if !errors.As(err, &first) || first.Node != c.want[0].Node {
				t.Errorf("errors.As: %v, want the refusal of %s", first, c.want[0].Node)
			}
			var rs backends.Refusals
			if !errors.As(err, &rs) {
				t.Fatalf("%v: not every refusal (Refusals)", err)
			}
			var got []backends.Refusal
			for _, r := range rs {
				got = append(got, *r)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("refusals (-want +got):\n%s", diff)
			}
		})
	}
}

// An operation no dialect prints (here one this nsc does not know) is
// refused by the shared walk, identically for Go and XDP.
func TestUnknownOperationRefusedAlike(t *testing.T) {
	const src = `include "lib/inet.nsc"
include "ejfat/xdp.nsc"
lpg L {
  node RxQueue { op input parse ethernet  port out -> A }
  node A { op count "a"  port out -> TxQueue }
  node TxQueue { op emit }
}`
	in := input(t, src, "")
	in.PRG, _ = testutil.ModelSource(t, src).Graph("XDP")
	in.Graph.Node("A").Op.Kind = 250
	var reasons []string
	for _, target := range []backends.Target{golang.Target{}, xdp.Target{}} {
		_, err := target.Generate(in)
		var r *backends.Refusal
		if !errors.As(err, &r) || r.Node != "A" || r.Pos != "m.nsc:5:3" {
			t.Fatalf("%s: %v, want a refusal of node A at m.nsc:5:3", target.Name(), err)
		}
		reasons = append(reasons, r.Reason)
	}
	if reasons[0] != reasons[1] {
		t.Errorf("go refuses %q, xdp %q", reasons[0], reasons[1])
	}
}
