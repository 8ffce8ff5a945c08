package lang_test

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
	"github.com/dragonet-go/nsc/packet"
)

// Names inside clusters get their clusters' names in front; a reference
// resolves in the innermost cluster first and by its bare name last.
func TestClusterPrefixing(t *testing.T) {
	m, err := load(map[string]string{"main.nsc": `
lpg G {
  node Out { op emit }
  cluster Rx {
    node Queue { op input  port out -> Check, InCheck }
    cluster In {
      node Check { op nop  port out -> Queue2 }
      node Queue2 { op nop  port out -> Done }
    }
    node Done { op nop  port out -> Out }
    node Check { op emit }
  }
}`})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.Graph("G")
	var names []string
	for _, n := range g.Nodes {
		names = append(names, n.Name)
	}
	if diff := cmp.Diff([]string{"Out", "RxQueue", "RxInCheck", "RxInQueue2", "RxDone", "RxCheck"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	edges := map[string][]string{}
	for _, n := range g.Nodes {
		for _, p := range n.Ports {
			for _, e := range p.Out {
				edges[n.Name] = append(edges[n.Name], e.To.Name)
			}
		}
	}
	want := map[string][]string{"RxQueue": {"RxCheck", "RxInCheck"}, "RxInCheck": {"RxInQueue2"}, "RxInQueue2": {"RxDone"}, "RxDone": {"Out"}}
	if diff := cmp.Diff(want, edges); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
}

// The one-line layout of seed 000, variable-length fields, checksum
// attributes and C-nodes come through with their details.
func TestDeclarationsKept(t *testing.T) {
	m, err := load(map[string]string{"main.nsc": `
include "lib/inet.nsc"
header re 'Version:4, Rsvd:12, Data-ID:16, Offset:32, Length:32, Tick:64'
prg P {
  node Q [source, software] { op input  port out -> Filter }
  config Filter: list<filter5, 128> = [[udp, any, 10.0.0.1, any, 19000, 7, q1]] [hardware] { port miss -> Sink  port q1 -> Q1 }
  config Mode: enum<2> [hardware] { port a -> Sink  port b -> Sink }
  node Sink [sink] { op emit }
  node Q1 [sink] { op emit }
}`})
	if err != nil {
		t.Fatal(err)
	}
	re, _ := m.Schema.Header("re")
	var fields []packet.FieldSpec
	fields = append(fields, re.Fields...)
	want := []packet.FieldSpec{{Name: "Version", Width: 4}, {Name: "Rsvd", Offset: 4, Width: 12}, {Name: "Data_ID", Offset: 16, Width: 16},
		{Name: "Offset", Offset: 32, Width: 32}, {Name: "Length", Offset: 64, Width: 32}, {Name: "Tick", Offset: 96, Width: 64}}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("re fields (-want +got):\n%s", diff)
	}
	ip, _ := m.Schema.Header("ipv4")
	last := ip.Fields[len(ip.Fields)-1]
	if last.Name != "options" || !last.Variable() || last.Length.Text != "(ihl - 5) * 4" || ip.FixedBytes() != 20 {
		t.Errorf("ipv4 options: %+v, fixed %d", last, ip.FixedBytes())
	}
	if ip.ChecksumKind != packet.ChecksumHeader || ip.Fields[ip.Checksum].Name != "checksum" {
		t.Errorf("ipv4 checksum: %+v", ip)
	}
	udp, _ := m.Schema.Header("udp")
	if udp.ChecksumKind != packet.ChecksumL4 || !udp.ChecksumOptional {
		t.Errorf("udp checksum: %+v", udp)
	}
	g, _ := m.Graph("P")
	// The declared graph keeps the C-node and its value; the model's
	// graph runs it as a nop and one test per filter (package prg); a
	// C-node without a value stays a C-node.
	c := g.Declared.Node("Filter")
	if c.Kind != dataflow.CNode || !c.Hardware || c.Config.Type != "list<filter5,128>" || c.Config.Value != "[[udp, any, 10.0.0.1, any, 19000, 7, q1]]" || c.Config.Lit.List[0].List[2].Pos != "main.nsc:6:51" {
		t.Errorf("config node: %+v %+v", c, c.Config)
	}
	if f, t0 := g.Node("Filter"), g.Node("Filter_0"); f.Kind != dataflow.FNode || f.Op.Kind != packet.OpNop || !f.Hardware ||
		t0.Op.Cond.Text != "valid(ipv4) && ipv4.version == 4 && ipv4.proto == 17 && ipv4.dst == 10.0.0.1 && valid(udp) && udp.dport == 19000" {
		t.Errorf("configured filter: %+v, %+v", f, t0)
	}
	if m := g.Node("Mode"); m.Kind != dataflow.CNode || m.Config.Lit != nil {
		t.Errorf("unconfigured C-node: %+v", m)
	}
	if q := g.Node("Q"); !q.Source || !q.Software {
		t.Errorf("attributes of Q: %+v", q)
	}
}

// Variable-length options follow IHL: a frame with IHL 6 has a 24-byte
// IPv4 header; IHL 4 is malformed.
func TestIPv4Options(t *testing.T) {
	m, err := load(map[string]string{"main.nsc": `include "lib/inet.nsc"`})
	if err != nil {
		t.Fatal(err)
	}
	ip, _ := m.Schema.Header("ipv4")
	p := packet.NewPacket(m.Schema)
	for ihl, want := range map[byte]int{4: -1, 5: 20, 6: 24, 15: 60} {
		frame := make([]byte, 64)
		frame[0] = 0x40 | ihl
		p.Reset(frame)
		ok := p.Extract(ip.ID)
		got := -1
		if ok {
			got = p.Hdr[ip.ID].Len
		}
		if got != want {
			t.Errorf("IHL %d: header length %d, want %d", ihl, got, want)
		}
	}
}

// A library file reached by two paths — beside a model on disk
// (../lib/inet.nsc from models/inet) and in the shipped library
// (lib/inet.nsc from models/ejfat) — is read once, not declared twice.
func TestSameIncludeTwoPaths(t *testing.T) {
	ld := lang.Loader{ReadFile: os.ReadFile, Library: models.FS}
	m, err := ld.Load("../models/ejfat/reassembler.nsc", "../models/inet/i82599.nsc")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"Reassembler", "I82599"} {
		if _, ok := m.Graph(g); !ok {
			t.Errorf("no graph %s", g)
		}
	}
}

// Libraries combine: the EJFAT hosts' PRGs with the Internet library (one
// udp, RFC 768's rule), the load balancers' udp-raw (the same udp, no
// zero rule), an LB model from disk with the same library files reached
// through the shipped library, and a header declared again the same way.
func TestLibrariesCombine(t *testing.T) {
	ld := lang.Loader{ReadFile: os.ReadFile, Library: models.FS}
	for _, c := range []struct {
		files    []string
		optional bool
	}{
		{[]string{"../models/lib/inet.nsc", "../models/ejfat/hosts.nsc"}, true},
		{[]string{"../models/ejfat/hosts.nsc", "../models/lib/inet.nsc"}, true},
		{[]string{"../models/ejfat/hosts.nsc"}, true},
		{[]string{"../models/ejfat/udp-raw.nsc"}, false},
		{[]string{"../models/inet/udp.nsc", "../models/ejfat/lb-2025.nsc"}, false},
		{[]string{"../models/ejfat/lb-2026.nsc", "../models/inet/i82599.nsc"}, false},
	} {
		m, err := ld.Load(c.files...)
		if err != nil {
			t.Errorf("%v: %v", c.files, err)
			continue
		}
		n := 0
		for _, h := range m.Schema.Headers {
			if h.Name == "udp" {
				n++
				if h.ChecksumOptional != c.optional {
					t.Errorf("%v: udp's checksum optional %v, want %v", c.files, h.ChecksumOptional, c.optional)
				}
			}
		}
		if n != 1 {
			t.Errorf("%v: %d udp headers", c.files, n)
		}
	}

	m, err := load(map[string]string{"main.nsc": `include "lib/ethernet.nsc"
header mine { a: 8 }
header ethernet {
    dst:  48
    src:  48
    type: 16
}`})
	if err != nil {
		t.Fatal(err)
	}
	if eth, _ := m.Schema.Header("ethernet"); eth.ID != 0 || len(m.Schema.Headers) != 3 {
		t.Errorf("ethernet declared again: ID %d, %d headers (want 0 and ethernet, vlan, mine)", eth.ID, len(m.Schema.Headers))
	}
}
