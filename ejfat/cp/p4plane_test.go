package cp_test

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/ejfat/cp/pb"
	"github.com/dragonet-go/nsc/packet"
)

// lastState records the state each Apply moves to, then applies.
type lastState struct {
	cp.DataPlane
	state []packet.TableEntry
}

func (l *lastState) Apply(i int, state []packet.TableEntry, d calendar.Diff) error {
	l.state = state
	return l.DataPlane.Apply(i, state, d)
}

// bmv2 replays simple_switch_CLI table commands as BMv2 (bm_sim's
// MatchUnit and HandleMgr) handles them: table_add takes the lowest free
// index, its handle carrying the index's version above bit 24; modify and
// delete need a live handle of the current version; a delete bumps the
// version.
type bmv2 struct {
	entries  map[string]map[uint32]string // table → handle → "keys => params [prio]"
	versions map[string]map[uint32]uint32 // table → index → version

	modified, deleted int
}

func (b *bmv2) run(t *testing.T, script []byte) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(script))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		table := f[1]
		if b.entries[table] == nil {
			b.entries[table], b.versions[table] = map[uint32]string{}, map[uint32]uint32{}
		}
		es, vs := b.entries[table], b.versions[table]
		live := func(arg string) uint32 {
			h, err := strconv.ParseUint(arg, 10, 32)
			if _, ok := es[uint32(h)]; err != nil || !ok || uint32(h)>>24 != vs[uint32(h)&0xffffff] {
				t.Fatalf("line %d: %q: no live handle %s", n, sc.Text(), arg)
			}
			return uint32(h)
		}
		switch f[0] {
		case "table_add":
			i := uint32(0)
			for ; ; i++ {
				if _, used := es[vs[i]<<24|i]; !used {
					break
				}
			}
			es[vs[i]<<24|i] = strings.Join(f[2:], " ")
		case "table_modify":
			h := live(f[3])
			old := strings.Fields(es[h])
			arrow := slices.Index(old, "=>")
			params := f[5:]
			es[h] = strings.Join(append(append([]string{f[2]}, old[1:arrow+1]...), append(params, old[arrow+1+len(params):]...)...), " ")
			b.modified++
		case "table_delete":
			h := live(f[2])
			delete(es, h)
			vs[h&0xffffff]++
			b.deleted++
		default:
			t.Fatalf("line %d: unknown command %q", n, f[0])
		}
	}
}

// lines are the table's entries as "table action keys => params [prio]".
func (b *bmv2) lines() []string {
	var out []string
	for table, es := range b.entries {
		for _, e := range es {
			out = append(out, table+" "+e)
		}
	}
	slices.Sort(out)
	return out
}

// TestP4ScriptReplays drives the P4 data plane through epochs that reuse
// epoch ids (modifies), a session leaving (deletes) and a new one: the
// scripts, replayed with BMv2's handle rules, end in exactly the table
// entries of the CP's last state.
func TestP4ScriptReplays(t *testing.T) {
	m, em, err := ejfat.Embedding("lb-2025", "BMv2")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := p4.Generate(em.Graph, p4.Options{Arch: p4.V1Model, Name: "lb2025", PRG: em.PRG.Name, Limits: em.PRG.Limits})
	if err != nil {
		t.Fatal(err)
	}
	var script bytes.Buffer
	rec := &lastState{DataPlane: &cp.P4Script{Tables: prog.Tables, Out: &script}}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	cfg := cpConfig()
	cfg.Now, cfg.EpochInterval, cfg.Programming = clk.Now, time.Hour, cp.Programming{DataPlane: rec, Tables: m.Schema.TableSpec}
	c := startCP(t, cfg)
	lc := client(t, c)
	res, err := lc.ReserveLoadBalancer(as(c.admin), &pb.ReserveLoadBalancerRequest{Name: "p4",
		SenderAddresses: []string{"10.0.0.9", "fd00::9"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := as(res.Token)
	register := func(i int) string {
		reg, err := lc.Register(ctx, &pb.RegisterRequest{LbId: res.LbId, Name: fmt.Sprint("r", i), Weight: float32(i + 1),
			IpAddress: fmt.Sprintf("10.0.0.%d", i+1), UdpPort: 20000, PortRange: pb.PortRange_PORT_RANGE_4})
		if err != nil {
			t.Fatal(err)
		}
		return reg.SessionId
	}
	ids := []string{register(0), register(1), register(2)}
	bm := &bmv2{entries: map[string]map[uint32]string{}, versions: map[string]map[uint32]uint32{}}
	for epoch := range 9 {
		if epoch == 5 {
			if _, err := lc.Deregister(ctx, &pb.DeregisterRequest{LbId: res.LbId, SessionId: ids[1]}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids[:1], ids[2], register(3))
		}
		for i, id := range ids {
			if _, err := lc.SendState(ctx, &pb.SendStateRequest{LbId: res.LbId, SessionId: id, IsReady: true,
				ControlSignal: float32(100 * ((epoch + i) % 3))}); err != nil {
				t.Fatal(err)
			}
		}
		clk.Add(time.Second)
		c.Tick()
		bm.run(t, script.Bytes())
		script.Reset()
	}
	var want bytes.Buffer
	if err := prog.Tables.Entries(&want, rec.state); err != nil {
		t.Fatal(err)
	}
	var wantLines []string
	for _, l := range strings.Split(strings.TrimSpace(want.String()), "\n") {
		wantLines = append(wantLines, strings.TrimPrefix(l, "table_add "))
	}
	slices.Sort(wantLines)
	if got := bm.lines(); !slices.Equal(got, wantLines) {
		t.Errorf("replayed: %d entries, want %d", len(got), len(wantLines))
		for i := range min(len(got), len(wantLines)) {
			if got[i] != wantLines[i] {
				t.Errorf("first difference: %q, want %q", got[i], wantLines[i])
				break
			}
		}
	}
	var lb int64
	fmt.Sscan(res.LbId, &lb)
	if es := c.store.Epochs(lb); es[len(es)-1].Number < 6 || bm.modified == 0 || bm.deleted == 0 {
		t.Errorf("epoch %d, %d modified, %d deleted: want epoch ids reused, modifies and deletes",
			es[len(es)-1].Number, bm.modified, bm.deleted)
	}
}
