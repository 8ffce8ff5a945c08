package fuzz

import (
	"fmt"
	"slices"
	"strings"
)

// gnode is one LPG node being generated: its operation and ports, each
// port with the node it leads to.
type gnode struct {
	name  string
	op    string
	ports []string
	to    []string
}

// lpg writes the LPG: an entry that parses (in the node or right after
// it), a run of random operations wired forward (each node's first port
// to the next, so every node runs; its other ports anywhere later), and
// sinks: drops with reasons, queues, and the Tx exit.
func (g *gen) lpg() {
	var nodes []*gnode
	entry := &gnode{name: "RxQueue", op: "input parse ethernet", ports: []string{"out"}}
	nodes = append(nodes, entry)
	if g.chance(0.3) {
		entry.op = "input"
		nodes = append(nodes, &gnode{name: "Parse", op: "parse ethernet", ports: []string{"true", "false"}})
	}
	k := 2 + g.pick(12)
	for i := 0; i < k; i++ {
		nodes = append(nodes, g.operation(fmt.Sprintf("N%d", i)))
	}
	var sinks []string
	sinkDecl := map[string]string{}
	sink := func() string {
		if len(sinks) > 0 && g.chance(0.3) {
			return sinks[g.pick(len(sinks))]
		}
		var name, op string
		switch g.pick(4) {
		case 0, 1:
			name, op = "TxQueue", "emit"
		case 2:
			name = fmt.Sprintf("D%d", len(sinks))
			op = fmt.Sprintf("drop %q", fmt.Sprintf("reason %d", len(sinks)))
		default:
			name = fmt.Sprintf("Q%d", len(sinks))
			op = fmt.Sprintf("steer queue %d", len(sinks))
		}
		if _, ok := sinkDecl[name]; !ok {
			sinks = append(sinks, name)
			sinkDecl[name] = op
		}
		return name
	}
	for i, n := range nodes {
		n.to = make([]string, len(n.ports))
		for p := range n.ports {
			switch {
			case p == 0 && i+1 < len(nodes):
				n.to[p] = nodes[i+1].name
			case i+2 < len(nodes) && g.chance(0.5):
				n.to[p] = nodes[i+2+g.pick(len(nodes)-i-2)].name
			default:
				n.to[p] = sink()
			}
		}
	}
	// The last node's first port ends somewhere.
	g.line("lpg G {")
	for _, n := range nodes {
		g.line("    node %s {", n.name)
		g.line("        op %s", n.op)
		for p, port := range n.ports {
			g.line("        port %s -> %s", port, n.to[p])
		}
		g.line("    }")
	}
	slices.Sort(sinks)
	for _, s := range sinks {
		g.line("    node %s { op %s }", s, sinkDecl[s])
	}
	g.line("}")
}

// headers the LPG may extract, push, pop or check.
func (g *gen) header() string {
	hs := append([]string{"ethernet", "vlan", "ipv4", "ipv6", "udp", "icmp"}, g.user...)
	return hs[g.pick(len(hs))]
}

// operation makes a random F-node.
func (g *gen) operation(name string) *gnode {
	n := &gnode{name: name, ports: []string{"out"}}
	tf := []string{"true", "false"}
	switch g.pick(22) {
	case 0, 1, 2:
		n.op, n.ports = "test "+g.cond(2), tf
	case 3:
		f := g.fields[g.pick(len(g.fields))]
		seen := map[string]bool{}
		var cases []string
		n.ports = nil
		for c := 0; c < 1+g.pick(3); c++ {
			v := g.value(f.width)
			if seen[v] {
				continue
			}
			seen[v] = true
			port := fmt.Sprintf("c%d", c)
			cases = append(cases, v+" -> "+port)
			n.ports = append(n.ports, port)
		}
		n.op = fmt.Sprintf("switch %s { %s, default -> other }", f.ref(), strings.Join(cases, ", "))
		n.ports = append(n.ports, "other")
	case 4:
		n.op, n.ports = "extract "+g.header(), tf
	case 5:
		n.op, n.ports = "checksum verify "+g.csummed[g.pick(len(g.csummed))], tf
	case 6:
		n.op = "checksum compute " + g.csummed[g.pick(len(g.csummed))]
	case 7, 8, 9:
		n.op = "set { " + g.assigns() + " }" + g.update()
	case 10:
		h := g.header()
		n.op = "pop " + h + g.update()
	case 11:
		switch g.pick(4) {
		case 0:
			n.op = "push vlan after ethernet"
		case 1:
			n.op = "push " + g.header()
		case 2: // a variable-length field of a few zero bytes
			n.op = fmt.Sprintf("push %s extra %d", g.varlen[g.pick(len(g.varlen))], g.pick(9))
		default:
			h, after := g.header(), g.header()
			for after == h {
				after = g.header()
			}
			n.op = "push " + h + " after " + after
		}
	case 12, 13:
		if len(g.tables) == 0 {
			n.op, n.ports = "test "+g.cond(2), tf
			break
		}
		t := g.tables[g.pick(len(g.tables))]
		n.op, n.ports = "lookup "+t.name, slices.Clone(t.actions)
	case 14:
		n.op = fmt.Sprintf("count %q", "c"+name)
	case 15, 16:
		if len(g.registers) == 0 {
			n.op = "set { " + g.assigns() + " }"
			break
		}
		r := g.registers[g.pick(len(g.registers))]
		if g.chance(0.5) {
			n.op, n.ports = "load "+r, []string{"hit", "miss"}
		} else {
			n.op, n.ports = "store "+r, []string{"out", "full"}
		}
	case 17, 18:
		if len(g.states) == 0 {
			n.op, n.ports = "test "+g.cond(2), tf
			break
		}
		switch g.pick(3) {
		case 0: // the whole event, so that one segment completes it
			n.op = "place s0 at 0 size " + g.buffer
		case 1:
			n.op = "place s0 at " + g.placeValue() + " size " + g.placeValue()
		default:
			n.op = "place s0 at " + g.placeValue()
		}
		n.ports = []string{"placed", "complete", "duplicate", "overlap", "late", "length_mismatch", "out_of_bounds", "zero_length", "too_large"}
	case 19:
		// Rare: the XDP and P4 backends refuse a cut.
		if g.chance(0.5) {
			n.op = "cut"
		} else {
			n.op = fmt.Sprintf("count %q", "c"+name)
		}
	default:
		n.op, n.ports = "parse ethernet", tf
	}
	return n
}

// placeValue is an offset or a size for place: small, so that segments
// of one event meet.
func (g *gen) placeValue() string {
	switch g.pick(3) {
	case 0:
		return fmt.Sprint(g.pick(8))
	case 1:
		return fmt.Sprintf("bit<%d>(%s)", 1+g.pick(4), g.fields[g.pick(len(g.fields))].ref())
	}
	return fmt.Sprintf("bit<%d>(udp.length - 8)", 3+g.pick(4))
}

// update is an optional `update H, …` over checksummed headers.
func (g *gen) update() string {
	if g.chance(0.5) {
		return ""
	}
	var hs []string
	for _, h := range g.csummed {
		if g.chance(0.5) {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return ""
	}
	return " update " + strings.Join(hs, ", ")
}

// assigns are one to three assignments.
func (g *gen) assigns() string {
	var as []string
	for i := 0; i < 1+g.pick(3); i++ {
		dst := g.writable()
		as = append(as, dst.ref()+" = "+g.expr(dst.width))
	}
	return strings.Join(as, "  ")
}

// expr is a value of at most width bits (a constant, a field, or a little
// arithmetic on a field).
func (g *gen) expr(width int) string {
	f := g.fields[g.pick(len(g.fields))]
	switch g.pick(7) {
	case 0:
		return g.value(width)
	case 1:
		if f.width <= width {
			return f.ref()
		}
		return fmt.Sprintf("bit<%d>(%s)", width, f.ref())
	case 2:
		return fmt.Sprintf("bit<%d>(%s + %s)", width, f.ref(), g.value(min(width, 8)))
	case 3:
		return fmt.Sprintf("bit<%d>(%s & %s)", width, f.ref(), g.value(width))
	case 4:
		return fmt.Sprintf("bit<%d>(%s - 1)", width, f.ref())
	case 5:
		return fmt.Sprintf("bit<%d>(len(%s))", width, g.header())
	}
	return fmt.Sprintf("bit<%d>(popcount(%s))", width, f.ref())
}

// cond is a random condition, nested at most depth deep; comparisons of a
// field are mostly guarded by its header's validity.
func (g *gen) cond(depth int) string {
	if depth > 0 && g.chance(0.3) {
		op := " && "
		if g.chance(0.5) {
			op = " || "
		}
		return "(" + g.cond(depth-1) + op + g.cond(depth-1) + ")"
	}
	if depth > 0 && g.chance(0.1) {
		return "!(" + g.cond(depth-1) + ")"
	}
	if g.chance(0.2) {
		return "valid(" + g.header() + ")"
	}
	if g.chance(0.1) { // a length, mostly guarded as fields are
		h := g.header()
		c := fmt.Sprintf("len(%s) %s %d", h, []string{"<", ">=", "=="}[g.pick(3)], g.pick(80))
		if g.chance(0.7) {
			return "(valid(" + h + ") && " + c + ")"
		}
		return c
	}
	f := g.fields[g.pick(len(g.fields))]
	if g.chance(0.05) {
		c := fmt.Sprintf("popcount(%s) > %d", f.ref(), g.pick(f.width+1))
		if f.header != "m" && g.chance(0.7) {
			return "(valid(" + f.header + ") && " + c + ")"
		}
		return c
	}
	var c string
	switch g.pick(4) {
	case 0:
		ops := []string{"==", "!=", "<", "<=", ">", ">="}
		c = fmt.Sprintf("%s %s %s", f.ref(), ops[g.pick(len(ops))], g.value(f.width))
	case 1:
		mh, ml := g.bits(f.width)
		hi, lo := g.bits(f.width)
		c = fmt.Sprintf("%s & %s == %s", f.ref(), hexBits(mh, ml), hexBits(hi&mh, lo&ml))
	case 2:
		hi, lo := g.bits(f.width)
		h2, l2 := g.bits(f.width)
		if h2 < hi || h2 == hi && l2 < lo {
			hi, lo, h2, l2 = h2, l2, hi, lo
		}
		c = fmt.Sprintf("%s in [%s, %s]", f.ref(), hexBits(hi, lo), hexBits(h2, l2))
	default:
		plen := g.pick(f.width + 1)
		hi, lo := g.bits(f.width)
		mh, ml := prefixMask(plen, f.width)
		c = fmt.Sprintf("%s in %s/%d", f.ref(), hexBits(hi&mh, lo&ml), plen)
	}
	if f.header != "m" && g.chance(0.7) {
		return "(valid(" + f.header + ") && " + c + ")"
	}
	return c
}
