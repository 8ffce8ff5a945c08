package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/backends/dot"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/fileout"
	"github.com/dragonet-go/nsc/packet"
)

// demoModel is seed 003's I/P stack and NIC.
const demoModel = "models/dragonet/offload.nsc"

// demoPreds are the predicates the demo prints: the NIC's Tx software
// output (seed 003's prPred example), the three Rx sinks, and two LPG
// nodes.
var demoPreds = []struct{ graph, node string }{
	{"IPNicTx", "TxSwOut"},
	{"IPNicRx", "RxOut_"},
	{"IPNicRx", "RxCsumValid"},
	{"IPNicRx", "RxCsumInvalid"},
	{"IPStack", "RxPPort"},
	{"IPStack", "RxPCsumFailed"},
}

func runDemo(e *env, args []string) error {
	fs := newFlags("demo", e)
	out := fs.String("o", "nsc-demo", "directory for the pictures (and, with --system, the run's files)")
	system := fs.Bool("system", false, "run EJFAT whole on loopback instead: nsc cp with its LB, three nsc recv, two nsc send")
	events := fs.Int("events", 600, "--system: events per sender")
	xdp := fs.Bool("xdp", false, "--system: the LB is the model's XDP program on a veth, the receivers and senders in a network namespace (root)")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if *xdp && !*system {
		return usagef("--xdp goes with --system")
	}
	if *system {
		return systemDemo(e, filepath.Join(*out, "system"), *events, *xdp)
	}
	defer fileout.AbortOnInterrupt()()
	m, err := loadModel([]string{demoModel})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "== check %s\n", demoModel)
	for _, g := range m.Graphs {
		fmt.Fprintf(e.stdout, "ok  %s %s: %s\n", g.Kind, g.Name, plural(len(g.Nodes), "node"))
	}
	fmt.Fprintln(e.stdout, "\n== predicates (which packets reach a node), in Dragonet's prPred form")
	for _, p := range demoPreds {
		g, _ := m.Graph(p.graph)
		n := g.Node(p.node)
		fmt.Fprintf(e.stdout, "-- %s\n%s\n", p.graph, g.Predicates().Reaching(n).Format(n.Name))
	}
	fmt.Fprintf(e.stdout, "\n== pictures in %s/\n", *out)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, g := range m.Graphs {
		if err := demoPicture(e, filepath.Join(*out, g.Name), g, dot.Options{}); err != nil {
			return err
		}
	}
	// The stack embedded in the NIC's receive side: what the picture of
	// an embedding explains (colours, what hardware does, what is pruned).
	lpgG, _ := m.Graph("IPStack")
	prgG, _ := m.Graph("IPNicRx")
	em, err := embed.Embed(lpgG, prgG)
	if err != nil {
		return err
	}
	if err := demoPicture(e, filepath.Join(*out, "IPStack-in-IPNicRx"), em.Graph, dot.EmbeddingOptions(em)); err != nil {
		return err
	}
	return demoLB(e)
}

// demoPicture writes base.dot, and base.svg when Graphviz is installed.
func demoPicture(e *env, base string, g *dataflow.Graph, opts dot.Options) error {
	if err := writeDot(e, g, base+".dot", "", opts); err != nil {
		return err
	}
	msg := base + ".dot"
	switch err := writeDot(e, g, base+".svg", "svg", opts); {
	case err == nil:
		msg += ", " + base + ".svg"
	case errors.Is(err, dot.ErrNoGraphviz):
		msg += " (install Graphviz for SVG)"
	default:
		return err
	}
	fmt.Fprintln(e.stdout, msg)
	return nil
}

// demoLB runs seed 000's packets and table script through the 2021 EJFAT
// load balancer twice, generated fast path and interpreter, and embeds it
// behind kernel sockets.
func demoLB(e *env) error {
	fmt.Fprintln(e.stdout, "\n== EJFAT load balancer (seed 000): lb-2021, generated Go fast path and interpreter")
	frames, err := ejfat.Seed000Frames()
	if err != nil {
		return err
	}
	ts, err := lbfast.Tables("lb-2021", "seed000.tables", strings.NewReader(ejfat.Seed000Tables))
	if err != nil {
		return err
	}
	pl, err := lbfast.New("lb-2021", ts)
	if err != nil {
		return err
	}
	mach, err := ejfat.Interpreter("lb-2021", ejfat.HostPRG, "seed000.tables", strings.NewReader(ejfat.Seed000Tables))
	if err != nil {
		return err
	}
	to := map[string]int{}
	same := 0
	buf := make([]byte, 2*packet.Headroom+2048)
	for _, f := range frames {
		var want []byte
		mach.Run(f, func(_ *dataflow.Node, data []byte) { want = bytes.Clone(data) })
		n := copy(buf[packet.Headroom:], f)
		r := pl.Process(buf, packet.Headroom, n)
		if r.Sink >= 0 && bytes.Equal(r.Data, want) {
			same++
		}
		if r.Sink >= 0 {
			to[memberOf(r.Data)]++
		}
	}
	for _, k := range sortedKeys(to) {
		fmt.Fprintf(e.stdout, "%2d events -> %s\n", to[k], k)
	}
	fmt.Fprintf(e.stdout, "fast path and interpreter agree byte for byte on %d of %d packets\n", same, len(frames))
	m, lpg, err := ejfat.LPG("lb-2021")
	if err != nil {
		return err
	}
	prg, _ := m.Graph("LinuxUDP")
	em, err := embed.Embed(lpg, prg)
	if err != nil {
		return err
	}
	pruned := 0
	for _, p := range em.Placements {
		if p.Kind == embed.Pruned {
			pruned++
		}
	}
	fmt.Fprintf(e.stdout, "behind kernel UDP sockets (PRG LinuxUDP) %d of %d LPG nodes are pruned: the kernel parses and checks\n", pruned, len(em.Placements))
	return demoCrossing(e)
}

// memberOf names where a forwarded frame goes: destination MAC, address,
// port.
func memberOf(frame []byte) string {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.NoCopy)
	eth, _ := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if eth == nil || udp == nil {
		return "not UDP"
	}
	dst := ""
	if nl := p.NetworkLayer(); nl != nil {
		dst = nl.NetworkFlow().Dst().String()
	}
	return fmt.Sprintf("member %s at %s port %d", eth.DstMAC, dst, udp.DstPort)
}
