package xdprun

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// XDP verdicts (enum xdp_action).
const (
	VerdictAborted = 0
	VerdictDrop    = 1
	VerdictPass    = 2
	VerdictTX      = 3
)

// VerdictName names an XDP verdict.
func VerdictName(v uint32) string {
	switch v {
	case VerdictAborted:
		return "XDP_ABORTED"
	case VerdictDrop:
		return "XDP_DROP"
	case VerdictPass:
		return "XDP_PASS"
	case VerdictTX:
		return "XDP_TX"
	case 4:
		return "XDP_REDIRECT"
	}
	return fmt.Sprintf("XDP verdict %d", v)
}

// Clang compiles a generated program's source into a BPF object, as
// `clang -O2 -g -target bpf -c` (with the architecture's include directory
// for <asm/types.h>, where the distribution has one).
func Clang(src, obj string) error {
	cc, err := exec.LookPath("clang")
	if err != nil {
		return fmt.Errorf("clang not found: %w", err)
	}
	args := []string{"-O2", "-g", "-target", "bpf", "-Wall", "-Wno-unused-function", "-Wno-unused-label", "-Wno-unused-variable"}
	for _, dir := range multiarchIncludes() {
		args = append(args, "-I", dir)
	}
	args = append(args, "-c", src, "-o", obj)
	out, err := exec.Command(cc, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("clang %s: %v\n%s", src, err, out)
	}
	return nil
}

// Build writes a generated program's source c as dir/name.c and compiles
// it (Clang) into dir/name.o, whose path it returns.
func Build(c []byte, dir, name string) (string, error) {
	src := filepath.Join(dir, name+".c")
	if err := os.WriteFile(src, c, 0o644); err != nil {
		return "", err
	}
	obj := filepath.Join(dir, name+".o")
	return obj, Clang(src, obj)
}

// multiarchIncludes are the directories with <asm/types.h> that a BPF
// compile needs on Debian-style systems.
func multiarchIncludes() []string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i386", "ppc64le": "powerpc64le", "s390x": "s390x", "riscv64": "riscv64"}[runtime.GOARCH]
	var out []string
	for _, d := range []string{"/usr/include/" + arch + "-linux-gnu"} {
		if _, err := os.Stat(filepath.Join(d, "asm", "types.h")); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// Runner is a compiled program loaded into the kernel: its maps filled
// from table entries, frames test-run through it (BPF_PROG_TEST_RUN), its
// counters read back as the interpreter's.
type Runner struct {
	Meta *Meta
	// VerifiedInsns is the number of instructions the verifier processed
	// for the XDP program (0 if the kernel did not say).
	VerifiedInsns int
	// Head, when positive, is how many bytes of a longer frame Run puts
	// in the linear head, the rest in fragments, as a driver with
	// receive buffers of Head bytes would (the context's data_end, which
	// BPF_PROG_TEST_RUN takes as the head's length on recent kernels;
	// 6.18 does). Otherwise the kernel puts up to 3,520 bytes there.
	Head     int
	coll     *ebpf.Collection
	prog     *ebpf.Program
	counters *ebpf.Map
	lens     *ebpf.Map
	out      []byte
}

var processed = regexp.MustCompile(`processed (\d+) insns`)

// Load loads a compiled program (an object nsc compile --target xdp made)
// into the kernel.
func Load(obj string) (*Runner, error) {
	meta, err := ReadMeta(obj)
	if err != nil {
		return nil, err
	}
	spec, err := ebpf.LoadCollectionSpec(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", obj, err)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("%s: the verifier refuses it: %+v", obj, ve)
		}
		return nil, fmt.Errorf("%s: %w", obj, err)
	}
	r, err := newRunner(obj, meta, coll)
	if err != nil {
		return nil, err
	}
	if m := processed.FindStringSubmatch(r.prog.VerifierLog); m != nil {
		r.VerifiedInsns, _ = strconv.Atoi(m[1])
	}
	return r, nil
}

// newRunner runs meta's program and maps of coll (named from), which it
// closes when one is missing.
func newRunner(from string, meta *Meta, coll *ebpf.Collection) (*Runner, error) {
	r := &Runner{Meta: meta, coll: coll, prog: coll.Programs[meta.Program], counters: coll.Maps[meta.Counters], lens: coll.Maps[meta.Lens]}
	if r.prog == nil || r.counters == nil || r.lens == nil {
		coll.Close()
		return nil, fmt.Errorf("%s: program %s or maps %s, %s missing", from, meta.Program, meta.Counters, meta.Lens)
	}
	for _, t := range meta.Tables {
		if t.Used && coll.Maps[t.Map] == nil {
			coll.Close()
			return nil, fmt.Errorf("%s: map %s of table %s missing", from, t.Map, t.Spec.Name)
		}
	}
	return r, nil
}

// Close unloads the program and its maps.
func (r *Runner) Close() { r.coll.Close() }

// Program is the loaded XDP program.
func (r *Runner) Program() *ebpf.Program { return r.prog }

// Tables makes runtime tables of the program's model filled from a
// table_add script (nil rd: empty), in the model's order: the same entries
// the interpreter and the Go fast path take.
func (r *Runner) Tables(name string, rd io.Reader) ([]*table.Table, error) {
	return table.Load(r.Meta.Schema(), name, rd)
}

// SetTables replaces the entries of every table map by those of ts (in the
// model's order, as table.Load makes them).
func (r *Runner) SetTables(ts []*table.Table) error {
	if len(ts) != len(r.Meta.Tables) {
		return fmt.Errorf("%d tables given, the program has %d", len(ts), len(r.Meta.Tables))
	}
	for i, tm := range r.Meta.Tables {
		if err := sameSpec(tm.Spec, ts[i].Spec()); err != nil {
			return fmt.Errorf("table %d: %w", i, err)
		}
		if !tm.Used {
			continue
		}
		if err := r.fill(tm, ts[i].Entries()); err != nil {
			return fmt.Errorf("table %s: %w", tm.Spec.Name, err)
		}
	}
	return nil
}

// sameSpec checks that runtime table entries fit the program's table.
func sameSpec(want, got *packet.TableSpec) error {
	if want.Name != got.Name || len(want.Keys) != len(got.Keys) || len(want.Actions) != len(got.Actions) {
		return fmt.Errorf("table %s is not the program's %s", got.Name, want.Name)
	}
	for j := range want.Keys {
		if want.Keys[j].Width != got.Keys[j].Width || want.Keys[j].Kind != got.Keys[j].Kind {
			return fmt.Errorf("table %s: key %d differs from the program's", got.Name, j)
		}
	}
	for a := range want.Actions {
		if want.Actions[a].Name != got.Actions[a].Name || !slices.Equal(want.Actions[a].Params, got.Actions[a].Params) {
			return fmt.Errorf("table %s: action %d differs from the program's", got.Name, a)
		}
	}
	return nil
}

func (r *Runner) fill(tm TableMeta, es []packet.Entry) error {
	m := r.coll.Maps[tm.Map]
	spec := tm.Spec
	l := LayoutOf(spec)
	if len(es) > TableSize(spec) {
		return fmt.Errorf("%d entries, the map holds %d", len(es), TableSize(spec))
	}
	if tm.Mode == ModeScan {
		if on := r.coll.Maps[tm.Map+"_ivl"]; on != nil {
			// The program scans while the entries change, then finds
			// them by the interval index again (fillIntervals).
			if err := on.Put(uint32(0), make([]byte, on.ValueSize())); err != nil {
				return err
			}
		}
		order := scanOrder(es)
		for i, k := range order {
			if err := m.Put(uint32(i), l.scanEntry(&es[k], spec)); err != nil {
				return err
			}
		}
		if spec.IntervalKey() >= 0 {
			if err := r.fillIntervals(tm, es, order, l); err != nil {
				return err
			}
		}
		return r.lens.Put(uint32(tm.Index), uint32(len(es)))
	}
	if tm.Mode == ModeSlots {
		slots, err := l.slotTable(es, spec)
		if err != nil {
			return err
		}
		keys := make([]uint32, len(slots))
		for i := range keys {
			keys[i] = uint32(i)
		}
		if _, err := m.BatchUpdate(keys, slots, nil); err == nil {
			return nil
		}
		for i, v := range slots {
			if err := m.Put(uint32(i), v); err != nil {
				return err
			}
		}
		return nil
	}
	// Hash and LPM maps: empty them, then put every entry.
	if err := clearMap(m); err != nil {
		return err
	}
	for i := range es {
		var k []byte
		if tm.Mode == ModeLPM {
			k = l.lpmKey(&es[i], spec)
		} else {
			k = l.hashKey(&es[i], spec)
		}
		if err := m.Put(k, l.Value(es[i].Action, es[i].Params, spec)); err != nil {
			return err
		}
	}
	return nil
}

// clearMap deletes every key of a hash or lpm map.
func clearMap(m *ebpf.Map) error {
	var keys [][]byte
	key := make([]byte, m.KeySize())
	it := m.Iterate()
	var val []byte
	for it.Next(&key, &val) {
		keys = append(keys, slices.Clone(key))
	}
	if err := it.Err(); err != nil {
		return err
	}
	for _, k := range keys {
		if err := m.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// fillIntervals fills the interval index of a scanned table of exact keys
// and one lpm or range key (file.go, intervalsC) from the entries'
// table.IntervalIndex, its entries named by their places in the scan
// order, and turns it on; a table packet does not index so, or whose
// groups lie farther than MaxProbe slots from home, stays scanned.
func (r *Runner) fillIntervals(tm TableMeta, es []packet.Entry, order []int, l Layout) error {
	g, segs, on := r.coll.Maps[tm.Map+"_g"], r.coll.Maps[tm.Map+"_s"], r.coll.Maps[tm.Map+"_ivl"]
	if g == nil || segs == nil || on == nil {
		return fmt.Errorf("the program has no interval maps for %s", tm.Map)
	}
	tb := table.New(tm.Spec)
	if err := tb.Replace(es); err != nil {
		return err
	}
	iv := tb.Probes().Intervals
	if iv == nil || len(iv.Starts) > int(segs.MaxEntries()) || len(iv.Groups) > int(g.MaxEntries()) || !probesWithin(iv, MaxProbe) {
		return nil // scanned
	}
	place := make([]int32, len(es))
	for p, i := range order {
		place[i] = int32(p)
	}
	for i, start := range iv.Starts {
		ent := int32(-1)
		if e := iv.Entries[i]; e >= 0 {
			ent = place[e]
		}
		v := binary.NativeEndian.AppendUint64(nil, start)
		v = binary.NativeEndian.AppendUint32(v, uint32(ent))
		if err := segs.Put(uint32(i), binary.NativeEndian.AppendUint32(v, 0)); err != nil {
			return err
		}
	}
	for i, gr := range iv.Groups {
		var v []byte
		for _, w := range gr.Keys[:l.KeyWords] {
			v = binary.NativeEndian.AppendUint64(v, w)
		}
		v = binary.NativeEndian.AppendUint32(binary.NativeEndian.AppendUint32(v, uint32(gr.Lo)), uint32(gr.Hi))
		if err := g.Put(uint32(i), v); err != nil {
			return err
		}
	}
	v := binary.NativeEndian.AppendUint32(nil, 1)
	v = binary.NativeEndian.AppendUint32(v, uint32(iv.Shift))
	v = binary.NativeEndian.AppendUint32(v, uint32(len(iv.Groups)-1))
	return on.Put(uint32(0), binary.NativeEndian.AppendUint32(v, 0))
}

// probesWithin reports whether every group of iv lies within d slots of
// the slot its hash picks.
func probesWithin(iv *table.IntervalIndex, d int) bool {
	n := len(iv.Groups)
	for i, gr := range iv.Groups {
		if gr.Hi == 0 {
			continue
		}
		home := int(table.WordsHash(gr.Keys[0], gr.Keys[1], gr.Keys[2], gr.Keys[3]) >> iv.Shift)
		if (i-home+n)%n >= d {
			return false
		}
	}
	return true
}

// Result is what became of a frame: the program's verdict and the frame
// as it left it.
type Result struct {
	Verdict uint32
	Data    []byte // valid until the next Run
}

// Run test-runs one frame through the program in the kernel. Frames
// shorter than an Ethernet header cannot be run (the kernel refuses them,
// as no driver hands XDP such a frame).
func (r *Runner) Run(frame []byte) (Result, error) {
	if len(frame) < 14 {
		return Result{}, fmt.Errorf("a %d-byte frame: XDP runs frames of 14 bytes and more", len(frame))
	}
	if need := len(frame) + 512; len(r.out) < need {
		r.out = make([]byte, need)
	}
	opts := ebpf.RunOptions{Data: frame, DataOut: r.out, Repeat: 1}
	if r.Head > 0 && len(frame) > r.Head {
		opts.Context = xdpMD{DataEnd: uint32(r.Head)}
	}
	v, err := r.prog.Run(&opts)
	if err != nil {
		return Result{}, err
	}
	return Result{Verdict: v, Data: opts.DataOut}, nil
}

// xdpMD is the kernel's struct xdp_md, a test run's context.
type xdpMD struct{ Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32 }

// Counters reads the counters back (summed over CPUs) in the
// interpreter's form; oversize counts the frames too long to run.
func (r *Runner) Counters() (c sim.Counters, oversize uint64, err error) {
	c = sim.Counters{Nodes: map[string]uint64{}, Sinks: map[string]uint64{}, Drops: map[sim.DropKey]uint64{}, Counts: map[string]uint64{}}
	var per [][]byte
	if err := r.counters.Lookup(uint32(0), &per); err != nil {
		return c, 0, err
	}
	m := r.Meta
	sum := make([]uint64, m.NumCounters)
	for _, b := range per {
		for i := range sum {
			if 8*i+8 <= len(b) {
				sum[i] += binary.NativeEndian.Uint64(b[8*i:])
			}
		}
	}
	runs := m.Runs(sum)
	for i, n := range m.Nodes {
		if v := runs[i]; v > 0 {
			c.Nodes[n] += v
		}
	}
	for i, s := range m.Sinks {
		if v := sum[m.SinkBase()+i]; v > 0 {
			c.Sinks[s.Node] += v
		}
	}
	for i, d := range m.Drops {
		if v := sum[m.DropBase()+i]; v > 0 {
			c.Drops[sim.DropKey{Node: d.Node, Reason: d.Reason}] += v
		}
	}
	for i, l := range m.Counts {
		var v uint64
		for _, n := range m.CountNodes[i] {
			if n >= 0 && n < len(runs) {
				v += runs[n]
			}
		}
		if v > 0 {
			c.Counts[l] += v
		}
	}
	return c, sum[m.Oversize()], nil
}

// ResetCounters sets every counter to zero.
func (r *Runner) ResetCounters() error {
	var per [][]byte
	if err := r.counters.Lookup(uint32(0), &per); err != nil {
		return err
	}
	for i := range per {
		clear(per[i])
	}
	return r.counters.Put(uint32(0), per)
}

// Attach attaches the program to a network interface (XDP driver mode
// if the driver has it, else generic); close the link to detach.
func (r *Runner) Attach(ifname string, flags link.XDPAttachFlags) (link.Link, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	return link.AttachXDP(link.XDPOptions{Program: r.prog, Interface: ifc.Index, Flags: flags})
}
