package xdprun_test

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// A directory not on a BPF filesystem is refused by name, and a program
// whose tables are laid out otherwise is told apart.
func TestPinRefusals(t *testing.T) {
	dir := t.TempDir()
	if _, err := xdprun.OpenPinned(dir); err == nil || !strings.Contains(err.Error(), "not on a BPF filesystem") {
		t.Errorf("OpenPinned on a plain directory: %v", err)
	}
	meta := func(src string) *xdprun.Meta {
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
// takes over both tables: it reads back the first one's entries, and a
// new group it writes replaces the first one's atomically, in regions the
// first one's group does not hold. LockPinned lets one holder in at a
// time.
func TestPinReopen(t *testing.T) {
	m, g, r := loadedLive(t)
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

	p, err := xdprun.OpenPinned(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := r.Meta.SameTables(p.Meta); err != nil {
		t.Errorf("the manifest: %v", err)
	}
	check := func(v, gv uint64) {
		t.Helper()
		grp := group[0]
		grp.Params = []packet.Value{packet.V(gv)}
		es := []packet.TableEntry{{Table: "t_slots", Entry: slot(v)}, {Table: "t_ivl", Entry: grp}}
		var script strings.Builder
		if err := packet.FormatEntries(&script, es, m.Schema.TableSpec); err != nil {
			t.Fatal(err)
		}
		ts, err := table.Load(m.Schema, "model", strings.NewReader(script.String()))
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
		if got := fmt.Sprintf("%x", res.Data); xdprun.VerdictName(res.Verdict) != want.Verdict || got != want.Data {
			t.Errorf("reopened, slot %#x: %s %s, interpreter %s %s", v, xdprun.VerdictName(res.Verdict), got, want.Verdict, want.Data)
		}
		if !strings.Contains(want.Data, fmt.Sprintf("%04x%04x", gv, v)) {
			t.Errorf("the interpreter's frame %s does not carry both entries' values", want.Data)
		}
	}
	check(0x1234, 0x5678)
	again := p.Live()
	if err := again.Own("t_ivl"); err != nil {
		t.Fatalf("a second Live did not take over the groups: %v", err)
	}
	read := func(want uint64, wantGroup []packet.Entry) {
		t.Helper()
		got, err := again.Entries("t_slots")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint([]packet.Entry{slot(want)}) {
			t.Errorf("t_slots read back %v, wrote %v", got, slot(want))
		}
		gr, err := again.Group("t_ivl", []packet.Value{packet.V(1), {}})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(gr) != fmt.Sprint(wantGroup) {
			t.Errorf("t_ivl read back %v, wrote %v", gr, wantGroup)
		}
	}
	read(0x1234, group)
	if err := again.Put("t_slots", slot(0x4321)); err != nil {
		t.Fatal(err)
	}
	// The new group goes where the first one's is not: writing over it
	// would leave the entry's old value under the new segments.
	moved := []packet.Entry{group[0], group[0]} // the first wins its half (tied priorities: by order)
	moved[0].Keys = []packet.KeyMatch{{Value: packet.V(1)}, {Value: packet.V(1 << 47), PrefixLen: 1}}
	moved[1].Params = []packet.Value{packet.V(0x9abc)}
	if err := again.SetGroup("t_ivl", []packet.Value{packet.V(1), {}}, moved); err != nil {
		t.Fatal(err)
	}
	check(0x4321, 0x9abc)
	read(0x4321, moved)

	lock, err := xdprun.LockPinned(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := xdprun.LockPinned(dir); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("locked twice: %v", err)
	}
	lock.Close()
	lock, err = xdprun.LockPinned(dir)
	if err != nil {
		t.Errorf("not locked again after the holder let go: %v", err)
	} else {
		lock.Close()
	}
}
