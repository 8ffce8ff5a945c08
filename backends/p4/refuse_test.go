package p4_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// refusalModel is a small LPG over the shipped U280 and BMv2 PRGs; BODY is
// what the cases put between parsing and the exit.
const refusalModel = `
include "lib/inet.nsc"
include "ejfat/p4.nsc"
metadata m { mark: 8 }
action tag(v: 8) { m.mark = v }
action wide(a: 128, b: 128, c: 128, d: 128, e: 128, f: 128, g: 128, h: 128, i: 128) { }
TABLES
lpg L {
  node RxQueue { op input  port out -> Eth }
  node Eth { op extract ethernet  port true -> IPv4  port false -> Bad }
  node IPv4 { op extract ipv4  port true -> UDP  port false -> Bad }
  node UDP { op extract udp  port true -> Work  port false -> Bad }
  node Bad { op drop "parse" }
  BODY
  node TxQueue { op emit }
}`

// TestRefusals: what the target cannot hold or P4 cannot do is refused,
// with the node and the reason (and the limit, for a resource).
func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name, tables, body, prg, arch, want string
	}{
		{
			name:   "table size",
			tables: `table marks { key { ipv4.dst: exact } actions { tag } default tag(0) size 100000 }`,
			body:   `node Work { op lookup marks  port tag -> TxQueue }`,
			want:   "node Work: table marks has 100000 entries and U280 holds at most 65536 (limit table_size)",
		},
		{
			name: "key bits",
			tables: `table marks { key { ipv6.src: exact  ipv6.dst: exact  ipv6.src ^ ipv6.dst: exact  ipv6.src & ipv6.dst: exact  ipv4.dst: exact }
			          actions { tag } default tag(0) }`,
			body: `node Work { op lookup marks  port tag -> TxQueue }`,
			want: "node Work: table marks has a 544-bit key and U280 takes at most 512 bits (limit key_bits)",
		},
		{
			name:   "action bits",
			tables: `table marks { key { ipv4.dst: exact } actions { tag, wide } default tag(0) }`,
			body:   `node Work { op lookup marks  port tag -> TxQueue  port wide -> TxQueue }`,
			want:   "node Work: table marks's actions carry 1152 bits of parameters and U280 at most 1024 (limit action_bits)",
		},
		{
			name:   "a big table fits BMv2",
			tables: `table marks { key { ipv4.dst: exact } actions { tag } default tag(0) size 100000 }`,
			body:   `node Work { op lookup marks  port tag -> TxQueue }`,
			prg:    "BMv2",
		},
		{
			name: "checksum over the payload",
			body: `node Work { op checksum verify udp  port true -> TxQueue  port false -> Bad }`,
			want: "node Work: verifying the checksum of udp reads the payload it covers: no payload access",
		},
		{
			name: "checksum compute over the payload",
			body: `node Work { op checksum compute udp  port out -> TxQueue }`,
			want: "node Work: the checksum of udp covers bytes up to the end of the IP payload, and ipv4.total_len is not a constant here, so they may reach into the payload (no payload access)",
		},
		{
			name: "frame length",
			body: `node Work { op set { udp.length = len(udp) }  port out -> TxQueue }`,
			want: "node Work: len(udp) is the length of the frame from udp on: that needs payload access, which U280 does not have",
		},
		{
			name: "popcount",
			body: `node Work { op set { m.mark = popcount(ipv4.dst & ~(ipv4.dst + 1)) }  port out -> TxQueue }`,
			want: "node Work: popcount(ipv4.dst & ~(ipv4.dst + 1)): P4_16 has no operator that counts bits",
		},
		{
			name:   "extract after a table",
			tables: `table marks { key { ipv4.dst: exact } actions { tag } default tag(0) }`,
			body: `node Work { op lookup marks  port tag -> ICMP }
			       node ICMP { op extract icmp  port true -> TxQueue  port false -> Bad }`,
			want: "node ICMP: extract icmp after the parser: it follows Work, which the parser cannot run (lookup marks); a P4 program extracts headers only while parsing, before any table",
		},
		{
			name: "steer",
			body: `node Work { op test ipv4.ttl == 1  port true -> Host  port false -> TxQueue }
			       node Host { op steer queue 3 }`,
			want: "node Host: steer queue 3: a P4 pipeline has no queues or sockets to deliver to; emit the frame",
		},
		{
			name:   "range key on xsa",
			tables: `table marks { key { udp.dport: range } actions { tag } default tag(0) }`,
			body:   `node Work { op lookup marks  port tag -> TxQueue }`,
			want:   "node Work: table marks: key udp.dport is a range match, which this backend does not emit for VitisNet",
		},
		{
			name:   "range key on v1model",
			tables: `table marks { key { udp.dport: range } actions { tag } default tag(0) }`,
			body:   `node Work { op lookup marks  port tag -> TxQueue }`,
			arch:   p4.V1Model,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(strings.Replace(refusalModel, "TABLES", c.tables, 1), "BODY", c.body, 1)
			m := testutil.ModelSource(t, src)
			prg, arch := c.prg, c.arch
			if prg == "" {
				prg = "U280"
			}
			if arch == "" {
				arch = p4.XSA
			}
			_, _, _, err := buildModel(t, m, "L", prg, arch, "")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want == "":
			case err == nil:
				t.Fatalf("generated; want the refusal %q", c.want)
			case !errors.Is(err, p4.ErrUnsupported) || !strings.Contains(err.Error(), c.want):
				t.Errorf("error\n%v\nwant it to say\n%s", err, c.want)
			}
		})
	}
}

// What a P4 parser cannot do after a failure or a first parse: go on
// past a header whose fixed part it took (the control would see it taken
// from the frame), and parse the frame again from its start.
func TestParseFailureRefusals(t *testing.T) {
	for _, c := range []struct{ lpg, want string }{
		{`lpg L {
  node RxQueue { op input  port out -> Eth }
  node Eth { op extract ethernet  port true -> IPv4  port false -> Count }
  node IPv4 { op extract ipv4  port true -> TxQueue  port false -> Count }
  node Count { op count "short"  port out -> TxQueue }
  node TxQueue { op emit }
}`, `node IPv4: when extract ipv4 fails the frame goes on to Count (count short); a P4 parser that fails in ipv4's variable-length part has taken its fixed part, which the model's frame still has as payload`},
		{`lpg L {
  node RxQueue { op input  port out -> Eth }
  node Eth { op extract ethernet  port true -> Again  port false -> Runt }
  node Again { op parse ethernet  port true -> TxQueue  port false -> Runt }
  node Runt { op drop "runt" }
  node TxQueue { op emit }
}`, "node Again: parse ethernet parses the frame again from its start, after headers were extracted or the frame changed; a P4 parser reads the frame once"},
		// A failed extract going on to a test in the parser (it panicked:
		// fuzz seed 21 once the entry parse was no longer rewritten).
		{`lpg L {
  node RxQueue { op input  port out -> Eth }
  node Eth { op extract ethernet  port true -> IPv4  port false -> Runt }
  node IPv4 { op extract ipv4  port true -> TxQueue  port false -> IsV6 }
  node IsV6 { op test ethernet.type == 0x86dd  port true -> V6  port false -> Runt }
  node V6 { op extract ipv6  port true -> TxQueue  port false -> Runt }
  node Runt { op drop "runt" }
  node TxQueue { op emit }
}`, "node IPv4: when extract ipv4 fails the frame goes on to IsV6"},
	} {
		m := testutil.ModelSource(t, "include \"lib/inet.nsc\"\ninclude \"ejfat/p4.nsc\"\n"+c.lpg)
		_, _, _, err := buildModel(t, m, "L", "BMv2", p4.V1Model, "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v\nwant %s", err, c.want)
		}
	}
}

// Of two counts in the middle of the parser, the refusal names the first
// every time (it named either, as a map's order fell).
func TestMidParserCountRefusalStable(t *testing.T) {
	m := testutil.ModelSource(t, `include "lib/inet.nsc"
include "ejfat/p4.nsc"
lpg L {
  node RxQueue { op input  port out -> Eth }
  node Eth { op extract ethernet  port true -> C1  port false -> Runt }
  node C1 { op count "c1"  port out -> IPv4 }
  node IPv4 { op extract ipv4  port true -> C2  port false -> Runt }
  node C2 { op count "c2"  port out -> UDP }
  node UDP { op extract udp  port true -> TxQueue  port false -> Runt }
  node Runt { op drop "runt" }
  node TxQueue { op emit }
}`)
	for range 20 {
		_, _, _, err := buildModel(t, m, "L", "BMv2", p4.V1Model, "")
		if want := `node C1: count "c1" in the middle of the parser`; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v\nwant %s", err, want)
		}
	}
}
