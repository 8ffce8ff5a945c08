package p4_test

import (
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/p4/p4sim"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// parseModel parses with the model's parse graph (lib/inet.nsc's and its
// own: a tag after UDP port 4660, then by the tag's kind an inner header,
// or by default UDP again, which stops the parse, as a header parsed
// already does; after inner, tag again: stopped too), at input and in
// the middle of the graph, and fails extracts into different places.
const parseModel = `
include "lib/inet.nsc"
include "ejfat/p4.nsc"

header tag { kind: 8  val: 8 }
header inner { x: 16 }
next udp.dport { 4660 -> tag }
next tag.kind { 1 -> inner, 2 -> inner, default -> udp }
next inner.x { default -> tag }

// input parse: the whole parse graph in the parser.
lpg In {
    node RxQueue { op input parse ethernet  port out -> IsTag }
    node IsTag { op test valid(tag)  port true -> Bump  port false -> IsUDP }
    node Bump { op set { tag.val = tag.val + 1 }  port out -> TxQueue }
    node IsUDP { op test valid(udp) || valid(arp)  port true -> TxQueue  port false -> Other }
    node Other { op drop "other" }
    node TxQueue { op emit }
}

// parse after a count: its failure is a drop of the model's.
lpg Mid {
    node RxQueue { op input  port out -> In }
    node In { op count "in"  port out -> Parse }
    node Parse { op parse ethernet  port true -> IsInner  port false -> Short }
    node Short { op drop "short" }
    node IsInner { op test valid(inner) && inner.x == 7  port true -> Other  port false -> TxQueue }
    node Other { op drop "seven" }
    node TxQueue { op emit }
}

// Failed extracts go to three places: two drops and, for UDP, on to a
// count and out, unchanged.
lpg Fail {
    node RxQueue { op input  port out -> Eth }
    node Eth { op extract ethernet  port true -> IPv4  port false -> Runt }
    node IPv4 { op extract ipv4  port true -> UDP  port false -> Short }
    node UDP { op extract udp  port true -> TxQueue  port false -> NoUDP }
    node NoUDP { op count "no udp"  port out -> TxQueue }
    node Runt { op drop "runt" }
    node Short { op drop "short" }
    node TxQueue { op emit }
}
`

// parseSeeds are frames for parseModel: tagged with each kind, IPv4 with
// options, IPv6, VLAN, ARP, other EtherTypes.
func parseSeeds() [][]byte {
	eth := func(typ ...byte) []byte {
		return append([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, typ...)
	}
	ipv4 := func(ihl byte, rest ...byte) []byte {
		ip := []byte{0x40 | ihl, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
		for range int(ihl) - 5 {
			ip = append(ip, 1, 1, 1, 1)
		}
		return append(ip, rest...)
	}
	udp := func(dport uint16, rest ...byte) []byte {
		return append([]byte{0x13, 0x88, byte(dport >> 8), byte(dport), 0, 8, 0, 0}, rest...)
	}
	ipv6 := append([]byte{0x60, 0, 0, 0, 0, 8, 17, 64}, make([]byte, 32)...)
	var out [][]byte
	for _, tail := range [][]byte{
		udp(4660, 1, 5, 0, 7, 0xaa),       // tag, inner 7, tag again: stop
		udp(4660, 2, 5, 0, 8),             // tag, inner 8
		udp(4660, 3, 5, 0x13, 0x88, 0, 1), // tag, then udp again: stop
		udp(4660, 1),                      // inner does not fit
		udp(53, 1, 2, 3),
	} {
		out = append(out, append(eth(8, 0), ipv4(5, tail...)...), append(eth(8, 0), ipv4(6, tail...)...),
			append(append(eth(0x86, 0xdd), ipv6...), tail...), append(eth(0x81, 0, 0, 1, 8, 0), ipv4(5, tail...)...))
	}
	return append(out, eth(8, 6, 0, 1, 8, 0, 6, 4, 0, 1), eth(0x88, 0xb5, 1, 2), eth(8, 0, 0x43, 1), eth(8, 0, 0x4f, 1, 2))
}

// TestParseGraphAgainstInterpreter: the parse graph written out as the
// P4 parser, and parse failures with different outcomes, against the
// interpreter on the seeds and 5,000 frames derived from them (cut,
// changed, extended), with the counters.
func TestParseGraphAgainstInterpreter(t *testing.T) {
	m := testutil.ModelSource(t, parseModel)
	seeds := parseSeeds()
	frames := append(seeds, difftest.Mutate(seeds, 5000, 23)...)
	for _, c := range []struct {
		lpg  string
		want []string // in the program
		ends []string // frames end so
	}{
		{"In", []string{"transition select(hdr.tag.kind) {", "8w1: RxQueue_inner;", "default: accept;", "// RxQueue_malformed: drop malformed"}, []string{"sent", "other", "malformed"}},
		{"Mid", []string{"packet.extract(hdr.inner); // Parse_inner"}, []string{"sent", "short", "seven"}},
		{"Fail", []string{"nsc_parser_exit = 2; // if it does not fit: NoUDP"}, []string{"sent", "runt", "short"}},
	} {
		for _, arch := range []string{p4.XSA, p4.V1Model} {
			prog, _, run, mach := modelMachines(t, m, c.lpg, arch, "")
			for _, want := range c.want {
				if !strings.Contains(string(prog.Source), want) {
					t.Errorf("%s %s: the program lacks %q", c.lpg, arch, want)
				}
			}
			_, ends := compareP4(t, c.lpg+" "+arch, run, mach, frames, true)
			for _, end := range c.ends {
				if ends[end] < 20 {
					t.Errorf("%s %s: only %d frames end %q: %v", c.lpg, arch, ends[end], end, ends)
				}
			}
			if arch == p4.V1Model {
				if diff := p4sim.CounterDiff(mach, prog.Source, run); diff != "" {
					t.Errorf("%s: counters differ (-interpreter +P4):\n%s", c.lpg, diff)
				}
			}
		}
	}
}

// lb-2021's parse failures are exercised by its corpus: its program with
// the failures of ipv4's options, or of UDP, taken to the parse failure
// (a runt drop) instead of where the model goes on differs from the
// interpreter.
func TestLB2021FailuresExercised(t *testing.T) {
	seeds, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	frames := append(seeds, difftest.Mutate(seeds, 2000, 5)...)
	prog, load, interp := lbSetup(t, "lb-2021", "LB2021", "BMv2", p4.V1Model, "seed000.tables")
	for _, mut := range []string{
		"meta.nsc_parser_exit = 2; // if the rest does not fit: RxIPv4BaseDst, read as ipv4_base",
		"meta.nsc_parser_exit = 0; // if it does not fit: RxDstFilter\n        packet.extract(hdr.udp);",
	} {
		bad := strings.Replace(mut, "= 2;", "= 255;", 1)
		bad = strings.Replace(bad, "= 0;", "= 255;", 1)
		src := strings.Replace(string(prog.Source), mut, bad, 1)
		if src == string(prog.Source) {
			t.Fatalf("%q is not in the program", mut)
		}
		if n, _ := compareP4(t, "", load(src), interp(), frames, false); n == 0 {
			t.Errorf("with %q taken to the parse failure no frame differs", mut)
		}
	}
}
