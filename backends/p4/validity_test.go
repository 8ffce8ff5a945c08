package p4_test

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/p4/p4sim"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// The check itself, on a program of its own: a header extracted on one of
// two ways into a parser state, a field read after an if that may set the
// header invalid, and after an early return on !isValid() (p4c takes that
// return's side into the meet as well) are reported; reads inside an if
// testing the header valid, and before any setInvalid, are not.
func TestInvalidHeaderCheck(t *testing.T) {
	const src = `
header h_t { bit<8> f; }
struct headers_t { h_t a; h_t b; }
struct meta_t { bit<8> x; }
parser ParserImpl(packet_in packet, out headers_t hdr, inout meta_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.a);
        transition select(hdr.a.f) {
            1: withB;
            default: join;
        }
    }
    state withB {
        packet.extract(hdr.b);
        transition join;
    }
    state join {
        transition select(hdr.b.f) {
            0: accept;
            default: accept;
        }
    }
}
control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t standard_metadata) {
    apply {
        meta.x = hdr.a.f;
        if (hdr.b.f == 1) {
            hdr.a.setInvalid();
        }
        meta.x = hdr.b.f;
        if (hdr.a.isValid()) {
            meta.x = hdr.a.f;
        } else {
            meta.x = hdr.a.f + 1;
        }
        if (!hdr.a.isValid()) {
            return;
        }
        hdr.a.f = 2;
    }
}
`
	parsed, err := p4sim.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"hdr.b.f: a field of a potentially invalid header hdr.b",
		"hdr.a.f: a field of a potentially invalid header hdr.a",
	}
	if diff := cmp.Diff(want, p4sim.InvalidHeaderAccesses(parsed)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// No golden program touches a field of a header p4c cannot prove valid
// there (lb-2026's reads of nd_ns after the punt path's pops were three
// p4test warnings).
func TestNoInvalidHeaderAccess(t *testing.T) {
	for _, gc := range golden {
		t.Run(name(gc.version, gc.arch), func(t *testing.T) {
			prog, _, _, err := build(t, "ejfat/"+gc.version+".nsc", gc.lpg, gc.prg, gc.arch)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := p4sim.Parse(string(prog.Source))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range p4sim.InvalidHeaderAccesses(parsed) {
				t.Error(f)
			}
		})
	}
}

// guardModel pops ethernet on one path and udp on another, then, on the
// ways that meet after them, reads ethernet (there, as the analysis
// knows) and udp (maybe missing: a malformed drop), patches udp's checksum
// and verifies tag's where they may be missing.
const guardModel = tagPreamble + `
lpg L {
    node RxQueue { op input  port out -> Eth }
    node Eth { op extract ethernet  port true -> Type  port false -> Bad }
    node Type { op test ethernet.type == 0x88b5  port true -> Tag  port false -> IPv4 }
    node Tag { op extract tag  port true -> TagSum  port false -> Bad }
    node IPv4 { op extract ipv4  port true -> Proto  port false -> Bad }
    node Bad { op drop "parse" }
    node Proto { op test ipv4.proto == 17  port true -> UDP  port false -> Strip }
    node UDP { op extract udp  port true -> Ttl  port false -> Bad }
    node Strip { op test ipv4.ttl == 0  port true -> PopEth  port false -> Ttl }
    node PopEth { op pop ethernet  port out -> TxQueue }
    node Ttl { op test ipv4.ttl < 8  port true -> HasUdp  port false -> Dst }
    node HasUdp { op test valid(udp)  port true -> PopUdp  port false -> TagSum }
    node PopUdp { op pop udp  port out -> Dst }
    node TagSum { op checksum verify tag  port true -> TxQueue  port false -> BadSum }
    node BadSum { op drop "bad sum" }
    node Dst { op set { ipv4.dst = ipv4.src } update ipv4, udp  port out -> Port }
    node Port { op test udp.dport == 53 || ethernet.type == 0x88b5  port true -> TxQueue  port false -> Drop }
    node Drop { op drop "port" }
    node TxQueue { op emit }
}`

// TestCompilerGuards: on guardModel the generated code tests, for p4c,
// ethernet and udp before Port (its else the malformed drop), and udp and
// tag before summing their bytes; nothing p4c would warn about is left,
// and the frames go as in the interpreter (the P4 interpreter stops on any
// field of an invalid header).
func TestCompilerGuards(t *testing.T) {
	m := testutil.ModelSource(t, guardModel)
	frames := coverageFrames(3000)
	for _, arch := range []string{p4.XSA, p4.V1Model} {
		prog, parsed, run, mach := modelMachines(t, m, "L", arch, "")
		for _, want := range []string{
			`if \(hdr\.udp\.isValid\(\) && hdr\.ethernet\.isValid\(\)\) \{`,
			`bit<16> sum_udp = 0;\s+if \(hdr\.udp\.isValid\(\)\) \{`,
			`bit<16> sum_TagSum = 0;\s+if \(hdr\.tag\.isValid\(\)\) \{`,
		} {
			if !regexp.MustCompile(want).Match(prog.Source) {
				t.Errorf("%s: the program lacks %s, which this test means to exercise", arch, want)
			}
		}
		for _, f := range p4sim.InvalidHeaderAccesses(parsed) {
			t.Errorf("%s: %s", arch, f)
		}
		_, ends := compareP4(t, arch, run, mach, frames, true)
		for _, end := range []string{"sent", "parse", "port", "malformed", "bad sum"} {
			if ends[end] < 10 {
				t.Errorf("%s: only %d frames end %q: %v", arch, ends[end], end, ends)
			}
		}
		if n := mach.Counters().Nodes["PopEth"]; n < 10 {
			t.Errorf("%s: only %d frames pop ethernet", arch, n)
		}
	}
}
