package rdma_test

import (
	"bytes"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/rdma"
	"github.com/dragonet-go/nsc/rdma/irnxdphost"
	"github.com/dragonet-go/nsc/rdma/naaxdphost"
	"github.com/dragonet-go/nsc/sim"
)

// splitEnd is where a frame ends in the split: dropped by the device's
// program (XDP_DROP, its reason in the counters), or at the host, where
// the responder's own outcome says (a sink and the bytes, or a drop).
type splitEnd struct{ Device, Host, Data string }

// TestXDPSplit: each responder split between RDMAXDP's program and the
// host (models/rdma/xdp.nsc). The device's part runs as XDP in the kernel
// (BPF_PROG_TEST_RUN; without root, clang or libbpf's headers, the
// interpreter on that part) and drops what fails the header and ICRC
// checks; every frame it passes, unchanged, goes to the generated host
// part (rdma/naaxdphost, rdma/irnxdphost), which runs the whole responder
// on it. On the crafted traffic (the scenarios in testdata's order, state
// carried across) and WRITEs up to the MTU (the ICRC read from XDP
// fragments), the same with each ICRC broken, and 20,000 frames derived
// from them (half with the ICRC made right again): frame by frame where
// it ends and its bytes are the interpreter's on the responder embedded
// in RDMAXDP, and so are the drops counted by reason and the runs of
// every host node.
func TestXDPSplit(t *testing.T) {
	for _, c := range []struct {
		file, lpg string
		sc        func() map[string][]step
		host      func([]*table.Table) (fastpath.Pipeline, error)
		s         *packet.Schema
	}{
		{"rdma/naa.nsc", "NAAResponder", scenarios, func(ts []*table.Table) (fastpath.Pipeline, error) { return naaxdphost.New(ts) }, naaxdphost.Schema},
		{"rdma/irn.nsc", "IRNResponder", irnScenarios, func(ts []*table.Table) (fastpath.Pipeline, error) { return irnxdphost.New(ts) }, irnxdphost.Schema},
	} {
		t.Run(c.lpg, func(t *testing.T) {
			m := testutil.Model(t, c.file, "rdma/xdp.nsc")
			l, _ := m.Graph(c.lpg)
			p, _ := m.Graph("RDMAXDP")
			em, err := embed.Embed(l, p)
			if err != nil {
				t.Fatal(err)
			}
			if em.Device == nil || em.Device.Node("RxICRC") == nil || em.Device.Node("RxLoad") != nil {
				t.Fatal("want the ICRC check in the program and the QP register on the host")
			}
			want, err := sim.New(em.Graph, splitTables(t, m.Schema))
			if err != nil {
				t.Fatal(err)
			}
			want.SetMaxFrame(xdp.MaxFrame)
			host, err := c.host(splitTables(t, c.s))
			if err != nil {
				t.Fatal(err)
			}
			device, deviceCounters := splitDevice(t, em, p.Limits)

			var seeds [][]byte
			sc := c.sc()
			for _, name := range slices.Sorted(maps.Keys(sc)) {
				for _, s := range sc[name] {
					seeds = append(seeds, s.frame)
				}
			}
			// WRITE Only frames up to the MTU, IPv4 and IPv6, past the
			// XDP head (BPF_PROG_TEST_RUN's 3,520 bytes): the ICRC read
			// from fragments, in every piece size.
			for _, n := range []int{4096, 4093, 3999, 2051} {
				w := withRETH(write(qpn, rdma.WriteOnly, ipsn, fill(n, byte(n))), regionBase, rkey, uint32(n))
				seeds = append(seeds, frame(w), rdma.AppendFrame(nil, host6, naa6, w))
			}
			frames := difftest.ICRCTraffic(seeds, 20000, 26, func(f []byte) bool { return len(f) >= 14 && len(f) <= xdp.MaxFrame })

			var buf []byte
			hosted := 0
			where := difftest.Frames(t, "device+host", frames,
				func(f []byte) (splitEnd, string) {
					o := difftest.Interp(want, bytes.Clone(f))
					if d, ok := strings.CutPrefix(o.Where, "drop "); ok && em.Device.Node(d[:strings.Index(d, ":")]) != nil {
						return splitEnd{Device: "XDP_DROP"}, o.Where
					}
					return splitEnd{Device: "XDP_PASS", Host: o.Where, Data: o.Data}, o.Where
				},
				func(f []byte) splitEnd {
					v, data := device(f)
					if v != "XDP_PASS" {
						return splitEnd{Device: v}
					}
					if !bytes.Equal(data, f) {
						t.Errorf("the device passed frame %x changed: %x", f, data)
					}
					hosted++
					o := difftest.Fast(host, f, &buf)
					return splitEnd{Device: v, Host: o.Where, Data: o.Data}
				})

			dc, hc, wc := deviceCounters(), golang.Counters(host), want.Counters()
			drops := map[sim.DropKey]uint64{}
			for _, c := range []sim.Counters{dc, hc} {
				for k, v := range c.Drops {
					drops[k] += v
				}
			}
			if diff := cmp.Diff(wc.Drops, drops); diff != "" {
				t.Errorf("drops differ (-interp +device and host):\n%s", diff)
			}
			if diff := cmp.Diff(wc.Sinks, hc.Sinks); diff != "" {
				t.Errorf("the host's sinks differ (-interp +host):\n%s", diff)
			}
			for _, n := range em.Graph.Nodes {
				if em.Device.Node(n.Name) == nil && wc.Nodes[n.Name] != hc.Nodes[n.Name] {
					t.Errorf("host node %s: %d runs in the interpreter, %d on the host", n.Name, wc.Nodes[n.Name], hc.Nodes[n.Name])
				}
			}
			bad := sim.DropKey{Node: "RxBadICRC", Reason: "bad ICRC"}
			if dc.Drops[bad] < uint64(len(seeds)) || where["sink RxMemory"] == 0 || where["sink RxReply"] == 0 {
				t.Errorf("the traffic exercises too little: %d bad ICRCs dropped by the device, %v", dc.Drops[bad], where)
			}
			t.Logf("%d crafted, %d broken, %d derived frames; %d passed to the host: %v", len(seeds), len(seeds), len(frames)-2*len(seeds), hosted, where)
		})
	}
}

// splitTables are the tests' QP and region tables for schema s.
func splitTables(t *testing.T, s *packet.Schema) []*table.Table {
	t.Helper()
	ts, err := table.Load(s, "tables", strings.NewReader(tablesText))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// splitDevice runs em's device part: in the kernel where it can, else in
// the interpreter. It returns the verdict and the bytes of a frame, and
// the device's counters.
func splitDevice(t *testing.T, em *embed.Embedding, limits map[string]int) (func([]byte) (string, []byte), func() sim.Counters) {
	can := false
	if t.Run("kernel", func(t *testing.T) { xdptest.Require(t); can = true }) && can {
		obj, prog := xdptest.Build(t, em.Device, limits, t.TempDir(), "rdmasplit")
		if !bytes.Contains(prog.C, []byte("nsc_icrc_bad(")) {
			t.Fatal("the program does not check the ICRC")
		}
		r, err := xdprun.Load(obj)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		t.Logf("the device's part in the kernel: the verifier processed %d instructions", r.VerifiedInsns)
		return func(f []byte) (string, []byte) {
				res, err := r.Run(f)
				if err != nil {
					t.Fatalf("frame %x: %v", f, err)
				}
				return xdprun.VerdictName(res.Verdict), res.Data
			}, func() sim.Counters {
				c, _, err := r.Counters()
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
	}
	dm, err := sim.New(em.Device, nil)
	if err != nil {
		t.Fatal(err)
	}
	return func(f []byte) (string, []byte) {
		o := dm.Outcome(f)
		if o.Where != "sink "+embed.PuntNode {
			return "XDP_DROP", nil
		}
		d, _ := hex.DecodeString(o.Data)
		return "XDP_PASS", d
	}, dm.Counters
}
