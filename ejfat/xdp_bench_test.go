package ejfat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
)

// xdpRestoreC is the harness of the XDP benchmark. The kernel's repeat run
// (BPF_PROG_TEST_RUN with repeat) runs a program again and again on the
// same buffer without resetting it, so after the first run the LB would
// see the frame it forwarded. This program puts the frame back first (its
// head, then its bytes, from a map) and then tail-calls the LB; run with
// the LB slot empty it measures the putting back alone, which the
// benchmark subtracts.
const xdpRestoreC = `#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct frame { __u32 len; __u8 b[2048]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct frame);
} pristine SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} lb SEC(".maps");

SEC("xdp.frags") /* a program may tail-call only one loaded as it is */
int restore(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct frame *f = bpf_map_lookup_elem(&pristine, &zero);
	if (!f)
		return XDP_ABORTED;
	/* The LB moves only the head: the whole length's change is the head's. */
	int delta = (int)bpf_xdp_get_buff_len(ctx) - (int)f->len;
	if (delta != 0 && bpf_xdp_adjust_head(ctx, delta))
		return XDP_ABORTED;
	/* The LB rewrites and moves only the headers, the first 58 bytes of
	 * the benchmark's frame: its first 64 are put back, with 8-byte stores
	 * (a helper's memcpy would leave stores pending that the LB's loads
	 * would wait for, which no frame from a NIC makes them do). */
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	if (data + 64 > data_end)
		return XDP_ABORTED;
	__u64 *to = data;
	const __u64 *from = (const __u64 *)f->b;
#pragma unroll
	for (int i = 0; i < 8; i++)
		to[i] = from[i];
	bpf_tail_call(ctx, &lb, 0);
	return XDP_TX;
}
`

// benchXDP is BenchmarkLB's XDP part: the XDP program nsc generates for
// lb-2025, in the kernel (a frame longer than a page in a head and
// fragments, as a driver hands a jumbo frame to a program loaded for them) (cilium/ebpf's Program.Benchmark: the kernel's
// repeat run), must produce want from frame; ns/op is per packet: the
// restoring harness's time with the LB minus its time without (see
// xdpRestoreC), the best of five kernel runs of a million repetitions.
func benchXDP(b *testing.B, script, frame, want []byte) {
	r, _ := xdpPairScript(b, "lb-2025", script)
	res, err := r.Run(frame)
	if err != nil {
		b.Fatal(err)
	}
	if res.Verdict != xdprun.VerdictTX || !bytes.Equal(res.Data, want) {
		b.Fatalf("XDP %s %x, gopacket %x", xdprun.VerdictName(res.Verdict), res.Data, want)
	}
	h := xdpHarness(b, frame)
	per := func(withLB bool) time.Duration {
		if withLB {
			if err := h.Maps["lb"].Put(uint32(0), r.Program()); err != nil {
				b.Fatal(err)
			}
		} else if err := h.Maps["lb"].Delete(uint32(0)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			b.Fatal(err)
		}
		// Best of a few kernel runs of 1M repetitions each.
		best := time.Duration(1 << 62)
		for range 5 {
			v, d, err := h.Programs["restore"].Benchmark(frame, 1_000_000, nil)
			if err != nil {
				b.Fatal(err)
			}
			if withLB && v != xdprun.VerdictTX {
				b.Fatalf("the LB said %s", xdprun.VerdictName(v))
			}
			best = min(best, d)
		}
		return best
	}
	if err := r.ResetCounters(); err != nil {
		b.Fatal(err)
	}
	restore := per(false)
	both := per(true)
	c, _, err := r.Counters()
	if err != nil {
		b.Fatal(err)
	}
	if c.Sinks["TxWire"] < 5_000_000 || len(c.Drops) > 0 {
		b.Fatalf("the LB did not forward every run: %v %v", c.Sinks, c.Drops)
	}
	for b.Loop() { // the kernel did the runs
	}
	b.ReportMetric(float64((both - restore).Nanoseconds()), "ns/op")
	b.ReportMetric(float64(restore.Nanoseconds()), "harness-ns")
	b.Logf("XDP lb-2025: %v per packet (%v with the harness, %v the harness alone); the verifier processed %d instructions", both-restore, both, restore, r.VerifiedInsns)
}

// xdpHarness loads xdpRestoreC with the frame to put back.
func xdpHarness(b *testing.B, frame []byte) *ebpf.Collection {
	dir := b.TempDir()
	src := filepath.Join(dir, "restore.c")
	if err := os.WriteFile(src, []byte(xdpRestoreC), 0o644); err != nil {
		b.Fatal(err)
	}
	obj := filepath.Join(dir, "restore.o")
	if err := xdprun.Clang(src, obj); err != nil {
		b.Fatal(err)
	}
	coll, err := ebpf.LoadCollection(obj)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(coll.Close)
	v := make([]byte, 4+2048)
	binary.NativeEndian.PutUint32(v, uint32(len(frame)))
	copy(v[4:], frame)
	if err := coll.Maps["pristine"].Put(uint32(0), v); err != nil {
		b.Fatal(err)
	}
	return coll
}
