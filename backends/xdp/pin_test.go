package xdp_test

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/sim"
)

// A directory not on a BPF filesystem is refused by name, and a program
// whose tables are laid out otherwise is told apart.
func TestPinRefusals(t *testing.T) {
	dir := t.TempDir()
	if _, err := xdp.OpenPinned(dir); err == nil || !strings.Contains(err.Error(), "not on a BPF filesystem") {
		t.Errorf("OpenPinned on a plain directory: %v", err)
	}
	meta := func(src string) *xdp.Meta {
		g, _ := testutil.ModelSource(t, src).Graph("Live")
		p, err := xdp.Generate(g, xdp.Options{Limits: testutil.XDPLimits(t, nil)})
		if err != nil {
			t.Fatal(err)
		}
		return p.Meta
	}
	a := meta(liveModel)
	if err := a.SameTables(meta(liveModel)); err != nil {
		t.Errorf("the same model: %v", err)
	}
	if err := a.SameTables(meta(strings.Replace(liveModel, "size 8", "size 16", 1))); err == nil || !strings.Contains(err.Error(), "t_slots") {
		t.Errorf("a bigger t_slots: %v", err)
	}
}

// TestPinReopen pins a loaded program, writes its tables through one
// Live, closes it and reopens the pins: frames through the reopened
// program leave as the interpreter's over those entries; a second Live
// changes the open-addressing table but refuses to take over the first
// one's groups.
func TestPinReopen(t *testing.T) {
	xdptest.Require(t)
	m := testutil.ModelSource(t, liveModel)
	g, _ := m.Graph("Live")
	obj, _ := xdptest.Build(t, g, nil, t.TempDir(), "live")
	r, err := xdp.Load(obj)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	empty, err := r.Tables("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTables(empty); err != nil {
		t.Fatal(err)
	}
	if err := r.Pin(filepath.Join(t.TempDir(), "p")); err == nil || !strings.Contains(err.Error(), "not on a BPF filesystem") {
		t.Errorf("Pin on a plain directory: %v", err)
	}
	dir := filepath.Join(xdptest.BPFFS(t), "p")
	if err := r.Pin(dir); err != nil {
		t.Fatal(err)
	}
	if err := r.Pin(dir); err == nil {
		t.Error("pinned twice in one directory")
	}
	const mac = 0x020000000001
	slot := func(v uint64) packet.Entry {
		return packet.Entry{Keys: []packet.KeyMatch{{Value: packet.V(mac)}}, Params: []packet.Value{packet.V(v)}}
	}
	group := []packet.Entry{{Keys: []packet.KeyMatch{{Value: packet.V(1)}, {Value: packet.V(0), PrefixLen: 0}}, Params: []packet.Value{packet.V(0x5678)}}}
	live := r.Live()
	if err := live.Put("t_slots", slot(0x1234)); err != nil {
		t.Fatal(err)
	}
	if err := live.SetGroup("t_ivl", []packet.Value{packet.V(1), {}}, group); err != nil {
		t.Fatal(err)
	}
	r.Close()

	p, err := xdp.OpenPinned(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := r.Meta.SameTables(p.Meta); err != nil {
		t.Errorf("the manifest: %v", err)
	}
	check := func(v uint64) {
		t.Helper()
		es := []packet.TableEntry{{Table: "t_slots", Entry: slot(v)}, {Table: "t_ivl", Entry: group[0]}}
		var script strings.Builder
		if err := packet.FormatEntries(&script, es, m.Schema.TableSpec); err != nil {
			t.Fatal(err)
		}
		ts, err := packet.LoadTables(m.Schema, "model", strings.NewReader(script.String()))
		if err != nil {
			t.Fatal(err)
		}
		mach, err := sim.New(g, ts)
		if err != nil {
			t.Fatal(err)
		}
		f := make([]byte, 64)
		binary.BigEndian.PutUint64(f, 0x0a0b0c0d0e0f<<16)
		binary.BigEndian.PutUint64(f[6:], mac<<16|0x88b1)
		want := xdptest.Interp(mach, p.Meta, f)
		res, err := p.Run(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", res.Data); xdp.VerdictName(res.Verdict) != want.Verdict || got != want.Data {
			t.Errorf("reopened, slot %#x: %s %s, interpreter %s %s", v, xdp.VerdictName(res.Verdict), got, want.Verdict, want.Data)
		}
		if !strings.Contains(want.Data, fmt.Sprintf("5678%04x", v)) {
			t.Errorf("the interpreter's frame %s does not carry both entries' values", want.Data)
		}
	}
	check(0x1234)
	again := p.Live()
	if err := again.Put("t_slots", slot(0x4321)); err != nil {
		t.Fatal(err)
	}
	check(0x4321)
	if err := again.Own("t_ivl"); err == nil || !strings.Contains(err.Error(), "another writer") {
		t.Errorf("a second Live took over the groups: %v", err)
	}
}
