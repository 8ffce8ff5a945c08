package p4_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/p4/p4sim"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// tagPreamble is what coverageModel and guardModel start with: the
// protocols and a header with a checksum over its own bytes.
const tagPreamble = `
include "lib/ethernet.nsc"
include "lib/ipv4.nsc"
include "lib/udp.nsc"
include "ejfat/p4.nsc"

header tag {
    kind:  8
    flags: 8
    sum:   16 @checksum(header)
    val:   32
}
`

// coverageModel exercises what the EJFAT models do not: a parser that
// hands over to two control nodes (the exit field), a header checksum
// verified and patched, an O-node, a read of a header that may be missing
// (the malformed drop), a push with fields set, a switch on a computed
// value, a key computed from fields, and a default action with arguments.
const coverageModel = tagPreamble + `
metadata m { mark: 8  seen: 1 }

action mark(v: 8) { m.mark = v }
action none() { }
table marks {
    key { ipv4.dst & 0xffffff00: exact  ipv4.proto: ternary }
    actions { mark, none }
    default mark(0x5a)
}

lpg L {
    node RxQueue { op input  port out -> Eth }
    node Eth { op extract ethernet  port true -> Type  port false -> Bad }
    node Type {
        op switch ethernet.type { 0x0800 -> ip, 0x88b5 -> tag, default -> other }
        port ip -> IPv4
        port tag -> Tag
        port other -> Bad
    }
    node Bad { op drop "parse" }
    node Tag { op extract tag  port true -> TagSum  port false -> Bad }
    node IPv4 { op extract ipv4  port true -> Proto  port false -> Bad }
    node Proto {
        op test ipv4.proto == 17
        port true -> UDP
        port false -> Marks
    }
    node UDP { op extract udp  port true -> Marks  port false -> Bad }

    node TagSum {
        op checksum verify tag
        port true -> Small
        port false -> BadSum
    }
    node BadSum { op drop "bad tag checksum" }
    node Small {
        op test tag.val < 1000
        port true -> Either
        port false -> Kind
    }
    node Kind {
        op test tag.kind != 0
        port true -> Either
        port false -> Either
    }
    // On one path Small true decides it; Kind false alone cannot (Small's
    // value went elsewhere): the embedder makes that port end unconnected.
    or Either {
        port true -> Bump
        port false -> TxQueue
    }
    node Bump {
        op set { tag.val = tag.val + 1  tag.flags = tag.flags | 0x80 } update tag
        port out -> TxQueue
    }

    node Marks {
        op lookup marks
        port mark -> Port
        port none -> Port
    }
    node Port {
        op test udp.dport == 53 || ipv4.ttl < 2
        port true -> Push
        port false -> Sel
    }
    node Sel {
        op switch (ipv4.ttl >> 4) + bit<4>(ipv4.id) {
            0 -> zero, 1 -> one, 2 -> one, default -> more
        }
        port zero -> TxQueue
        port one -> Seen
        port more -> Drop
    }
    node Drop { op drop "ttl class" }
    node Seen {
        op set { m.seen = 1  ipv4.ttl = ipv4.ttl - 1 } update ipv4
        port out -> TxQueue
    }
    node Push {
        op push vlan after ethernet
        port out -> VlanSet
    }
    node VlanSet {
        op set { vlan.vid = bit<12>(m.mark)  vlan.type = ethernet.type  ethernet.type = 0x8100 }
        port out -> TxQueue
    }
    node TxQueue { op emit }
}`

const coverageScript = `
table_add marks mark 0x0a000100 0x11&&&0xff => 7 1
table_add marks none 0x0a000200 0x00&&&0x00 => 2
`

// TestCoverageAgainstInterpreter runs random frames built around the
// model's headers through the generated programs and the interpreter.
func TestCoverageAgainstInterpreter(t *testing.T) {
	m := testutil.ModelSource(t, coverageModel)
	frames := coverageFrames(3000)
	for _, arch := range []string{p4.XSA, p4.V1Model} {
		prog, _, run, mach := modelMachines(t, m, "L", arch, coverageScript)
		for _, want := range []string{"nsc_parser_exit", "// malformed", "hdr.vlan.setValid();", "csum_add("} {
			if !strings.Contains(string(prog.Source), want) {
				t.Errorf("%s: the program lacks %q, which this test means to exercise", arch, want)
			}
		}
		_, ends := compareP4(t, arch, run, mach, frames, true)
		for _, end := range []string{"sent", "parse", "bad tag checksum", "ttl class", "malformed", "unconnected"} {
			if ends[end] < 10 {
				t.Errorf("%s: only %d frames end %q: %v", arch, ends[end], end, ends)
			}
		}
	}
}

// modelMachines generates graph lpg of model m on the BMv2 PRG for arch,
// and loads the program (also returned parsed) into the P4 interpreter and
// the graph into nsc's, both with the entries of script.
func modelMachines(t *testing.T, m *lang.Model, lpg, arch, script string) (*p4.Program, *p4sim.Program, *p4sim.Machine, *sim.Machine) {
	t.Helper()
	prog, _, g, err := buildModel(t, m, lpg, "BMv2", arch, "")
	if err != nil {
		t.Fatal(err)
	}
	es, err := packet.ParseEntries("script", strings.NewReader(script), m.Schema.TableSpec)
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	if err := prog.Tables.Entries(&lines, es); err != nil {
		t.Fatal(err)
	}
	parsed, err := p4sim.Parse(string(prog.Source))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := table.Load(m.Schema, "script", strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	mach, err := sim.New(g, ts)
	if err != nil {
		t.Fatal(err)
	}
	return prog, parsed, p4sim.New(parsed, arch, loadP4Tables(t, prog, lines.Bytes())), mach
}

// compareP4 runs frames through the P4 program and nsc's interpreter and
// returns how many differ (the same bytes must leave, or both drop; a P4
// program that stops, on a field of an invalid header, differs) and how
// many frames the interpreter ended where (drop reasons, "sent"). It
// reports the first few differences on t, with what in front, if report.
func compareP4(t *testing.T, what string, run *p4sim.Machine, mach *sim.Machine, frames [][]byte, report bool) (bad int, ends map[string]int) {
	t.Helper()
	ends = map[string]int{}
	for i, f := range frames {
		var want []byte
		left := false
		mach.Run(f, func(_ *dataflow.Node, data []byte) { want, left = append([]byte(nil), data...), true })
		k, dropped := mach.LastDrop()
		if dropped && !left {
			ends[k.Reason]++
		} else {
			ends["sent"]++
		}
		got, err := run.Run(f)
		if err == nil && left == (got != nil) && bytes.Equal(want, got) {
			continue
		}
		if bad++; report && bad <= 5 {
			t.Errorf("%s: frame %d %x:\ninterpreter: left=%v %x (drop %v)\nP4:          left=%v %x (error %v)", what, i, f, left, want, k, got != nil, got, err)
		}
	}
	if report && bad > 0 {
		t.Errorf("%s: %d of %d frames differ", what, bad, len(frames))
	}
	return bad, ends
}

// TestCsumAgainstInterpreter: checksum patches in their one's-complement
// corners (backends/flow/testdata/ops.nsc's CsumRx) against the
// interpreter.
func TestCsumAgainstInterpreter(t *testing.T) {
	src, err := os.ReadFile("../flow/testdata/ops.nsc")
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.ModelSource(t, "include \"ejfat/p4.nsc\"\n"+string(src))
	frames := testutil.CsumCorpus(t)
	for _, arch := range []string{p4.XSA, p4.V1Model} {
		_, _, run, mach := modelMachines(t, m, "CsumRx", arch, "")
		if _, ends := compareP4(t, arch, run, mach, frames, true); ends["sent"] != len(frames) {
			t.Errorf("%s: not every frame was sent: %v", arch, ends)
		}
		for _, n := range []string{"V4", "V6"} {
			if mach.Counters().Nodes[n] == 0 {
				t.Errorf("%s: no frame ran through %s", arch, n)
			}
		}
	}
}

// coverageFrames builds frames for coverageModel: tagged frames with good
// and bad checksums, IPv4 with and without UDP, short ones.
func coverageFrames(n int) [][]byte {
	rnd := rand.New(rand.NewPCG(3, 4))
	var out [][]byte
	for len(out) < n {
		eth := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
		var f []byte
		switch rnd.IntN(3) {
		case 0: // tag
			b := []byte{byte(rnd.IntN(3)), byte(rnd.UintN(256)), 0, 0, 0, 0, byte(rnd.IntN(8)), byte(rnd.UintN(256))}
			c := packet.Fold(packet.Sum(b, 0))
			if rnd.IntN(4) > 0 {
				b[2], b[3] = byte(c>>8), byte(c)
			}
			f = append(append(eth, 0x88, 0xb5), b...)
		default: // IPv4, maybe UDP
			ip := []byte{0x45, 0, 0, 28, byte(rnd.UintN(256)), byte(rnd.UintN(256)), 0, 0, byte(rnd.IntN(40)), 17, 0, 0, 10, 0, 1, 2, 10, 0, byte(1 + rnd.IntN(2)), 9}
			if rnd.IntN(3) == 0 {
				ip[9] = 6
			}
			if rnd.IntN(2) == 0 {
				ip[8] = byte(rnd.UintN(256))
			}
			c := packet.IPv4HeaderChecksum(ip)
			ip[10], ip[11] = byte(c>>8), byte(c)
			udp := []byte{0x13, 0x88, 0, byte(rnd.IntN(2)) * 53, 0, 8, 0, 0}
			f = append(append(append(eth, 0x08, 0x00), ip...), udp...)
		}
		switch rnd.IntN(6) {
		case 0:
			f = f[:rnd.IntN(len(f)+1)]
		case 1:
			f[rnd.IntN(len(f))] ^= byte(1 + rnd.IntN(255))
		}
		out = append(out, append(f, []byte("payload")...))
	}
	return out
}
