// Package testutil holds helpers shared by nsc's tests: loading shipped
// models and building packets with gopacket.
package testutil

import (
	"bytes"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"testing"
	"testing/fstest"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// Model loads shipped model files (paths inside models/).
func Model(t testing.TB, files ...string) *lang.Model {
	t.Helper()
	ld := lang.Loader{ReadFile: func(name string) ([]byte, error) { return fs.ReadFile(models.FS, name) }, Library: models.FS}
	m, err := ld.Load(files...)
	if err != nil {
		t.Fatalf("load %v: %v", files, err)
	}
	return m
}

// ModelSource loads a model from its source text, with the shipped
// library behind its includes.
func ModelSource(t testing.TB, src string) *lang.Model {
	t.Helper()
	fsys := fstest.MapFS{"m.nsc": {Data: []byte(src)}}
	m, err := lang.Loader{ReadFile: func(n string) ([]byte, error) { return fs.ReadFile(fsys, n) }, Library: models.FS}.Load("m.nsc")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Embedding loads shipped model files and embeds LPG lpg in PRG prg; the
// embedded graph must be valid.
func Embedding(t testing.TB, lpg, prg string, files ...string) *embed.Embedding {
	t.Helper()
	m := Model(t, files...)
	l, ok := m.Graph(lpg)
	p, ok2 := m.Graph(prg)
	if !ok || !ok2 {
		t.Fatalf("no graph %s or %s in %v", lpg, prg, files)
	}
	em, err := embed.Embed(l, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Graph.Validate(); err != nil {
		t.Fatalf("embedded graph: %v", err)
	}
	return em
}

// Graph loads shipped model files and returns the named graph.
func Graph(t testing.TB, name string, files ...string) *dataflow.Graph {
	t.Helper()
	g, ok := Model(t, files...).Graph(name)
	if !ok {
		t.Fatalf("no graph %s in %v", name, files)
	}
	return g
}

// Serialize builds a frame from layers with lengths and checksums fixed.
func Serialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// Eth is an Ethernet header of the given type.
func Eth(typ layers.EthernetType) *layers.Ethernet {
	return &layers.Ethernet{
		SrcMAC:       []byte{2, 0, 0, 0, 0, 1},
		DstMAC:       []byte{2, 0, 0, 0, 0, 2},
		EthernetType: typ,
	}
}

// IPv4 is an IPv4 header from 192.0.2.1 to 192.0.2.2.
func IPv4(proto layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto,
		SrcIP: []byte{192, 0, 2, 1}, DstIP: []byte{192, 0, 2, 2}}
}

// IPv6 is an IPv6 header from 2001:db8::1 to 2001:db8::2.
func IPv6(next layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: next,
		SrcIP: []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
		DstIP: []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}}
}

// Interpreter runs graph g of model m with the entries of a table script
// file (none if script is ""); it also returns the script's text, for the
// implementation under test to load the same entries.
func Interpreter(t testing.TB, m *lang.Model, g *dataflow.Graph, script string) (*sim.Machine, []byte) {
	t.Helper()
	var raw []byte
	if script != "" {
		var err error
		if raw, err = os.ReadFile(script); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := table.Load(m.Schema, script, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	mach, err := sim.New(g, ts)
	if err != nil {
		t.Fatal(err)
	}
	return mach, raw
}

// payloads returns a maker of payloads of n random bytes drawn from rnd.
func payloads(rnd *rand.Rand) func(n int) gopacket.Payload {
	return func(n int) gopacket.Payload {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.UintN(256))
		}
		return b
	}
}

// XDPLimits are the limits the shipped XDP PRG (models/ejfat/xdp.nsc)
// declares, with over's in their place: what the XDP target takes from
// its PRG when a test compiles an LPG alone.
func XDPLimits(t testing.TB, over map[string]int) map[string]int {
	t.Helper()
	p, ok := Model(t, "ejfat/xdp.nsc").Graph("XDP")
	if !ok {
		t.Fatal("models/ejfat/xdp.nsc has no PRG XDP")
	}
	lim := maps.Clone(p.Limits)
	maps.Copy(lim, over)
	return lim
}
